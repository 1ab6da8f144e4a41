"""The corpus of bench_dedupe.py: documents of real text with near-duplicates
injected as re-crawls and reposts make them, the copies known (a library, not
a benchmark: scripts/bench.sh runs bench_*.py).

The text is fingerprint_corpus.py's (Debian's translated manuals, help and
catalogs: real text in many languages that nobody here wrote), cut at line
ends into documents of PIECE_CHARS characters (seeded), the way a web corpus
is mostly pages of a few hundred to a few thousand characters; pieces that
repeat (the same text once lower-cased and its spaces collapsed) are kept
once.  A size past what the text gives adds rounds of documents made of the
first half of one piece and the second half of another.  Then COPY_SHARE of the documents are copies of an earlier one, each
made by one of fingerprint_quality.py's copies (a timestamp line added and a
number changed, a span of 1 % replaced, typography, the first lines
upper-cased, accents dropped) or a repost's frame (a by-line above and a
share line below), placed at a random later position.

The ground truth is the groups (an original and its copies): dedupe should
remove all but one of each group, and nothing else.

For a size run past what the text gives (bench_dedupe.py --size, 10M
documents), ``repeated`` writes a corpus of ROUND_DOCUMENTS documents
repeated with varied copies: round r > 0 is every document of the first
put through a cipher of its own (each script's letters permuted, the same
permutation for a letter's upper and lower case), so every round's
documents are new ones (their fingerprints unrelated to the first round's)
while each round keeps the first's near-duplicates, the same groups.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import fingerprint_corpus
import fingerprint_quality

CORPUS_DIR = fingerprint_corpus.CORPUS_DIR
PIECE_CHARS = (200, 1_600)
COPY_SHARE = 0.3
COPY_KINDS = ("line", "span", "typography", "case", "marks", "repost")
_SPACES = re.compile(r"\s+")
ROUND_DOCUMENTS = 200_000
LETTERS = [  # (lower case, upper case or None) ranges of letters each round's cipher permutes
    ("a", "A", 26), ("\u0430", "\u0410", 32), ("\u03b1", "\u0391", 17), ("\u0621", None, 26),
    ("\u0e01", None, 46), ("\u3041", None, 86), ("\u30a1", None, 90), ("\u4e00", None, 20902),
    ("\uac00", None, 11172),
]


def repost(text: str, rng: random.Random) -> str:
    """A repost's frame: a by-line above the text and a share line below."""
    author = rng.choice(["admin", "news-desk", "j.smith", "forum-bot", "editor"])
    return f"Posted by {author} on {rng.randint(1, 28)}/{rng.randint(1, 12)}/2025\n{text}\nShare this post"


def pieces(seed: int = 1) -> list[str]:
    """The corpus's text cut into documents, each distinct (lower-cased, spaces collapsed)."""
    rng = random.Random(seed)
    seen, out = set(), []
    for doc in fingerprint_corpus.load():
        lines = doc.text.split("\n")
        piece: list[str] = []
        size, target = 0, rng.randint(*PIECE_CHARS)
        for line in lines + [None]:
            if line is not None:
                piece.append(line)
                size += len(line) + 1
            if piece and (size >= target or line is None):
                text = "\n".join(piece).strip()
                key = _SPACES.sub(" ", text.lower())
                if len(text) >= PIECE_CHARS[0] and key not in seen:
                    seen.add(key)
                    out.append(text)
                piece, size, target = [], 0, rng.randint(*PIECE_CHARS)
    return out


def copy_of(text: str, kind: str, seed: str) -> str:
    if kind == "repost":
        return repost(text, random.Random(f"repost:{seed}"))
    return fingerprint_quality.make_copy(kind, text, seed)


@dataclass
class Corpus:
    """The documents (id, text) in input order, and each document's group
    (the position of its original; an original's is its own)."""

    path: Path
    groups: list[int]

    def records(self):
        with gzip.open(self.path, "rt", encoding="utf-8") as stream:
            for line in stream:
                yield json.loads(line)


