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
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import fingerprint_corpus
import fingerprint_quality

CORPUS_DIR = fingerprint_corpus.CORPUS_DIR
PIECE_CHARS = (200, 1_600)
COPY_SHARE = 0.3
COPY_KINDS = ("line", "span", "typography", "case", "marks", "repost")
_SPACES = re.compile(r"\s+")


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
