"""simhash_mih's reading of the pending list (mih_scan_pending.c): a backend
copies the rows of the pending pages that no longer change (a lane's pages
before its tail, the sealed chain) and its next queries compare them there.
The copies follow seals (a page recycled and reused is read again), VACUUM
(the rows it removes leave the copies) and their bound, and every answer
equals brute force."""

from __future__ import annotations

import random
import struct

import psycopg

from toolbox import copy_rows, flip_random
from toolbox.data import planted_fingerprints
from toolbox.mih_builds import assert_exact, assert_exact_on_large
from toolbox.mih_merges import mih_stats
from toolbox.mih_pages import META_NSEALS, PENDING_CAP, lanes_of_metapage, metapage_of

INVALID_BLOCK = 0xFFFFFFFF
# Rows one index's copies hold in one backend at most (mih_scan_pending.c's MIH_COPIES_MOST_ROWS).
COPIES_MOST_ROWS = 4 * 65536
INSERT_RANGE = "INSERT INTO docs SELECT g, hashint8extended(g, 29)::simhash64 FROM generate_series(%s::bigint, %s) g"
QUERY = "SELECT id FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"


def load(db: psycopg.Connection, fps: list[int | None]) -> None:
    db.execute("CREATE TABLE docs (id bigint, fp simhash64) WITH (autovacuum_enabled = off)")
    copy_rows(db, "COPY docs FROM STDIN", ((i, None if fp is None else str(fp)) for i, fp in enumerate(fps)))
    db.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")


def counts(conn: psycopg.Connection) -> tuple[int, int]:
    """The metapage's seals and VACUUM's passes over the pending pages."""
    return struct.unpack_from("<QQ", metapage_of(conn), META_NSEALS)


def copied_bytes(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts"
                        " WHERE name = 'simhash_mih pending copies'").fetchone()[0]


def test_copies_follow_seals_and_lane_heads_reused_after_recycling(db: psycopg.Connection) -> None:
    """A writer fills its lane a page and more at a time, the list sealed and
    flushed every few inserts and its pages recycled and reused (no
    workers: all in the inserting backend).  A querying backend copies the
    lane's first pages; when the lane's head is a page it had copied under
    an earlier seal (recycled and reused), its next query reads the lane
    again: every answer (at k = 64 every row) equals brute force then, and
    every few inserts besides."""
    rng = random.Random(51)
    load(db, planted_fingerprints(rng, 1000))
    info = db.info
    copied: dict[int, tuple[int, int]] = {}  # lane -> (head, seals) when the querying backend last read it
    reused = 0
    next_id = 10_000
    with psycopg.connect(host=info.host, port=info.port, user=info.user, dbname=info.dbname,
                         autocommit=True) as writer:
        writer.execute("SET simhash.mih_background_merges = off")
        writer.execute(f"SET simhash.mih_pending_limit = {3 * PENDING_CAP}")
        for step in range(90):
            count = PENDING_CAP + 100
            writer.execute(INSERT_RANGE, (next_id, next_id + count - 1))
            next_id += count
            contents = metapage_of(db)
            seals = struct.unpack_from("<Q", contents, META_NSEALS)[0]
            lanes = lanes_of_metapage(contents)
            heads_again = [i for i, (head, _, _) in enumerate(lanes)
                           if i in copied and copied[i][0] == head and copied[i][1] != seals]
            if heads_again or step % 7 == 6:
                reused += bool(heads_again)
                centres = [int(r[0]) for r in db.execute("SELECT fp::text FROM docs WHERE id IN (%s, %s)",
                                                         (next_id - 1, next_id - count))]
                assert_exact_on_large(db, centres + [rng.getrandbits(64)], radii=range(0, 11, 5),
                                      count_radii=(64,))
                # each lane with a page before its tail was copied
                copied = {i: (head, seals) for i, (head, tail, _) in enumerate(lanes) if head != tail}
    now = mih_stats(db, "docs_fp")
    assert counts(db)[0] >= 10 and now["recycled"] > 0 and now["flushes"] == counts(db)[0]
    assert reused > 0