def build(documents: int, seed: int = 1) -> Corpus:
    """A corpus of about ``documents`` documents (cached under build/), written
    as gzipped JSON Lines {"id", "text"}."""
    path = CORPUS_DIR / f"dedupe-{fingerprint_corpus.CORPUS_VERSION}-{documents}-{seed}.jsonl.gz"
    truth = path.with_suffix(".groups.json")
    if path.exists() and truth.exists():
        return Corpus(path, json.loads(truth.read_text()))
    texts = pieces(seed)
    rng = random.Random(seed)
    originals_wanted = round(documents * (1 - COPY_SHARE))
    # (text, group key): originals first, then copies of them at random later places
    entries: list[tuple[str, int]] = []
    round_number = 0
    while len(entries) < originals_wanted:
        for i, text in enumerate(texts):
            if len(entries) >= originals_wanted:
                break
            if round_number:  # a later round: halves of two pieces, a document of its own
                other = texts[(i * 7919 + round_number) % len(texts)]
                text = text[: len(text) // 2] + "\n" + other[len(other) // 2:]
            entries.append((text, len(entries)))
        round_number += 1
    order = list(range(len(entries)))
    copies = documents - len(entries)
    placed: list[tuple[float, str, int]] = [(position, text, group)
                                            for position, (text, group) in zip(range(len(entries)), entries)]
    for n in range(copies):
        group = rng.choice(order)
        kind = rng.choice(COPY_KINDS)
        text = copy_of(entries[group][0], kind, f"{n}:{group}")
        placed.append((rng.uniform(group + 0.5, len(entries)), text, group))
    placed.sort(key=lambda p: p[0])
    first_of: dict[int, int] = {}
    groups = []
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".part")
    with gzip.open(temporary, "wt", encoding="utf-8") as out:
        for position, (_, text, group) in enumerate(placed):
            first_of.setdefault(group, position)
            groups.append(first_of[group])
            out.write(json.dumps({"id": position, "text": text}, ensure_ascii=False) + "\n")
    temporary.rename(path)
    truth.write_text(json.dumps(groups))
    return Corpus(path, groups)


def cipher(round_number: int) -> dict[int, str]:
    """str.translate's table of a round: each range of LETTERS permuted
    (seeded by the round), a letter's upper case as its lower case."""
    table: dict[int, str] = {}
    for lower, upper, size in LETTERS:
        moved = list(range(size))
        random.Random(f"{round_number}:{lower}").shuffle(moved)
        for first in filter(None, (lower, upper)):
            table.update({ord(first) + i: chr(ord(first) + j) for i, j in enumerate(moved)})
    return table


@dataclass
class Repeated:
    """``repeated``'s corpus: plain JSON Lines {"id", "text"} and its groups
    (numpy, int64: each document's original's position)."""

    path: Path
    groups: np.ndarray


def repeated(documents: int, seed: int = 1) -> Repeated:
    """A corpus of ``documents`` documents (cached under build/, plain JSON
    Lines: the size run reads no compression): build(ROUND_DOCUMENTS)
    repeated, each round after the first through its cipher (module doc)."""
    path = CORPUS_DIR / f"dedupe-{fingerprint_corpus.CORPUS_VERSION}-{documents}-{seed}-repeated.jsonl"
    truth = path.with_suffix(".groups.npy")
    if path.exists() and truth.exists():
        return Repeated(path, np.load(truth))
    base = build(ROUND_DOCUMENTS, seed)
    texts = [record["text"] for record in base.records()]
    base_groups = np.array(base.groups, np.int64)
    groups = np.concatenate([base_groups + r * len(texts) for r in range(-(-documents // len(texts)))])[:documents]
    temporary = path.with_suffix(".part")
    with open(temporary, "w", encoding="utf-8") as out:
        for position, text in zip(range(documents), _rounds(texts)):
            out.write(json.dumps({"id": position, "text": text}, ensure_ascii=False) + "\n")
    temporary.rename(path)
    np.save(truth, groups)
    return Repeated(path, groups)


def _rounds(texts: list[str]) -> Iterator[str]:
    yield from texts
    round_number = 1
    while True:
        table = cipher(round_number)
        for text in texts:
            yield text.translate(table)
        round_number += 1


def scores(groups: list[int], removed: set[int]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the removed documents: of each group of
    n documents, n - 1 should go (which ones does not matter); a removal
    past that, or of a document in no group, is a false one."""
    size: dict[int, int] = {}
    gone: dict[int, int] = {}
    for position, group in enumerate(groups):
        size[group] = size.get(group, 0) + 1
        if position in removed:
            gone[group] = gone.get(group, 0) + 1
    true = sum(min(n, size[g] - 1) for g, n in gone.items())
    should = sum(n - 1 for n in size.values())
    precision = true / len(removed) if removed else 1.0
    recall = true / should if should else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1
