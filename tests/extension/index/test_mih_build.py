"""simhash_mih's CREATE INDEX (pg_ext/src/index/mih/mih_build.c, mih_sort.c):
with 0 to 4 parallel workers, within
maintenance_work_mem (spilling sorted chunks to temporary files past it,
merged in several passes when there are many), CONCURRENTLY while rows are
written, cancelled midway: exact at every radius against brute force, the
checker passing, and the DEBUG1 report showing the workers and the spilling
really happened.
"""

from __future__ import annotations

import random
import threading

import psycopg
import pytest

from toolbox import copy_rows, error_of, flip_random
from toolbox.data import planted_fingerprints
from toolbox.mih_builds import assert_exact, assert_exact_on_large, build
from toolbox.workers import run_together

CREATE = "CREATE INDEX docs_fp ON docs USING simhash_mih (fp){options}"


def load(db: psycopg.Connection, fps: list[int | None]) -> dict[int, int | None]:
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
    rows = dict(enumerate(fps))
    copy_rows(db, "COPY docs FROM STDIN", rows.items())
    db.execute("ANALYZE docs")
    return rows


def centres_of(rng: random.Random, rows: dict[int, int | None], n: int) -> list[int]:
    stored = [fp for fp in rows.values() if fp is not None]
    return [flip_random(rng.choice(stored), rng.randint(0, 4), rng) for _ in range(n)] + [0, rng.getrandbits(64)]


@pytest.mark.parametrize(("workers", "runs"), [(0, 3), (1, 3), (2, 3), (4, 3), (2, 1)])
def test_parallel_builds_are_exact_at_every_radius(db: psycopg.Connection, workers: int, runs: int) -> None:
    rng = random.Random(workers * 10 + runs)
    rows = load(db, planted_fingerprints(rng, 20_000))
    report = build(db, CREATE.format(options=f" WITH (runs = {runs})"), workers)
    assert report.processes == workers + 1  # every worker asked for was started and took part
    assert report.rows == sum(fp is not None for fp in rows.values())
    assert_exact(db, rows, centres_of(rng, rows, 12))
    db.execute("SELECT simhash_mih_check('docs_fp')")


@pytest.mark.parametrize("workers", [0, 2])
def test_reindex_and_reindex_concurrently_in_parallel(db: psycopg.Connection, workers: int) -> None:
    rng = random.Random(workers)
    rows = load(db, planted_fingerprints(rng, 10_000))
    build(db, CREATE.format(options=""), 0)
    db.execute("DELETE FROM docs WHERE id % 3 = 0")
    rows = {i: fp for i, fp in rows.items() if i % 3}
    for statement in ("REINDEX INDEX docs_fp", "REINDEX INDEX CONCURRENTLY docs_fp"):
        report = build(db, statement, workers)
        assert report.processes == workers + 1
        assert report.rows == sum(fp is not None for fp in rows.values())
        assert_exact(db, rows, centres_of(rng, rows, 8))
        db.execute("SELECT simhash_mih_check('docs_fp')")


def test_spilled_chunks_merged_in_several_passes(db: psycopg.Connection) -> None:
    """maintenance_work_mem at its least (1 MB: chunks of about 30,000 rows,
    about 7 files read at once): 300,000 rows spill ten chunks per run, merged
    in more than one pass; with equal fingerprints across chunks."""
    rng = random.Random(3)
    fps = planted_fingerprints(rng, 280_000) + [12345] * 20_000
    rows = load(db, fps)
    report = build(db, CREATE.format(options=""), 0, maintenance_work_mem="1MB")
    assert report.chunks >= 8 and report.passes >= 1, report
    assert report.leader_mb <= 1.0, report  # within maintenance_work_mem
    assert_exact_on_large(db, centres_of(rng, rows, 6) + [12345])
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_parallel_build_spilling_past_maintenance_work_mem(db: psycopg.Connection) -> None:
    """3M rows with one worker and the least memory PostgreSQL gives it
    (64 MB: 32 MB, about a million rows, a participant): both participants
    spill, the leader merges its chunks and the worker's.  Exact against
    brute force (numpy) for radii 0..10 at 20 centres and in count at larger
    radii; every heap row in every run (the checker)."""
    n = 3_000_000
    # no primary key: the ids come from generate_series, and its 3M insertions were a third of the test's time
    db.execute("CREATE TABLE docs (id int, fp simhash64) WITH (autovacuum_enabled = off)")
    # random rows, then near copies of the first 100,000 (1 to 3 bits away)
    db.execute(f"""INSERT INTO docs SELECT i, CASE WHEN i <= {n - 100_000} THEN hashint8extended(i, 7)
                   ELSE hashint8extended(i - {n - 100_000}, 7) # (1::bigint << (i % 64)::int)
                        # (CASE WHEN i % 3 = 0 THEN 1::bigint << ((i / 7) % 64)::int ELSE 0 END) END::simhash64
                   FROM generate_series(1, {n}) i""")
    db.execute("ANALYZE docs")
    report = build(db, CREATE.format(options=""), 1, maintenance_work_mem="64MB")
    assert report.processes == 2 and report.rows == n, report
    assert report.chunks >= 2, report
    # each scans with half of maintenance_work_mem; the leader merges with all of it
    assert report.worker_mb <= 32 and report.leader_mb <= 64, report
    db.execute("SELECT simhash_mih_check('docs_fp')")

    rng = random.Random(11)
    copies = [r[0] for r in db.execute(f"SELECT fp::text FROM docs WHERE id > {n - 100_000} ORDER BY id LIMIT 10")]
    assert_exact_on_large(db, [int(c) for c in copies] + [rng.getrandbits(64) for _ in range(10)])


