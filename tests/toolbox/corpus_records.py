"""A small corpus of records with near-duplicates, for the dedupe tests (the
command's and the Python function's): random-word documents, some copied
exactly, some copied with a word changed, some with a field to keep by; and
what dedupe should keep of them, found by brute force over the fingerprints."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pysimhash_sql import hashing
from toolbox import brute_force_clusters

WORDS = 400
DOCUMENT_WORDS = 120


def corpus(seed: int = 7, originals: int = 60) -> list[dict]:
    """Records {id, text, date, score}: originals, each fifth copied exactly
    (a later date), each seventh copied with one word changed (a longer text),
    the copies following later in the input."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 9))) for _ in range(WORDS)]
    records, copies = [], []
    for i in range(originals):
        words = [rng.choice(vocabulary) for _ in range(DOCUMENT_WORDS)]
        records.append({"id": f"doc{i}", "text": " ".join(words), "date": f"2024-03-{i % 28 + 1:02d}", "score": i % 5})
        if i % 5 == 0:
            copies.append({"id": f"doc{i}-recrawl", "text": " ".join(words), "date": "2025-01-01", "score": 1})
        if i % 7 == 0:
            changed = list(words)
            changed[rng.randrange(len(changed))] = "repostedword"
            copies.append({"id": f"doc{i}-repost", "text": " ".join(changed) + " shared", "score": 4})
    return records + copies


def write_jsonl(path: Path, records: list[dict], extra_lines: dict[int, str] | None = None) -> list[bytes]:
    """The records as JSON Lines (extra_lines: raw lines inserted before these
    record positions); returns each record's line as written."""
    lines, written = [], []
    for i, record in enumerate(records):
        if extra_lines and i in extra_lines:
            lines.append(extra_lines[i].encode() + b"\n")
        line = json.dumps(record, ensure_ascii=False).encode() + b"\n"
        lines.append(line)
        written.append(line)
    path.write_bytes(b"".join(lines))
    return written


def expected_clusters(records: list[dict], distance: int) -> dict[int, int]:
    """Position -> the smallest position of its cluster, for the records in a
    cluster (brute force over their fingerprints of the default text spec
    version, which dedupe computes)."""
    fps = {i: hashing.fingerprint(r["text"], version=hashing.TEXT_SPEC_VERSION_LATEST) for i, r in enumerate(records)}
    return brute_force_clusters(fps, distance)


def expected_kept(records: list[dict], distance: int, keep: str = "first") -> list[int]:
    """The positions dedupe keeps: every record in no cluster, and of each
    cluster the best by keep (first / longest / a field, missing lowest),
    ties to the first."""
    label = expected_clusters(records, distance)
    members: dict[int, list[int]] = {}
    for i, root in label.items():
        members.setdefault(root, []).append(i)

    def rank(i: int):
        if keep == "first":
            return 0
        if keep == "longest":
            return len(records[i]["text"])
        value = records[i].get(keep)
        return (0, 0) if value is None else (1 if not isinstance(value, str) else 2, value)

    best = {root: max(sorted(group), key=lambda i: (rank(i), -i)) for root, group in members.items()}
    return [i for i in range(len(records)) if i not in label or best[label[i]] == i]