def test_vacuum_drops_the_copies_of_the_rows_it_removes(db: psycopg.Connection) -> None:
    """A backend copies pending pages of rows near a centre; some are deleted,
    VACUUM removes them from the index and frees their heap slots, and new
    rows far from the centre take those slots.  VACUUM counted its pass
    first (and again at its end), so the backend reads the pages again: the index hands the heap
    no TID of a removed row (the heap's recheck would hide it).  (VACUUM's
    relcache invalidation of the index drops the copies too, as it drops
    the directories; the pass count is what holds wherever it does not.)"""
    rng = random.Random(53)
    centre = rng.getrandbits(64)
    load(db, [])
    db.execute(f"SET simhash.mih_pending_limit = {10 * PENDING_CAP}")
    near = [flip_random(centre, rng.randint(0, 3), rng) for _ in range(3 * PENDING_CAP + 10)]
    copy_rows(db, "COPY docs FROM STDIN", ((i, str(fp)) for i, fp in enumerate(near)))
    db.execute("SET enable_seqscan = off")
    for _ in range(2):  # the first query copies the lane's full pages, the second compares the copies
        assert [r[0] for r in db.execute(QUERY, (str(centre), 3))] == list(range(len(near)))
    # rows of the copied first page deleted, VACUUM, far rows in their heap slots
    removed = 100
    gone = {r[0] for r in db.execute("DELETE FROM docs WHERE id < %s RETURNING ctid::text", (removed,))}
    before = counts(db)
    db.execute("VACUUM docs")
    far = [flip_random(centre, rng.randint(20, 40), rng) for _ in range(removed)]
    copy_rows(db, "COPY docs FROM STDIN", ((10_000 + i, str(fp)) for i, fp in enumerate(far)))
    assert len(gone & {r[0] for r in db.execute("SELECT ctid::text FROM docs WHERE id >= 10000")}) > removed // 2
    plan = db.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + QUERY, (str(centre), 3)).fetchone()[0][0]["Plan"]
    scan = plan if plan["Node Type"] == "Bitmap Heap Scan" else plan["Plans"][0]
    assert scan["Node Type"] == "Bitmap Heap Scan", plan
    assert scan.get("Rows Removed by Index Recheck", 0) == scan.get("Rows Removed by Filter", 0) == 0
    assert scan["Actual Rows"] == len(near) - removed
    # counted as the pass began and as it ended: even again, no pass under way
    assert counts(db) == (before[0], before[1] + 2) and before[1] % 2 == 0


def test_copies_stop_at_their_bound_and_the_pages_after_it_are_read(db: psycopg.Connection) -> None:
    """A pending list longer than the copies' bound (one lane of 2x the bound):
    the backend copies up to the bound and reads the pages after it, every
    answer exact, first and again; the copies' memory stays near the
    bound's 14 bytes a row."""
    rng = random.Random(57)
    load(db, [rng.getrandbits(64) for _ in range(1000)])
    count = 2 * COPIES_MOST_ROWS
    db.execute(f"SET simhash.mih_pending_limit = {count + 1}")
    new = [rng.getrandbits(64) for _ in range(count)]
    copy_rows(db, "COPY docs FROM STDIN", ((1000 + i, str(fp)) for i, fp in enumerate(new)))
    assert mih_stats(db, "docs_fp")["pending_rows"] == count
    # rows near the first copied, the last copied, and the last read pages
    centres = [flip_random(new[i], 2, rng) for i in (5, COPIES_MOST_ROWS - 3, COPIES_MOST_ROWS + 7, count - 1)]
    for _ in range(2):
        assert_exact_on_large(db, centres, radii=range(0, 11, 5))
    assert COPIES_MOST_ROWS * 14 * 0.9 < copied_bytes(db) < COPIES_MOST_ROWS * 14 * 1.5
