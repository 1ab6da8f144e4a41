"""The README's SQL and Python tours run as written (doc examples must not rot)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import psycopg
from toolbox.readme import readme_blocks

from pysimhash_sql import hashing


def test_sql_tour_runs(db: psycopg.Connection) -> None:
    db.execute("DROP EXTENSION simhash")  # the tour creates it
    db.execute(readme_blocks("SQL tour", "sql")[0])  # several statements, no parameters
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
    # the tour's claims about version 3, the default
    tour = readme_blocks("SQL tour", "sql")[0]
    claim = next(line for line in tour.splitlines() if line.startswith("SELECT simhash_v3(") and "-- true" in line)
    assert db.execute(claim.split(";")[0]).fetchone()[0] is True
    far = next(line for line in tour.splitlines() if line.startswith("SELECT simhash_v3(") and "-- far" in line)
    assert db.execute(far.split(";")[0]).fetchone()[0] > 3
    assert db.execute(far.split(";")[0].replace("simhash_v3", "simhash_v2")).fetchone()[0] == 0

    q = "simhash('page 7 of the quick brown fox')"
    db.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in db.execute(f"EXPLAIN SELECT id FROM pages WHERE hamming_within(fingerprint, {q}, 3)"))
    via_index = db.execute(f"SELECT id FROM pages WHERE hamming_within(fingerprint, {q}, 3) ORDER BY id").fetchall()
    db.execute("RESET enable_seqscan")
    assert "Bitmap Index Scan on pages_fingerprint_" in plan, plan  # the GIN or the simhash_mih index
    assert via_index == db.execute(
        f"SELECT id FROM pages WHERE bit_count((fingerprint::bigint # {q}::bigint)::bit(64)) <= 3 ORDER BY id"
    ).fetchall()
    nearest = db.execute(
        f"SELECT fingerprint <~> {q} FROM hamming_nearest(NULL::pages, 'fingerprint', {q}, 5)"
    ).fetchall()
    assert sorted(nearest) == db.execute(
        f"SELECT fingerprint <~> {q} AS d FROM pages ORDER BY d LIMIT 5"
    ).fetchall()
    assert db.execute("SELECT pg_typeof(fingerprint)::text FROM pages LIMIT 1").fetchone()[0] == "simhash64"


def test_python_tour_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-c", readme_blocks("Python tour", "python")[0]],
        capture_output=True, text=True, check=True,
    )
    fp = hashing.simhash("The quick brown fox jumps over the lazy dog")
    near = hashing.simhash("The quick brown fox jumped over the lazy dog")
    lines = result.stdout.splitlines()
    assert lines[0] == str(hashing.hamming_distance(fp, near))
    assert lines[1] == "True"  # version 3, the default, ignores punctuation
    assert lines[2] == "True"  # version 3 counts the numbers of a page made of them
    assert int(lines[3]) == hashing.compute([hashing.unsigned_hash(word.encode()) for word in "abcd"])
    pairs = ast.literal_eval(lines[4])
    assert tuple(sorted((fp, fp ^ 0b101))) in pairs  # 2 bits apart
    assert all(hashing.hamming_distance(a, b) <= 3 for a, b in pairs)


def test_python_drivers_example_runs(db: psycopg.Connection) -> None:
    fp = 13893055204574190055
    db.execute("CREATE TABLE documents (id bigint PRIMARY KEY, fingerprint simhash64)")
    db.execute("INSERT INTO documents VALUES (1, %s), (2, %s), (3, %s), (4, 5)",
               [str(fp), str(fp ^ 0b111), str(fp ^ 0b1111)])
    info = db.info
    uri = f"postgresql://{info.user}@{info.host}:{info.port}/{info.dbname}"
    result = subprocess.run(
        [sys.executable, "-c", readme_blocks("Python drivers", "python", "docs/python.md")[0]],
        capture_output=True, text=True, env={**os.environ, "SIMHASH_DSN": uri},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"2 {max(fp, fp ^ 0b111, fp ^ 0b1111)}", "2", "2", "uint64"]


def test_python_fingerprints_example_runs() -> None:
    block = readme_blocks("Fingerprints in Python: the compiled core", "python", "docs/python.md")[0]
    result = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [hashing.IMPLEMENTATION, "True"]
