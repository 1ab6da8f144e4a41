"""simhash_mih's write path, for the index tests: an index's
simhash_mih_stats as a dict, a wait for the background merges the last
flushes started (mih_merge.c) to bring the run sets back to the cap, and one
for the flush worker the last sealing insert started to flush its list."""

from __future__ import annotations

import time

import psycopg

from toolbox.mih_pages import SET_CAP

STATS_COLUMNS = ("pending_rows", "sealed_rows", "run_sets", "set_rows", "retired", "recycled", "flushes", "merges",
                 "merged_rows", "merging_sets", "lost_pages")


def mih_stats(conn: psycopg.Connection, index: str) -> dict:
    row = conn.execute(f"SELECT {', '.join(STATS_COLUMNS)} FROM simhash_mih_stats(%s::regclass)", (index,)).fetchone()
    return dict(zip(STATS_COLUMNS, row))


# The workers' backend_type in pg_stat_activity (mih_merge.c's MihJob).
WORKER_TYPES = ("simhash_mih merge", "simhash_mih flush")


def wait_for_workers(conn: psycopg.Connection, index: str, done, timeout: float = 60) -> dict:
    """The stats once no simhash_mih worker of the database runs (a flush
    worker's flush may start a merge worker) and done(stats) holds."""
    deadline = time.monotonic() + timeout
    while True:
        running = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = ANY(%s)"
                               " AND datname = current_database()", (list(WORKER_TYPES),)).fetchone()[0]
        now = mih_stats(conn, index)
        if not running and done(now):
            return now
        assert time.monotonic() < deadline, f"workers still running or work due after {timeout} s: {now}"
        time.sleep(0.05)


def wait_for_no_autovacuum(conn: psycopg.Connection, timeout: float = 60) -> None:
    """Returns once no autovacuum worker runs in conn's database: an ANALYZE
    there (of the catalogs a fresh database's CREATE EXTENSION filled) holds
    a snapshot, and with it the horizon recycling waits for."""
    deadline = time.monotonic() + timeout
    while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
                       " AND datname = current_database()").fetchone()[0]:
        assert time.monotonic() < deadline, f"autovacuum still running after {timeout} s"
        time.sleep(0.05)


def wait_for_merges(conn: psycopg.Connection, index: str, timeout: float = 60) -> dict:
    """The stats once no worker runs and the index holds no more run sets
    than the cap."""
    return wait_for_workers(conn, index, lambda now: now["run_sets"] <= SET_CAP, timeout)


def wait_for_flush(conn: psycopg.Connection, index: str, timeout: float = 60) -> dict:
    """The stats once no worker runs and no sealed list waits: the flush
    worker the sealing insert started has flushed it."""
    return wait_for_workers(conn, index, lambda now: now["sealed_rows"] == 0, timeout)
