"""The shared test vectors of the text fingerprint versions 2 and 3: inputs
with their expected tokens and fingerprints, one JSON object a line in
pg_ext/test/data/text_v2_vectors.jsonl and text_v3_vectors.jsonl.  pg_regress
(pg_ext/test/sql/fingerprint_v2_vectors.sql) and pytest (tests/package/
test_text_v2.py, test_text_v3.py, tests/extension/fingerprint/
test_hashing_sql.py) check the implementations against the same files
(version 3: the Python package's until the extension has it).

To add a vector, add a line with its "name" and "text" and run
``.venv/bin/python -m toolbox.text_vectors`` from tests/: it fills in the
expected values from the Python implementation; review the diff (and check
that SQL agrees: the tests do).  An expected value that changes is a new spec
version, never an edit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VECTOR_FILES = {version: ROOT / f"pg_ext/test/data/text_v{version}_vectors.jsonl" for version in (2, 3)}


def load_vectors(version: int = 2) -> list[dict]:
    return [json.loads(line) for line in VECTOR_FILES[version].read_text(encoding="utf-8").split("\n") if line]


def _escaped(char: str) -> str:
    """A character of a JSON line: as it is where it is visible, else as
    \\u escapes (a surrogate pair beyond the BMP)."""
    return char if char.isprintable() else json.dumps(char)[1:-1]


def _line(vector: dict) -> str:
    return "".join(map(_escaped, json.dumps(vector, ensure_ascii=False)))


def fill_expected() -> None:
    sys.path.insert(0, str(ROOT))
    from pysimhash_sql import hashing

    for version, (tokenize, fingerprint) in {2: (hashing.tokenize_v2, hashing.simhash_v2),
                                             3: (hashing.tokenize_v3, hashing.simhash_v3)}.items():
        lines = []
        for vector in load_vectors(version):
            text = vector["text"]
            vector = {
                "name": vector["name"],
                "text": text,
                "tokens": tokenize(text),
                f"simhash_v{version}": f"0x{fingerprint(text):016X}",
            }
            lines.append(_line(vector))
        VECTOR_FILES[version].write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    fill_expected()
