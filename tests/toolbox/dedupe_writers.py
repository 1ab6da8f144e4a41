"""Crawler-like writers running check-then-insert at once on a `pages (id,
domain, fingerprint)` table, with or without simhash_lock_near: the locks
test runs them on one server, the Citus test through a coordinator."""

from __future__ import annotations

import random

import psycopg

from toolbox import flip
from toolbox.workers import run_together

WRITERS = 8
CLUSTERS = 12
MAX_DISTANCE = 3


def dedupe_writer(conninfo: str, seed: int, lock: bool) -> None:
    """Each writer stores its own near-copy (1 bit from the cluster's centre, so
    any two copies are within 2 bits) of every cluster, unless it finds one."""
    rng = random.Random(seed)
    with psycopg.connect(conninfo) as conn:
        for cluster in range(CLUSTERS):
            centre = random.Random(cluster).getrandbits(64)
            fp = str(flip(centre, [rng.randrange(64)]))
            domain = f"site{cluster % 3}.example"
            with conn.transaction():
                if lock:
                    conn.execute("SELECT simhash_lock_near(%s::text::simhash64, %s, %s)",
                                 (fp, MAX_DISTANCE, domain))
                found = conn.execute(
                    "SELECT id FROM pages WHERE domain = %s"
                    " AND hamming_within(fingerprint, %s::text::simhash64, %s) LIMIT 1",
                    (domain, fp, MAX_DISTANCE)).fetchone()
                conn.execute("SELECT pg_sleep(0.02)")  # a crawler's work between check and insert
                if found is None:
                    conn.execute("INSERT INTO pages (domain, fingerprint) VALUES (%s, %s::text::simhash64)",
                                 (domain, fp))


def near_pairs(conn: psycopg.Connection) -> int:
    return conn.execute(
        "SELECT count(*) FROM pages a JOIN pages b ON a.domain = b.domain AND a.id < b.id"
        " AND hamming_within(a.fingerprint, b.fingerprint, %s)", (MAX_DISTANCE,)).fetchone()[0]


def run_writers(conninfo: str, lock: bool) -> list:
    """WRITERS dedupe_writer threads at once, started together; their errors."""
    return run_together([lambda seed=seed: dedupe_writer(conninfo, seed, lock) for seed in range(WRITERS)])
