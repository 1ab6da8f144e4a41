"""simhash_lock_near: near fingerprints serialize, unrelated ones do not wait,
and many concurrent writers running check-then-insert store no near-duplicates
(while the same loop without the lock does)."""

from __future__ import annotations

import random
import threading

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolbox import flip

LOCKS_HELD = """
SELECT array_agg((classid::bigint << 32 | objid::bigint) ORDER BY classid, objid)
FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
"""


def lock_keys(conn: psycopg.Connection, fp: int, k: int, scope: str | None = None) -> set[int]:
    """The advisory lock keys simhash_lock_near takes for fp."""
    with conn.transaction(force_rollback=True):
        conn.execute("SELECT simhash_lock_near(%s::text::simhash64, %s, %s)", (str(fp), k, scope))
        return set(conn.execute(LOCKS_HELD).fetchone()[0] or [])


@settings(max_examples=300, deadline=None)
@given(fp=st.integers(0, 2**64 - 1), k=st.integers(0, 40), data=st.data())
def test_fingerprints_within_k_share_a_lock(shared_db: psycopg.Connection, fp: int, k: int, data) -> None:
    bits = data.draw(st.lists(st.integers(0, 63), max_size=k, unique=True))
    near = flip(fp, bits)
    assert lock_keys(shared_db, fp, k, "s") & lock_keys(shared_db, near, k, "s")


def test_unrelated_fingerprints_rarely_share_a_lock(shared_db: psycopg.Connection) -> None:
    """At k = 3 two random fingerprints share a lock only if they agree on a whole
    16-bit block (about 1 pair in 16,000): none of these 300 pairs do, and a
    scope keeps equal fingerprints apart."""
    rng = random.Random(3)
    keys = [lock_keys(shared_db, rng.getrandbits(64), 3, "example.org") for _ in range(25)]
    assert all(len(k) == 4 for k in keys)
    shared = [(i, j) for i in range(len(keys)) for j in range(i + 1, len(keys)) if keys[i] & keys[j]]
    assert shared == []
    assert not lock_keys(shared_db, 42, 3, "a.example") & lock_keys(shared_db, 42, 3, "b.example")
    assert lock_keys(shared_db, 42, 3) == lock_keys(shared_db, 42, 3, None)


def test_a_near_fingerprint_waits_an_unrelated_one_does_not(db: psycopg.Connection) -> None:
    info = db.info
    other = psycopg.connect(host=info.host, port=info.port, user=info.user, dbname=info.dbname)
    holder = psycopg.connect(host=info.host, port=info.port, user=info.user, dbname=info.dbname)
    fp = 0x0123456789ABCDEF
    with holder, other:
        holder.execute("SELECT simhash_lock_near(%s::text::simhash64, 3, 'example.org')", (str(fp),))
        other.execute("SET lock_timeout = '300ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            other.execute("SELECT simhash_lock_near(%s::text::simhash64, 3, 'example.org')",
                          (str(flip(fp, [0, 17, 40])),))
        other.rollback()
        other.execute("SELECT simhash_lock_near(%s::text::simhash64, 3, 'example.org')", (str(fp ^ (2**64 - 1)),))
        other.execute("SELECT simhash_lock_near(%s::text::simhash64, 3, 'example.net')", (str(fp),))
        other.rollback()
        holder.commit()  # the transaction's end releases the locks
        other.execute("SELECT simhash_lock_near(%s::text::simhash64, 3, 'example.org')", (str(fp),))
        other.rollback()


WRITERS = 8
CLUSTERS = 12
MAX_DISTANCE = 3


def dedupe_writer(conninfo: str, seed: int, lock: bool, start: threading.Barrier, errors: list) -> None:
    """Each writer stores its own near-copy (1 bit from the cluster's centre, so
    any two copies are within 2 bits) of every cluster, unless it finds one."""
    rng = random.Random(seed)
    try:
        with psycopg.connect(conninfo) as conn:
            start.wait()
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
    except Exception as error:  # reported by the test
        errors.append(error)


def near_pairs(conn: psycopg.Connection) -> int:
    return conn.execute(
        "SELECT count(*) FROM pages a JOIN pages b ON a.domain = b.domain AND a.id < b.id"
        " AND hamming_within(a.fingerprint, b.fingerprint, %s)", (MAX_DISTANCE,)).fetchone()[0]


def run_writers(conninfo: str, lock: bool) -> list:
    """WRITERS dedupe_writer threads at once, started together; their errors."""
    start, errors = threading.Barrier(WRITERS), []
    threads = [threading.Thread(target=dedupe_writer, args=(conninfo, seed, lock, start, errors))
               for seed in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.parametrize("lock", [True, False], ids=["locked", "unlocked"])
def test_concurrent_check_then_insert(db: psycopg.Connection, lock: bool) -> None:
    db.execute("CREATE TABLE pages (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
               " domain text NOT NULL, fingerprint simhash64 NOT NULL)")
    db.execute("CREATE INDEX ON pages USING gin (fingerprint) WITH (fastupdate = off)")
    info = db.info
    conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    assert run_writers(conninfo, lock) == []
    rows = db.execute("SELECT count(*) FROM pages").fetchone()[0]
    if lock:
        assert (rows, near_pairs(db)) == (CLUSTERS, 0)
    else:
        # The same loop without the lock races: the test above could fail.
        assert rows > CLUSTERS and near_pairs(db) > 0
