"""The README's SQL and Python tours run as written (doc examples must not rot)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import psycopg

from pysimhash_sql import hashing

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def tour_block(heading: str, language: str) -> str:
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert section, f"README.md has no section {heading!r}"
    block = re.search(rf"^```{language}\n(.*?)^```", section.group(1), re.S | re.M)
    assert block, f"README section {heading!r} has no {language} block"
    return block.group(1)


def test_sql_tour_runs(db: psycopg.Connection) -> None:
    db.execute("DROP EXTENSION simhash")  # the tour creates it
    db.execute(tour_block("SQL tour", "sql"))  # several statements, no parameters
    found = db.execute(
        "SELECT id1, id2, distance FROM simhash_find_all('SELECT id, fingerprint FROM pages', 3)"
        " ORDER BY 1, 2"
    ).fetchall()
    brute_force = db.execute(
        "SELECT a.id, b.id, a.fingerprint <~> b.fingerprint FROM pages a JOIN pages b"
        " ON a.id < b.id AND hamming_within(a.fingerprint, b.fingerprint, 3) ORDER BY 1, 2"
    ).fetchall()
    assert found == brute_force
    assert len(found) >= 50 * 6  # 50 bodies, 4 identical rows each
    assert db.execute("SELECT pg_typeof(fingerprint)::text FROM pages LIMIT 1").fetchone()[0] == "simhash64"


def test_python_tour_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-c", tour_block("Python tour", "python")],
        capture_output=True, text=True, check=True,
    )
    fp = hashing.simhash("The quick brown fox jumps over the lazy dog")
    near = hashing.simhash("The quick brown fox jumped over the lazy dog")
    lines = result.stdout.splitlines()
    assert lines[0] == str(hashing.hamming_distance(fp, near))
    pairs = ast.literal_eval(lines[2])
    assert tuple(sorted((fp, fp ^ 0b101))) in pairs  # 2 bits apart
    assert all(hashing.hamming_distance(a, b) <= 3 for a, b in pairs)