def writer(conninfo: str, seed: int, stop: threading.Event) -> None:
    rng = random.Random(seed)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        i = 0
        while not stop.is_set():
            conn.execute("INSERT INTO docs VALUES (%s, %s::text::simhash64)", (1_000_000 * seed + i, str(rng.getrandbits(64))))
            conn.execute("DELETE FROM docs WHERE id = %s", (rng.randrange(20_000),))
            i += 1


def test_create_index_concurrently_in_parallel_while_rows_are_written(db: psycopg.Connection) -> None:
    rng = random.Random(5)
    load(db, planted_fingerprints(rng, 20_000))
    info = db.info
    conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    reports = []

    def create() -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            reports.append(build(conn, "CREATE INDEX CONCURRENTLY docs_fp ON docs USING simhash_mih (fp)", 2))
            reports.append(build(conn, "REINDEX INDEX CONCURRENTLY docs_fp", 2))

    errors = run_together([create], [lambda stop, s=s: writer(conninfo, s, stop) for s in (1, 2)])
    assert not errors, errors
    assert [r.processes for r in reports] == [3, 3]
    rows = {i: None if fp is None else int(fp) for i, fp in db.execute("SELECT id, fp::text FROM docs")}
    assert db.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = 'docs_fp'::regclass").fetchone()[0]
    assert_exact(db, rows, centres_of(rng, rows, 8))
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_a_cancelled_parallel_build_leaves_no_workers_or_files(db: psycopg.Connection) -> None:
    """The build is cancelled while it runs, whatever the machine's speed: the
    index's expression stalls on one row near the end of the table, after the
    participants have sorted and spilled most of theirs."""
    db.execute("CREATE TABLE docs (id int, fp simhash64)")
    db.execute("INSERT INTO docs SELECT i, hashint8extended(i, 1)::simhash64 FROM generate_series(1, 1500000) i")
    db.execute("""CREATE FUNCTION stalling(id int, fp simhash64) RETURNS simhash64
                  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS
                  $$BEGIN IF id = 1400000 THEN PERFORM pg_sleep(60); END IF; RETURN fp; END$$""")
    for setting in ("max_parallel_maintenance_workers = 2", "min_parallel_table_scan_size = 0",
                    "maintenance_work_mem = '8MB'", "statement_timeout = '5s'"):
        db.execute(f"SET {setting}")
    error = error_of(db, "CREATE INDEX docs_fp ON docs USING simhash_mih (stalling(id, fp))")
    assert error.sqlstate == "57014", str(error)  # query_canceled
    db.execute("RESET ALL")
    assert db.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM pg_ls_tmpdir()").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM pg_class WHERE relname = 'docs_fp'").fetchone()[0] == 0
    report = build(db, CREATE.format(options=""), 2)
    assert report.processes == 3 and report.rows == 1_500_000
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_an_empty_table_and_a_table_of_nulls(db: psycopg.Connection) -> None:
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    for workers in (0, 2):
        report = build(db, "CREATE INDEX docs_fp ON docs USING simhash_mih (fp)", workers)
        assert report.rows == 0
        assert_exact(db, {}, [0, 5])
        db.execute("DROP INDEX docs_fp")
    copy_rows(db, "COPY docs FROM STDIN", ((i, None) for i in range(5000)))
    report = build(db, "CREATE INDEX docs_fp ON docs USING simhash_mih (fp)", 2)
    assert report.rows == 0
    db.execute("SELECT simhash_mih_check('docs_fp')")
