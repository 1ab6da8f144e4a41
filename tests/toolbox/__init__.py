"""What the tests share, in one place.

This module: the checkout's root, the Hamming distance, the brute-force
references every index and find_all result is compared with (pairs, radius
results, connected components), near copies made by flipping bits, and the
error a statement raises.  Beside it: data (planted fingerprints, random
queries, hypothesis's clustered rows), workers (threads started together), plans (a query's rows by an asserted plan:
the index's, or the brute-force sequential scan),
dedupe_writers (concurrent check-then-insert writers), readme (the README's example blocks, run),
servers (a test's own copy of the private installation, and the installations
of other majors), citus_cluster (a local Citus cluster), web_pages (HTML pages
for the extractor and the CLI) and pages_model (the SQLAlchemy model the
Alembic and query tests share).  Also the settings that give find_all
parallel workers on small inputs, and a backend's parallel workers."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import combinations
from pathlib import Path

import numpy as np
import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_FINGERPRINT = 2**64 - 1

# The index kinds the tests run on, as `CREATE INDEX ... USING` text on a column
# fp: the GIN operator class and the access method.
GIN = "gin (fp simhash64_ops {options})"
MIH = "simhash_mih (fp) {options}"
INDEX_KINDS = {"gin": GIN, "simhash_mih": MIH}


def distance(a: int, b: int) -> int:
    """Bits in which two 64-bit values differ."""
    return (a ^ b).bit_count()


def brute_force_pairs(rows: Iterable[tuple[int, int | None]], k: int) -> list[tuple[int, int, int]]:
    """Every pair of rows (id, fingerprint) within k bits, O(n^2), as sorted
    (id1 < id2, distance); rows without a fingerprint (None) have no pairs."""
    present = [(i, h) for i, h in rows if h is not None]
    return sorted((min(i, j), max(i, j), distance(a, b))
                  for (i, a), (j, b) in combinations(present, 2) if distance(a, b) <= k)


def brute_force_within(fps: list[int | None], centre: int, k: int) -> list[int]:
    """The positions in fps of the fingerprints within k bits of centre (None never)."""
    ids = np.array([i for i, fp in enumerate(fps) if fp is not None], dtype=np.int64)
    values = np.array([fp for fp in fps if fp is not None], dtype=np.uint64)
    return sorted(ids[np.bitwise_count(values ^ np.uint64(centre)) <= k].tolist())


def components(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Connected components: node -> smallest node of its component."""
    parent = {n: n for n in nodes}

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in edges:
        ra, rb = sorted((root(a), root(b)))
        parent[rb] = ra
    return {n: root(n) for n in parent}


def brute_force_clusters(values: dict[int, int], k: int) -> dict[int, int]:
    """id -> smallest id of its cluster of fingerprints within k bits (clusters of two or more)."""
    label = components(values, ((i, j) for i, j, _ in brute_force_pairs(values.items(), k)))
    sizes: dict[int, int] = {}
    for root in label.values():
        sizes[root] = sizes.get(root, 0) + 1
    return {i: root for i, root in label.items() if sizes[root] > 1}


def module_database(postgresql_proc, name: str):
    """A database of a test module's own on the suite's server, with the
    extension (for hypothesis, which runs a test body many times): a
    generator for a module-scoped fixture."""
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user)
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(dbname=name, autocommit=True, **server) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        yield conn


def error_of(conn: psycopg.Connection, sql: str, params=()) -> psycopg.Error:
    """The error running sql raises (the test fails if it raises none)."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, params).fetchall()
    return info.value


def copy_rows(conn: psycopg.Connection, sql: str, rows: Iterable[tuple]) -> None:
    """COPY rows in through `sql` (COPY ... FROM STDIN), values as text, None as NULL."""
    with conn.cursor().copy(sql) as copy:
        for row in rows:
            copy.write_row(tuple(None if v is None else str(v) for v in row))


def brute_force_hash_pairs(hashes: Iterable[int], k: int) -> list[tuple[int, int]]:
    """The pairs (a < b) of distinct hashes within k bits (simhash-cpp's find_all)."""
    distinct = set(hashes)
    return [(a, b) for a, b, _ in brute_force_pairs(((h, h) for h in distinct), k)]


def flip(fp: int, bits: Iterable[int]) -> int:
    """fp with the given bit positions flipped."""
    for bit in bits:
        fp ^= 1 << bit
    return fp


def flip_random(fp: int, bits: int, rng: random.Random) -> int:
    """fp with `bits` distinct random bit positions flipped."""
    return flip(fp, rng.sample(range(64), bits))


def near_copies(seed: int, groups: int, per_group: int, max_flip: int) -> list[int]:
    """Random fingerprints in groups of near copies: each copy is the one before
    it with up to max_flip random bits flipped."""
    rng = random.Random(seed)
    values = []
    for _ in range(groups):
        base = rng.getrandbits(64)
        for _ in range(per_group):
            base = flip_random(base, rng.randint(0, max_flip), rng)
            values.append(base)
    return values


@contextmanager
def parallel_on_small_inputs(conn: psycopg.Connection, spill_rows: int | None = None) -> Iterator[list[str]]:
    """find_all and clusters with workers for any input, up to 4, with the
    messages (DEBUG1: the workers launched) collected; with spill_rows, every
    input bigger than that spills to temporary files."""
    messages: list[str] = []

    def keep(diagnostic) -> None:
        messages.append(diagnostic.message_primary or "")

    conn.add_notice_handler(keep)
    conn.execute("SET simhash.find_all_parallel_min_rows = 0")
    conn.execute("SET max_parallel_maintenance_workers = 4")
    conn.execute("SET client_min_messages = debug1")
    conn.execute("SET statement_timeout = '120s'")  # a hang fails, not blocks the suite
    if spill_rows is not None:
        conn.execute(f"SET simhash.debug_spill_rows = {spill_rows}")
    try:
        yield messages
    finally:
        conn.execute("RESET simhash.debug_spill_rows")
        conn.execute("RESET statement_timeout")
        conn.execute("RESET client_min_messages")
        conn.execute("RESET max_parallel_maintenance_workers")
        conn.execute("RESET simhash.find_all_parallel_min_rows")
        conn.remove_notice_handler(keep)


def parallel_workers_of(conn: psycopg.Connection, pid: int) -> int:
    """The parallel workers the backend pid leads now."""
    return conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker' AND leader_pid = %s", (pid,)
    ).fetchone()[0]
