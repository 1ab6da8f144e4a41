"""simhash_lock_near: near fingerprints serialize, unrelated ones do not wait,
and many concurrent writers running check-then-insert store no near-duplicates
(while the same loop without the lock does)."""

from __future__ import annotations

import random

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolbox import flip
from toolbox.dedupe_writers import CLUSTERS, near_pairs, run_writers

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
