"""simhash_mih's write path, for the index tests: an index's
simhash_mih_stats as a dict, and a wait for the background merges the last
flushes started (mih_merge.c) to bring the run sets back to the cap."""

from __future__ import annotations

import time

import psycopg

from toolbox.mih_pages import SET_CAP

STATS_COLUMNS = ("pending_rows", "sealed_rows", "run_sets", "set_rows", "retired", "recycled", "flushes", "merges",
                 "merged_rows", "merging_sets")


def mih_stats(conn: psycopg.Connection, index: str) -> dict:
    row = conn.execute(f"SELECT {', '.join(STATS_COLUMNS)} FROM simhash_mih_stats(%s::regclass)", (index,)).fetchone()
    return dict(zip(STATS_COLUMNS, row))


def wait_for_merges(conn: psycopg.Connection, index: str, timeout: float = 60) -> dict:
    """The stats once no merge worker of the database runs and the index
    holds no more run sets than the cap."""
    deadline = time.monotonic() + timeout
    while True:
        running = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'simhash_mih merge'"
                               " AND datname = current_database()").fetchone()[0]
        now = mih_stats(conn, index)
        if not running and now["run_sets"] <= SET_CAP:
            return now
        assert time.monotonic() < deadline, f"merges still running or due after {timeout} s: {now}"
        time.sleep(0.05)
