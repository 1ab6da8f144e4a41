"""simhash_mih's write path, for the index tests: an index's
simhash_mih_stats as a dict, a wait for the background merges the last
flushes started (mih_worker.c) to bring the run sets back to the cap, and one
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


# The workers' backend_type in pg_stat_activity (mih_worker.c's MihJob).
WORKER_TYPES = ("simhash_mih merge", "simhash_mih flush")


def running_in_database(conn: psycopg.Connection, backend_types: tuple[str, ...]) -> int:
    """How many backends of these types run in conn's database."""
    return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = ANY(%s)"
                        " AND datname = current_database()", (list(backend_types),)).fetchone()[0]


def poll(check, timeout: float, what: str):
    """check() -> (done, value) every 50 ms until done: the value; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done, value = check()
        if done:
            return value
        assert time.monotonic() < deadline, f"{what} after {timeout} s: {value}"
        time.sleep(0.05)


def wait_for_workers(conn: psycopg.Connection, index: str, done, timeout: float = 60) -> dict:
    """The stats once no simhash_mih worker of the database runs (a flush
    worker's flush may start a merge worker) and done(stats) holds."""
    def check() -> tuple[bool, dict]:
        running = running_in_database(conn, WORKER_TYPES)
        now = mih_stats(conn, index)
        return not running and done(now), now
    return poll(check, timeout, "workers still running or work due")


def wait_for_no_autovacuum(conn: psycopg.Connection, timeout: float = 60) -> None:
    """Returns once no autovacuum worker runs in conn's database: an ANALYZE
    there (of the catalogs a fresh database's CREATE EXTENSION filled) holds
    a snapshot, and with it the horizon recycling waits for."""
    poll(lambda: (running_in_database(conn, ("autovacuum worker",)) == 0, None), timeout, "autovacuum still running")


def wait_for_merges(conn: psycopg.Connection, index: str, timeout: float = 60) -> dict:
    """The stats once no worker runs and the index holds no more run sets
    than the cap."""
    return wait_for_workers(conn, index, lambda now: now["run_sets"] <= SET_CAP, timeout)


def wait_for_flush(conn: psycopg.Connection, index: str, timeout: float = 60) -> dict:
    """The stats once no worker runs and no sealed list waits: the flush
    worker the sealing insert started has flushed it."""
    return wait_for_workers(conn, index, lambda now: now["sealed_rows"] == 0, timeout)
