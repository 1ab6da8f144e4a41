"""simhash_mih under continuous inserts and no VACUUM (issue 29): flushes never
stop and run in a worker (the insert that fills the list only seals it), the
flushes' size-tiered merges keep the run sets within the cap (mih_insert.c,
mih_flush.c, mih_merge.c, mih_worker.c), the workers recycle the retired
pages (inserts, where no worker takes the index's work), and every answer
equals brute force meanwhile and after; simhash_mih_stats reports it all and refuses
what is not a simhash_mih index with a clear error."""

from __future__ import annotations

import random
import struct
import threading
import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest

from toolbox import MIH, brute_force_within, copy_rows, error_of, flip_random
from toolbox.data import planted_fingerprints
from toolbox.mih_merges import mih_stats, wait_for_flush, wait_for_merges, wait_for_no_autovacuum, wait_for_workers
from toolbox.mih_pages import (BLCKSZ, CONTENTS, LANES, MAX_RETIRED, MAX_SETS, META_MORE_LANES, META_NLANES,
                               META_NSCOPE, PD_LOWER, PENDING_BOUND, PENDING_CAP, PROBED_CAP, SET_CAP,
                               backends_of_other_lanes, connect,
                               edit_index, filtered_most, lane_offset, lanes_of, own_server)
from toolbox.plans import rows_by_plan
from toolbox.workers import run_together

PENDING_LIMIT = 128
WRITERS = 4
ROWS_PER_WRITER = 10_000
ROWS_PER_TRANSACTION = 100


def load(db: psycopg.Connection, fps: list[int | None]) -> None:
    db.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
    copy_rows(db, "COPY docs FROM STDIN", ((i, None if fp is None else str(fp)) for i, fp in enumerate(fps)))
    db.execute(f"CREATE INDEX docs_fp ON docs USING {MIH.format(options='')}")


def stats(conn: psycopg.Connection) -> dict:
    return mih_stats(conn, "docs_fp")


def test_stats_follow_flushes_and_merges(db: psycopg.Connection) -> None:
    load(db, [random.Random(1).getrandbits(64) for _ in range(1000)])
    assert stats(db) == {"pending_rows": 0, "sealed_rows": 0, "run_sets": 1, "set_rows": [1000], "retired": 0,
                         "recycled": 0, "flushes": 0, "merges": 0, "merged_rows": 0, "merging_sets": 0,
                         "lost_pages": False}
    # merges in the inserting backend, one after each flush that makes one due (no worker: a
    # deterministic order)
    db.execute("SET simhash.mih_background_merges = off")
    db.execute("SET simhash.mih_pending_limit = 100")
    db.execute("INSERT INTO docs SELECT 1000 + g, hashint8extended(g, 7)::simhash64 FROM generate_series(1, 150) g")
    # the base holds 1000 rows, the rest 100: too few to fold, no other set to merge;
    # the flushed pending chain is retired, kept while the inserting transaction could read it
    assert stats(db) == {"pending_rows": 50, "sealed_rows": 0, "run_sets": 2, "set_rows": [1000, 100],
                         "retired": 1, "recycled": 0, "flushes": 1, "merges": 0, "merged_rows": 0,
                         "merging_sets": 0, "lost_pages": False}
    db.execute("INSERT INTO docs SELECT 2000 + g, hashint8extended(g, 8)::simhash64 FROM generate_series(1, 50) g")
    # the new set of 100 merged with the other one of 100 (no larger): one set of 200, both
    # rewritten; the two merged sets and the second chain retired beside the first chain, which a
    # transaction that began before the first flush's transaction ended (this one) may still read
    now = stats(db)
    assert (now["run_sets"], now["set_rows"], now["merges"], now["merged_rows"]) == (2, [1000, 200], 1, 200)
    assert (now["retired"], now["recycled"]) == (4, 0)
    db.execute("INSERT INTO docs SELECT 3000 + g, hashint8extended(g, 9)::simhash64 FROM generate_series(1, 300) g")
    # flushes: [1000, 200, 100] (200 > 100: no merge), [1000, 200, 100, 100] merged to [1000, 400]
    # (100, 100, then 200: each no larger than what is taken), then [1000, 400, 100]: 500 rows
    # beside the base's 1000, half of it, folded into one set
    now = stats(db)
    assert (now["run_sets"], now["set_rows"], now["pending_rows"], now["merges"]) == (1, [1500], 0, 3)
    assert now["merged_rows"] == 200 + 400 + 1500
    # the first insert of this transaction recycled what no snapshot could read any more
    assert now["recycled"] >= 1 and now["retired"] < 4 + 1 + 4 + 4
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_merges_keep_few_sets_too_large_for_a_filter(db: psycopg.Connection) -> None:
    # 4 runs of 16 bits: scans filter the probes of sets of at most 8,192 rows, so flushes of
    # 2,000 rows soon merge into sets every probe reaches, the base's 400,000 rows among them
    runs, base, flush, flushes = 4, 400_000, 2000, 56
    most = filtered_most(runs)
    rng = np.random.default_rng(30)
    values = rng.integers(0, 2**64, size=base + flush * flushes, dtype=np.uint64)
    db.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
    copy_rows(db, "COPY docs FROM STDIN", ((i, str(fp)) for i, fp in enumerate(values[:base].tolist())))
    db.execute(f"CREATE INDEX docs_fp ON docs USING {MIH.format(options=f'WITH (runs = {runs})')}")
    db.execute("SET simhash.mih_background_merges = off")  # merges in the inserting backend, at once
    db.execute(f"SET simhash.mih_pending_limit = {flush}")
    for batch in range(flushes):
        start = base + batch * flush
        copy_rows(db, "COPY docs FROM STDIN", ((i, str(values[i])) for i in range(start, start + flush)))
        now = stats(db)
        probed = [rows for rows in now["set_rows"] if rows > most]
        # 112,000 rows beside the base's 400,000: never half of it, so no fold
        assert now["flushes"] == batch + 1 and max(now["set_rows"]) == base, now
        assert now["run_sets"] <= SET_CAP and len(probed) <= PROBED_CAP, now
    # the cap on large sets bound: with only the cap of 5 sets, the last flush would leave
    # 64,000 + 32,000 + 16,000 rows beside the base (4 large sets), not 64,000 + 48,000
    assert sorted(stats(db)["set_rows"]) == [48_000, 64_000, base]
    db.execute("SELECT simhash_mih_check('docs_fp')")
    db.execute("SET enable_seqscan = off; SET enable_indexscan = off")
    ids_all = np.arange(len(values))
    for k in (0, 3, 8):
        for centre in rng.choice(values, 5).tolist():
            expected = ids_all[np.bitwise_count(values ^ np.uint64(centre)) <= k].tolist()
            assert ids(db, centre, k) == expected, (centre, k)


def repeatable_reader(db: psycopg.Connection) -> psycopg.Connection:
    """Another connection to db's database, in a REPEATABLE READ transaction (its first query takes the snapshot)."""
    info = db.info
    reader = psycopg.connect(f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}")
    reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    return reader


def insert_batch(db: psycopg.Connection, batch: int) -> None:
    db.execute("INSERT INTO docs SELECT 10000 * %s + g, hashint8extended(g, %s)::simhash64"
               " FROM generate_series(1, 64) g", (batch + 1, batch))


def retire_under_snapshot(db: psycopg.Connection) -> dict:
    """Five flushes of 64 rows by the inserts themselves (no worker), while a
    reader's snapshot holds every retirement back: the stats after them."""
    db.execute("SET simhash.mih_background_merges = off")  # every retirement made by these inserts
    db.execute("SET simhash.mih_pending_limit = 64")
    # five flushes retire fewer entries than half the list holds (past that, an insert that
    # finds no other pin on the metapage recycles whatever the horizon says)
    for batch in range(5):
        insert_batch(db, batch)
    held = stats(db)
    assert held["flushes"] == 5 and held["recycled"] == 0 and held["retired"] >= 5
    return held


def test_recycling_waits_for_older_snapshots_then_an_insert_recycles(db: psycopg.Connection) -> None:
    """Retired pages outlive every snapshot older than their retirement (a
    REPEATABLE READ reader's answer does not change meanwhile); once it ends,
    inserts recycle them and new pages reuse them (the index hardly grows);
    VACUUM recycles whatever is left."""
    rng = random.Random(3)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    reader = repeatable_reader(db)
    reader.execute("SET LOCAL enable_seqscan = off")
    centre = fps[7]
    before = ids(reader, centre, 8)
    held = retire_under_snapshot(db)
    # the reader's snapshot predates every retirement: its answer has not changed
    assert ids(reader, centre, 8) == before
    reader.rollback()
    reader.close()
    size = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    for batch in range(5, 35):
        insert_batch(db, batch)
    now = stats(db)
    assert now["recycled"] > 0 and now["retired"] < held["retired"]
    # 30 more flushes wrote into recycled pages: the index grew by less than what they wrote
    grown = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0] - size
    # each flush writes 3 run pages and 3 directory pages at least: 180 pages without recycling
    assert grown <= 16 * 8192
    db.execute("VACUUM docs")
    assert stats(db)["retired"] == 0
    db.execute("SELECT simhash_mih_check('docs_fp')")
    for k in (0, 3, 8):
        assert ids_of_plan(db, centre, k, index=True) == ids_of_plan(db, centre, k, index=False)


def flushed_and_merged(db: psycopg.Connection) -> dict:
    """The stats once the flush worker the last sealing insert started, and the merges after it, are done."""
    return wait_for_workers(db, "docs_fp", lambda now: now["sealed_rows"] == 0 and now["run_sets"] <= SET_CAP)


def test_with_workers_on_the_workers_recycle_and_inserts_leave_it_to_them(db: psycopg.Connection) -> None:
    """Where workers take the index's work, no insert recycles: retired
    entries no snapshot can read any more stay listed through inserts that
    seal nothing; the flush worker the next sealing insert starts recycles
    them after its flush, and flushes then write into recycled pages (the
    index hardly grows)."""
    rng = random.Random(8)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    reader = repeatable_reader(db)
    reader.execute("SELECT 1")
    held = retire_under_snapshot(db)
    reader.rollback()
    reader.close()
    # every entry is past the horizon now; with workers on, inserts that seal nothing leave them
    db.execute("SET simhash.mih_background_merges = on")
    db.execute("INSERT INTO docs SELECT 60000 + g, hashint8extended(g, 5)::simhash64 FROM generate_series(1, 63) g")
    now = stats(db)
    assert (now["pending_rows"], now["retired"], now["recycled"]) == (63, held["retired"], 0)
    # the 64th row seals the list: its flush worker recycles them after the flush, no insert running
    # (nor an autovacuum ANALYZE of this new database's catalogs, whose snapshot would hold them)
    # (if no worker slot is free at that moment the insert flushes itself, and the merge worker
    # its flush starts recycles: the wait is for a worker's recycling, whichever)
    wait_for_no_autovacuum(db)
    db.execute("INSERT INTO docs VALUES (60064, '5'::simhash64)")
    now = wait_for_workers(db, "docs_fp", lambda now: now["sealed_rows"] == 0 and now["recycled"] > 0)
    assert now["flushes"] == 6 and now["retired"] < held["retired"], now
    size = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    for batch in range(7, 27):
        insert_batch(db, batch)
        flushed_and_merged(db)
    # 20 more flushes (each 3 run pages and 3 directory pages at least) and their merges wrote
    # into pages the workers recycled
    grown = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0] - size
    assert grown <= 16 * 8192, grown
    db.execute("SELECT simhash_mih_check('docs_fp')")
    for centre in [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(5)] + [5]:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False)


def test_stats_refuse_what_is_not_a_simhash_mih_index(db: psycopg.Connection) -> None:
    db.execute("CREATE TABLE docs (id int, fp simhash64)")
    db.execute("CREATE INDEX docs_id ON docs (id)")
    error = error_of(db, "SELECT simhash_mih_stats('docs')")
    assert error.sqlstate == "42809" and '"docs" is not an index' in str(error)
    error = error_of(db, "SELECT simhash_mih_stats('docs_id')")
    assert error.sqlstate == "42809" and 'index "docs_id" is not a simhash_mih index' in str(error)
    assert db.execute("SELECT simhash_mih_stats(NULL)").fetchone()[0] is None


def write_rows(conninfo: str, seed: int, stored: list[int], written: list[tuple[int, int]]) -> None:
    """ROWS_PER_WRITER single-row inserts, ROWS_PER_TRANSACTION a transaction:
    near copies of stored rows (within 0..9 bits) and random fingerprints."""
    rng = random.Random(seed)
    rows = [(1_000_000 * (seed + 1) + i,
             flip_random(rng.choice(stored), rng.randint(0, 9), rng) if rng.random() < 0.6 else rng.getrandbits(64))
            for i in range(ROWS_PER_WRITER)]
    with psycopg.connect(conninfo) as conn:
        for start in range(0, len(rows), ROWS_PER_TRANSACTION):
            batch = rows[start:start + ROWS_PER_TRANSACTION]
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO docs VALUES (%s, %s::text::simhash64)", [(i, str(fp)) for i, fp in batch])
            conn.commit()
            written.extend(batch)


IDS_WITHIN = "SELECT id FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"


def ids(conn: psycopg.Connection, centre: int, k: int) -> list[int]:
    # never prepared (psycopg prepares a query run 5 times): a prepared statement's
    # generic plan is kept whatever enable_* says later (ids_of_plan's scans)
    return [r[0] for r in conn.execute(IDS_WITHIN, (str(centre), k), prepare=False)]


def ids_of_plan(conn: psycopg.Connection, centre: int, k: int, index: bool) -> list[int]:
    """ids() by a bitmap scan of the index, or by a sequential scan (brute
    force): the plan asserted, every setting given each time (toolbox.plans)."""
    return [r[0] for r in rows_by_plan(conn, IDS_WITHIN, (str(centre), k), table="docs",
                                       index="docs_fp" if index else None)]


def compare_in_snapshots(conninfo: str, stored: list[int], stop: threading.Event, compared: list[int]) -> None:
    """While the writers write: in one snapshot, the index's answer and the
    sequential scan's, at k = 0..8."""
    rng = random.Random(99)
    with psycopg.connect(conninfo) as conn:
        while not stop.is_set():
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            for k in range(9):
                centre = flip_random(rng.choice(stored), rng.randint(0, 4), rng)
                by_index = ids_of_plan(conn, centre, k, index=True)
                assert by_index == ids_of_plan(conn, centre, k, index=False), (centre, k)
                compared.append(k)
            conn.rollback()


def sample_stats(conninfo: str, stop: threading.Event, samples: list[dict]) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while not stop.is_set():
            samples.append(stats(conn))
            stop.wait(0.005)


def over_bound_only_while_full(samples: list[dict], bound: int, small: int) -> bool:
    """Whether every sample whose pending and sealed rows reach ``bound`` comes
    in a rise (the samples since the list last held under ``small`` rows) in
    which some sample saw the metapage without room for a flush (mih_flush.c's
    mih_flush_has_room: the run sets at MAX_SETS, or the retired list, with the
    entries merges claim, full): the one state in which no flush seals the list."""
    full_since_small = False
    for sample in samples:
        listed = sample["pending_rows"] + sample["sealed_rows"]
        if listed < small:
            full_since_small = False
        full_since_small = (full_since_small or sample["run_sets"] >= MAX_SETS
                            or sample["retired"] + sample["merging_sets"] + 1 > MAX_RETIRED)
        if listed >= bound and not full_since_small:
            return False
    return True


def test_writers_without_vacuum_keep_sets_and_pending_bounded_and_answers_exact(db: psycopg.Connection) -> None:
    rng = random.Random(29)
    fps = planted_fingerprints(rng, 2000)
    load(db, fps)
    stored = [fp for fp in fps if fp is not None]
    info = db.info
    conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    writer_info = f"{conninfo} options='-c simhash.mih_pending_limit={PENDING_LIMIT}'"
    written: list[tuple[int, int]] = []
    samples: list[dict] = []
    compared: list[int] = []
    errors = run_together(
        [lambda seed=seed: write_rows(writer_info, seed, stored, written) for seed in range(WRITERS)],
        [lambda stop: compare_in_snapshots(conninfo, stored, stop, compared),
         lambda stop: sample_stats(conninfo, stop, samples)])
    assert not errors
    assert compared and samples
    # merges run beside the flushes (a worker, or a writer once the sets no merge claims reach
    # twice the cap): more sets while they catch up (a flush never goes past the metapage's
    # room: the pending bound below says flushes went on), the cap once they have
    assert max(s["run_sets"] for s in samples) <= MAX_SETS
    wait_for_merges(db, "docs_fp")
    # a flush off the lock: rows go on arriving while one runs, the next flush takes them; past
    # PENDING_BOUND times the limit writers wait for the flusher at work (CI: up to 389 rows with the
    # wait, 2,743 without it), but while merges lag (no room for another set) nothing is sealed and
    # the list grows until they catch up (CI, every core busy: 4,454). So the list stays under a
    # loose bound except in a rise that began while the sets filled the metapage's room
    assert over_bound_only_while_full(samples, 20 * PENDING_LIMIT, PENDING_BOUND * PENDING_LIMIT)
    final = stats(db)
    inserted = WRITERS * ROWS_PER_WRITER
    # flushes never stopped: none took more than the bound above
    assert final["flushes"] >= inserted // (20 * PENDING_LIMIT) and final["merges"] > 0
    # every row with a fingerprint in one run set or the pending list, once (no VACUUM, no delete)
    assert sum(final["set_rows"]) + final["pending_rows"] + final["sealed_rows"] == len(stored) + inserted
    size = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    db.execute("SELECT simhash_mih_check('docs_fp')")

    rows = dict(enumerate(fps)) | dict(written)
    present = [(i, fp) for i, fp in rows.items() if fp is not None]
    row_ids = np.array([i for i, _ in present], dtype=np.int64)
    values = np.array([fp for _, fp in present], dtype=np.uint64)
    db.execute("SET enable_seqscan = off; SET enable_indexscan = off")  # not the primary key's index scan
    for k in range(9):
        for _ in range(12):
            centre = flip_random(rng.choice(stored + [fp for _, fp in written]), rng.randint(0, k + 1), rng)
            expected = sorted(row_ids[np.bitwise_count(values ^ np.uint64(centre)) <= k].tolist())
            assert ids(db, centre, k) == expected, (centre, k)
    db.execute("REINDEX INDEX docs_fp")
    rebuilt = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    # recycled by the workers, not left for a VACUUM: without reuse the index would hold every set
    # page ever written (the flushed rows, then each merge's rows again); with it, about half of
    # those. How much, depends on how long snapshots kept pages retired: the readers', and an
    # autovacuum ANALYZE's (which counts the pair distances of its sample, a fraction of a second
    # of CPU), and so on the machine's speed and load (0.45-0.6 of the pages ever written idle;
    # 0.59-0.73 seen with every core busy): at most 0.85, which an index that never reused a page
    # (size about never_reused) fails.
    # Pending pages come on top: each lane's pages and a sealed chain of as many, live at once
    # (with a limit of 128 rows most of a lane's pages are partly filled tails)
    indexed = len(stored) + inserted
    never_reused = rebuilt * (indexed + final["merged_rows"]) / indexed
    pending_pages = 2 * LANES * 2 * BLCKSZ
    assert final["recycled"] > 0 and size <= never_reused * 0.85 + pending_pages, (size, rebuilt, final)


def fail_for_temp_file_limit(db: psycopg.Connection, sql: str) -> None:
    """Runs sql, whose flush or merge spills, under a temp_file_limit it exceeds: the ERROR."""
    db.execute("SET temp_file_limit = '64kB'")
    error = error_of(db, sql)
    assert error.sqlstate == "53400" and "temp_file_limit" in str(error)
    db.execute("RESET temp_file_limit")


def test_a_failed_flush_leaves_a_sealed_list_scans_read_and_the_next_flush_takes_over(db: psycopg.Connection) -> None:
    """A flush that fails midway (here: its sort's spill exceeds
    temp_file_limit) rolls back its transaction, not the sealed pending list:
    scans read it, the checker accepts it, and the next flush sorts it."""
    rng = random.Random(5)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    db.execute("SET simhash.mih_background_merges = off")  # the insert flushes itself (a worker has its own work_mem)
    db.execute("SET simhash.mih_pending_limit = 20000")
    db.execute("INSERT INTO docs SELECT 1000 + g, hashint8extended(g, 11)::simhash64 FROM generate_series(1, 19999) g")
    assert (stats(db)["pending_rows"], stats(db)["flushes"]) == (19999, 0)
    db.execute("SET work_mem = '64kB'")
    fail_for_temp_file_limit(db, "INSERT INTO docs VALUES (30000, '5'::simhash64)")
    sealed = stats(db)
    assert (sealed["sealed_rows"], sealed["pending_rows"], sealed["flushes"]) == (20000, 0, 0)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    centres = [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(10)] + \
        [int(r[0]) for r in db.execute("SELECT fp::text FROM docs WHERE id IN (1500, 17000)")]
    for centre in centres:
        for k in (0, 4, 8):
            assert ids_of_plan(db, centre, k, index=True) == ids_of_plan(db, centre, k, index=False)
    # the insert that brings the pending list to its bound (twice the limit: no flusher came)
    # takes the sealed list over
    db.execute("SET simhash.mih_pending_limit = 1")
    db.execute("INSERT INTO docs VALUES (30001, '6'::simhash64)")
    assert (stats(db)["sealed_rows"], stats(db)["flushes"]) == (20000, 0)
    db.execute("INSERT INTO docs VALUES (30002, '7'::simhash64)")
    now = stats(db)
    assert (now["sealed_rows"], now["flushes"]) == (0, 1) and sum(now["set_rows"]) + now["pending_rows"] == 1000 + 20002
    # the failed flush may have written pages: VACUUM looks for them and frees none in use
    assert now["lost_pages"]
    db.execute("VACUUM docs")
    assert not stats(db)["lost_pages"]
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in centres:
        assert ids_of_plan(db, centre, 8, index=True) == ids_of_plan(db, centre, 8, index=False)


@pytest.mark.parametrize("background", ["on", "off"])
def test_the_insert_that_fills_the_list_leaves_its_flush_to_a_worker(db: psycopg.Connection, background: str) -> None:
    """The insert that fills the pending list seals it and hands it to a
    flush worker: its own flush would spill past its temp_file_limit, yet it
    succeeds, and the worker (the server's settings) flushes the list.  With
    background work off, the insert flushes it itself before it returns."""
    rng = random.Random(6)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    db.execute(f"SET simhash.mih_background_merges = {background}")
    db.execute("SET simhash.mih_pending_limit = 20000")
    db.execute("INSERT INTO docs SELECT 1000 + g, hashint8extended(g, 13)::simhash64 FROM generate_series(1, 19999) g")
    if background == "on":
        db.execute("SET work_mem = '64kB'; SET temp_file_limit = '64kB'")
        db.execute("INSERT INTO docs VALUES (30000, '5'::simhash64)")
        right_after = stats(db)
        db.execute("RESET work_mem; RESET temp_file_limit")
        # sealed, and flushed by the worker unless it already has (its start takes a few ms)
        assert right_after["pending_rows"] == 0
        assert (right_after["sealed_rows"], right_after["flushes"]) in ((20000, 0), (0, 1)), right_after
        now = wait_for_flush(db, "docs_fp")
    else:
        db.execute("INSERT INTO docs VALUES (30000, '5'::simhash64)")
        now = stats(db)
    assert (now["pending_rows"], now["sealed_rows"], now["flushes"], now["set_rows"], now["lost_pages"]) == \
        (0, 0, 1, [1000, 20000], False)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(5)] + [5]:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False)


def test_a_role_that_may_not_log_in_still_hands_its_flush_to_a_worker(db: psycopg.Connection) -> None:
    """Rows inserted under a role without LOGIN (SET ROLE, as a SECURITY
    DEFINER function's owner would be): the worker that flushes them must not
    connect as that role, which PostgreSQL would refuse (the sealed list
    would then wait for its bound)."""
    rng = random.Random(8)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    name = f"writer_{uuid.uuid4().hex[:10]}"
    db.execute(f"CREATE ROLE {name} NOLOGIN")
    try:
        db.execute(f"GRANT SELECT, INSERT ON docs TO {name}")
        db.execute(f"SET ROLE {name}")
        db.execute("SET simhash.mih_pending_limit = 200")
        db.execute("INSERT INTO docs SELECT 1000 + g, hashint8extended(g, 17)::simhash64 FROM generate_series(1, 200) g")
        db.execute("RESET ROLE")
        now = wait_for_flush(db, "docs_fp", timeout=30)
    finally:
        db.execute("RESET ROLE")
        db.execute(f"DROP OWNED BY {name}")
        db.execute(f"DROP ROLE {name}")
    assert (now["pending_rows"], now["sealed_rows"], now["flushes"], now["set_rows"]) == (0, 0, 1, [1000, 200])
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(5)]:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False)


def test_a_table_owned_by_a_role_that_may_not_log_in_is_flushed_and_merged_by_the_workers(
        db: psycopg.Connection) -> None:
    """A table (and so its index) owned by a role without LOGIN, written by
    that role: the flush workers, and the merge workers they start, connect
    with no role given (the bootstrap superuser; PostgreSQL 17 and later
    refuse a worker a role given that may not log in), so every sealed list
    is flushed by a worker, the flushes' merges run, and answers equal
    brute force."""
    limit = 100
    batches = 8
    insert = "INSERT INTO docs SELECT g, hashint8extended(g, 18)::simhash64 FROM generate_series(%s::bigint, %s) g"
    load(db, [random.Random(18).getrandbits(64) for _ in range(1000)])
    owner = f"owner_{uuid.uuid4().hex[:10]}"
    db.execute(f"CREATE ROLE {owner} NOLOGIN")
    try:
        db.execute(f"ALTER TABLE docs OWNER TO {owner}")
        db.execute(f"SET simhash.mih_pending_limit = {limit}")
        for batch in range(batches):
            db.execute(f"SET ROLE {owner}")
            db.execute(insert, (1000 + batch * limit, 1000 + (batch + 1) * limit - 1))
            db.execute("RESET ROLE")
            # each batch seals the list, and its worker flushes it (the insert never does: the list
            # never reaches its bound)
            now = wait_for_flush(db, "docs_fp", timeout=30)
            assert (now["pending_rows"], now["sealed_rows"], now["flushes"]) == (0, 0, batch + 1), now
        now = wait_for_merges(db, "docs_fp", timeout=30)
    finally:
        db.execute("RESET ROLE")
        db.execute(f"ALTER TABLE docs OWNER TO {db.execute('SELECT current_user').fetchone()[0]}")
        db.execute(f"DROP ROLE {owner}")
    assert now["flushes"] == batches and now["merges"] > 0 and not now["lost_pages"], now
    assert sum(now["set_rows"]) == 1000 + batches * limit, now
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    fps = [int(r[0]) for r in db.execute("SELECT fp::text FROM docs ORDER BY id")]   # ids 0 to 1799
    rng = random.Random(19)
    for centre in [flip_random(fp, rng.randint(0, 4), rng) for fp in fps[5::150]] + [rng.getrandbits(64)]:
        assert ids_of_plan(db, centre, 6, index=True) == brute_force_within(fps, centre, 6)


def test_a_sealed_list_no_worker_flushes_waits_until_the_pending_list_reaches_its_bound(db: psycopg.Connection) -> None:
    """A sealed list whose worker could not flush it (here: it cannot lock
    the table) stays sealed, read by queries, while the pending list grows
    past the limit; the insert that brings it to PENDING_BOUND times the
    limit flushes the sealed list itself, which no flusher had begun: no
    pages lost."""
    rng = random.Random(7)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    limit = 500
    db.execute(f"SET simhash.mih_pending_limit = {limit}")
    insert = "INSERT INTO docs SELECT g, hashint8extended(g, 14)::simhash64 FROM generate_series(%s::bigint, %s) g"
    with db.transaction():
        # conflicts with the RowExclusiveLock a worker only tries for: the worker leaves
        db.execute("LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE")
        db.execute(insert, (10_000, 10_000 + limit - 1))
        assert (stats(db)["sealed_rows"], stats(db)["pending_rows"], stats(db)["flushes"]) == (limit, 0, 0)
        db.execute(insert, (20_000, 20_000 + PENDING_BOUND * limit - 2))
        waiting = stats(db)
        assert (waiting["sealed_rows"], waiting["pending_rows"], waiting["flushes"]) == \
            (limit, PENDING_BOUND * limit - 1, 0)
        centres = [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(4)] + \
            [int(r[0]) for r in db.execute("SELECT fp::text FROM docs WHERE id IN (10001, 20002)")]
        for centre in centres:
            assert ids_of_plan(db, centre, 5, index=True) == ids_of_plan(db, centre, 5, index=False)
        db.execute(insert, (30_000, 30_000))
        now = stats(db)
        assert (now["sealed_rows"], now["pending_rows"], now["flushes"], now["set_rows"], now["lost_pages"]) == \
            (0, PENDING_BOUND * limit, 1, [1000, limit], False)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in centres:
        assert ids_of_plan(db, centre, 5, index=True) == ids_of_plan(db, centre, 5, index=False)


def test_while_no_worker_can_work_inserts_keep_flushing_merging_and_recycling(db: psycopg.Connection) -> None:
    """Workers start but cannot do their jobs (here: the inserting transaction
    holds a lock their table lock conflicts with; a worker that fails at
    connecting is the same): the inserts themselves flush at the pending
    list's bound, merge, and recycle, so the list stays bounded through a
    hundred limits of rows, however many sets and retired entries the
    flushes leave on the way."""
    rng = random.Random(9)
    fps = [rng.getrandbits(64) for _ in range(1000)]
    load(db, fps)
    limit, batch = 64, 32
    db.execute(f"SET simhash.mih_pending_limit = {limit}")
    listed = []
    with db.transaction():
        db.execute("LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE")  # every worker started leaves at once
        for start in range(10_000, 10_000 + 100 * limit, batch):
            db.execute("INSERT INTO docs SELECT g, hashint8extended(g, 15)::simhash64"
                       " FROM generate_series(%s::bigint, %s) g", (start, start + batch - 1))
            now = stats(db)
            listed.append(now["pending_rows"] + now["sealed_rows"])
            assert now["run_sets"] <= MAX_SETS
    # the bound and a statement's rows (its inserts flush only at the bound)
    # a sealed list up to the bound (and a statement's rows: its inserts check the bound as they go)
    # beside a pending list up to the bound, whatever the rows inserted: the list does not grow
    assert max(listed) <= 2 * PENDING_BOUND * limit + batch, listed
    assert now["flushes"] >= 100 // (PENDING_BOUND + 1) and now["merges"] > 0 and now["recycled"] > 0, now
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(5)]:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False)


def test_a_failed_merge_leaves_claims_the_next_merge_drops(db: psycopg.Connection) -> None:
    """A merge that fails midway (its sort's spill exceeds temp_file_limit)
    leaves its claims in the metapage and its sets in place: answers stay
    exact, and the next flush's merge drops the claims and merges."""
    rng = random.Random(8)
    fps = [rng.getrandbits(64) for _ in range(40_000)]
    load(db, fps)
    db.execute("SET simhash.mih_background_merges = off")
    db.execute("SET simhash.mih_pending_limit = 20000")
    db.execute("SET maintenance_work_mem = '1MB'")  # the fold of 60,000 rows spills; the flush does not
    db.execute("INSERT INTO docs SELECT 100000 + g, hashint8extended(g, 12)::simhash64 FROM generate_series(1, 19999) g")
    fail_for_temp_file_limit(db, "INSERT INTO docs VALUES (200000, '9'::simhash64)")
    failed = stats(db)
    assert (failed["run_sets"], failed["set_rows"], failed["merging_sets"], failed["merges"]) == (2, [40000, 20000], 2, 0)
    centres = [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(8)]
    for centre in centres:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False)
    db.execute("SET simhash.mih_pending_limit = 1")
    db.execute("INSERT INTO docs VALUES (200001, '10'::simhash64)")
    now = stats(db)
    assert (now["run_sets"], now["set_rows"], now["merging_sets"], now["merges"]) == (1, [60001], 0, 1)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in centres:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False)
    # a merge failed: VACUUM looks for the pages it may have left (none here: it failed while
    # sorting) once no flush or merge runs, while writers go on flushing and merging, and frees
    # nothing any run set, list or retired entry reaches: answers stay exact, the checker passes
    assert stats(db)["lost_pages"]
    vacuum_while_writing(db, [1, 2])
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in centres + [flip_random(fp, 2, rng) for fp in fps[-5:]]:
        for k in (3, 8):
            assert ids_of_plan(db, centre, k, index=True) == ids_of_plan(db, centre, k, index=False)


def vacuum_while_writing(db: psycopg.Connection, seeds: list[int]) -> None:
    """VACUUM in a loop while two writers insert (a flush every 64 rows)
    until one VACUUM has freed the pages a failed flush or merge left
    (simhash_mih_stats' lost_pages back to false); after the writers, with
    nothing else running, if none managed meanwhile."""
    info = db.info
    conninfo = (f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
                " options='-c simhash.mih_pending_limit=64'")

    def write(seed: int) -> None:
        wrng = random.Random(seed)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            for i in range(1500):
                conn.execute("INSERT INTO docs VALUES (%s, %s::text::simhash64)",
                             (10_000_000 * (seed + 1) + i, str(wrng.getrandbits(64))))

    def vacuum(stop) -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            while mih_stats(conn, "docs_fp")["lost_pages"] and not stop.is_set():
                conn.execute("VACUUM docs")
    errors = run_together([lambda seed=seed: write(seed) for seed in seeds], [vacuum])
    assert not errors, errors
    if stats(db)["lost_pages"]:
        wait_for_merges(db, "docs_fp")
        db.execute("VACUUM docs")
    assert not stats(db)["lost_pages"]


def nice_of(pid: int) -> int | None:
    """A process's nice value as the kernel reports it (/proc/<pid>/stat,
    field 19), or None once it has exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[16])


@pytest.mark.parametrize("setting", [None, 3, 0])
def test_merge_workers_run_at_the_lower_priority_set(db: psycopg.Connection, setting: int | None) -> None:
    """A merge worker lowers its CPU priority by simhash.mih_merge_nice (its
    default, or the database's setting, which workers read as they start)
    from the server's: the kernel reports each merge worker caught while
    merging that much nicer than a backend of the server."""
    if setting is not None:
        db.execute(f'ALTER DATABASE "{db.info.dbname}" SET simhash.mih_merge_nice = {setting}')
    server = nice_of(db.info.backend_pid)
    rng = random.Random(12)
    load(db, [rng.getrandbits(64) for _ in range(1000)])   # the library loaded: its settings known
    increment = int(db.execute("SELECT current_setting('simhash.mih_merge_nice')").fetchone()[0]) \
        if setting is None else setting
    db.execute(f"SET simhash.mih_pending_limit = {PENDING_LIMIT}")
    merging = ("SELECT pid FROM pg_stat_activity WHERE backend_type = 'simhash_mih merge'"
               " AND query = 'simhash_mih: merging' AND datname = current_database()")
    seen: list[int] = []
    first = 1000
    while len(seen) < 3 and first < 200_000:
        db.execute("INSERT INTO docs SELECT g, hashint8extended(g, 12)::simhash64 FROM generate_series(%s::bigint, %s) g",
                   (first, first + 4 * PENDING_LIMIT - 1))
        first += 4 * PENDING_LIMIT
        for _ in range(20):   # the merges that insert's flushes start, while they run
            seen += [n for (pid,) in db.execute(merging).fetchall() if (n := nice_of(pid)) is not None]
    assert len(seen) >= 3, "no merge worker caught while merging"
    assert set(seen) == {min(server + increment, 19)}, (server, increment, seen)
    wait_for_merges(db, "docs_fp")
    db.execute("SELECT simhash_mih_check('docs_fp', true)")


def test_a_temporary_tables_index_merges_in_the_inserting_backend(db: psycopg.Connection) -> None:
    """No worker can read a temporary table's buffers: its merges run in the
    backend that inserts, and answers stay exact."""
    db.execute("CREATE TEMPORARY TABLE docs (id bigint PRIMARY KEY, fp simhash64)")
    db.execute("INSERT INTO docs SELECT g, hashint8extended(g, 3)::simhash64 FROM generate_series(1, 1000) g")
    db.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
    db.execute("SET simhash.mih_pending_limit = 50")
    for start in range(1000, 3000, 100):
        db.execute("INSERT INTO docs SELECT g, hashint8extended(g, 3)::simhash64 FROM generate_series(%s::bigint, %s) g",
                   (start + 1, start + 100))
    now = stats(db)
    assert now["merges"] > 0 and now["merging_sets"] == 0 and now["run_sets"] <= SET_CAP
    rng = random.Random(4)
    for _ in range(10):
        centre = flip_random(int(db.execute("SELECT fp::text FROM docs ORDER BY random() LIMIT 1").fetchone()[0]),
                             rng.randint(0, 3), rng)
        assert ids_of_plan(db, centre, 5, index=True) == ids_of_plan(db, centre, 5, index=False)


@pytest.mark.parametrize("new_storage", ["CREATE INDEX", "TRUNCATE"])
def test_the_transaction_that_created_the_index_flushes_and_merges_itself(db: psycopg.Connection,
                                                                          new_storage: str) -> None:
    """No worker can lock the table of an index this transaction created, or
    gave new storage (TRUNCATE), nor see it, until it commits: the inserting
    backend flushes each list it seals itself, as where no worker can start —
    no sealed list waits for the pending list to reach its bound — and merges
    itself; answers stay exact in the transaction and after it."""
    limit = 50
    db.execute(f"SET simhash.mih_pending_limit = {limit}")
    insert = "INSERT INTO docs SELECT g, hashint8extended(g, 15)::simhash64 FROM generate_series(%s::bigint, %s) g"
    if new_storage == "TRUNCATE":
        load(db, [random.Random(9).getrandbits(64) for _ in range(500)])
    with db.transaction():
        if new_storage == "TRUNCATE":
            db.execute("TRUNCATE docs")
        else:
            db.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64)")
            db.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
        for start in range(0, 2000, 100):
            db.execute(insert, (start, start + 99))
            now = stats(db)
            assert (now["sealed_rows"], now["pending_rows"]) == (0, 0), now
        assert now["flushes"] == 2000 // limit and now["merges"] > 0 and now["merging_sets"] == 0, now
        assert now["run_sets"] <= SET_CAP and sum(now["set_rows"]) == 2000, now
        fps = [int(r[0]) for r in db.execute("SELECT fp::text FROM docs ORDER BY id")]   # ids 0 to 1999
        rng = random.Random(10)
        centres = [flip_random(fp, rng.randint(0, 3), rng) for fp in fps[7::400]] + [rng.getrandbits(64)]
        for centre in centres:
            assert ids_of_plan(db, centre, 5, index=True) == brute_force_within(fps, centre, 5)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in centres:
        assert ids_of_plan(db, centre, 5, index=True) == brute_force_within(fps, centre, 5)


def indexed_table(server, fps: list[int]) -> psycopg.Connection:
    """Table docs of `fps` on an own server, with its simhash_mih index: the connection (closed as a context)."""
    conn = connect(server)
    conn.execute("CREATE EXTENSION simhash")
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64)")
    copy_rows(conn, "COPY docs FROM STDIN", enumerate(fps))
    conn.execute(f"CREATE INDEX docs_fp ON docs USING {MIH.format(options='')}")
    return conn


def test_an_index_built_before_the_write_path_fields_flushes_and_merges(tmp_path_factory) -> None:
    """An index an older version built has a metapage whose pd_lower ends at
    the scope column count (the fields added since read 0); generic WAL zeroes
    what lies past pd_lower, so each update first stretches it over today's
    fields: flushes, sealed lists, merges and recycling then work there too."""
    with own_server(tmp_path_factory.mktemp("old_meta")) as server:
        rng = random.Random(12)
        fps = [rng.getrandbits(64) for _ in range(3000)]
        indexed_table(server, fps).close()

        def as_built_before(file) -> None:
            old_end = CONTENTS + META_NSCOPE + 8  # MAXALIGN of the fields up to nscope
            struct.pack_into("<H", file.data, PD_LOWER, old_end)
            file.data[old_end:BLCKSZ] = bytes(BLCKSZ - old_end)
        edit_index(server, as_built_before)
        with connect(server) as conn:
            conn.execute("SET simhash.mih_pending_limit = 64")
            for batch in range(30):
                conn.execute("INSERT INTO docs SELECT 10000 * %s + g, hashint8extended(g, %s)::simhash64"
                             " FROM generate_series(1, 50) g", (batch + 1, batch))
            now = wait_for_merges(conn, "docs_fp")
            # a flush at least every PENDING_BOUND times the limit and a batch (flush workers behind)
            assert now["flushes"] >= 30 * 50 // (PENDING_BOUND * 64 + 50) and now["merges"] > 0
            assert sum(now["set_rows"]) + now["pending_rows"] + now["sealed_rows"] == 3000 + 30 * 50
            conn.execute("SELECT simhash_mih_check('docs_fp', true)")
            for centre in [flip_random(rng.choice(fps), 2, rng) for _ in range(5)] + [fps[0]]:
                assert ids_of_plan(conn, centre, 8, index=True) == ids_of_plan(conn, centre, 8, index=False)


INVALID_BLOCK = 0xFFFFFFFF
INSERT_RANGE = "INSERT INTO docs SELECT g, hashint8extended(g, 29)::simhash64 FROM generate_series(%s::bigint, %s) g"


def assert_exact(conn: psycopg.Connection, centres: list[int]) -> None:
    for centre in centres:
        assert ids_of_plan(conn, centre, 6, index=True) == ids_of_plan(conn, centre, 6, index=False), centre


def test_writers_append_to_their_own_lanes_and_a_seal_joins_the_lanes(db: psycopg.Connection) -> None:
    """Writers of different lanes append to different tails; a lane's count
    leaves its tail's rows out (a page's rows join it when the next page is
    linked), stats and the checker count them all, queries read every lane
    (a tail a writer holds last: simhash.debug_busy_tails takes every tail so);
    the seal joins the lanes into one sealed chain of exactly their rows,
    and its flush sorts them all into one set."""
    rng = random.Random(31)
    fps = [rng.getrandbits(64) for _ in range(500)]
    load(db, fps)
    info = db.info
    conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    writers = backends_of_other_lanes(conninfo, 3)
    counts = [PENDING_CAP + 117, 255, 40]
    try:
        for n, (writer, count) in enumerate(zip(writers, counts)):
            writer.execute(INSERT_RANGE, (10_000 * (n + 1), 10_000 * (n + 1) + count - 1))
        lanes = lanes_of(db)
        assert len(lanes) == LANES
        used = {writer.info.backend_pid % LANES: count for writer, count in zip(writers, counts)}
        assert {i for i, (head, _, _) in enumerate(lanes) if head != INVALID_BLOCK} == set(used)
        for i, count in used.items():
            head, tail, rows = lanes[i]
            # two pages in the first writer's lane, the first one's rows in the count
            assert (rows, head != tail) == ((PENDING_CAP, True) if count > PENDING_CAP else (0, False))
    finally:
        for writer in writers:
            writer.close()
    total = sum(counts)
    assert (stats(db)["pending_rows"], stats(db)["sealed_rows"]) == (total, 0)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    new = [int(r[0]) for r in db.execute("SELECT fp::text FROM docs WHERE id IN (10005, 10600, 20001, 30039)")]
    centres = new + [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(4)]
    assert_exact(db, centres)
    # a tail a writer holds is read after every other page: each lane's tail so taken
    db.execute("SET simhash.debug_busy_tails = on")
    assert_exact(db, centres)
    db.execute("RESET simhash.debug_busy_tails")
    with db.transaction():
        # the worker cannot lock the table: the sealed chain stays for the checker to walk
        db.execute("LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE")
        db.execute(f"SET LOCAL simhash.mih_pending_limit = {total + 1}")
        db.execute(INSERT_RANGE, (40_000, 40_000))
        assert (stats(db)["sealed_rows"], stats(db)["pending_rows"], stats(db)["flushes"]) == (total + 1, 0, 0)
        assert all(head == INVALID_BLOCK for head, _, _ in lanes_of(db))
        db.execute("SELECT simhash_mih_check('docs_fp', true)")
        assert_exact(db, centres)
        # the insert that brings the pending list to its bound flushes the sealed chain itself
        db.execute(INSERT_RANGE, (50_000, 50_000 + PENDING_BOUND * (total + 1) - 1))
        now = stats(db)
        assert (now["sealed_rows"], now["pending_rows"], now["set_rows"], now["lost_pages"]) == \
            (0, PENDING_BOUND * (total + 1), [500, total + 1], False)
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    assert_exact(db, centres)


def test_tails_writers_hold_are_read_right_under_writers_deletes_and_vacuum(db: psycopg.Connection) -> None:
    """Queries read a lane's tail a writer holds without its lock (where the
    read can be trusted): with 4 writers appending near copies of a few
    centres one row a transaction (their tails busy, past counts of 255 and
    256), rows deleted and VACUUM compacting the pending pages meanwhile, every
    answer in a snapshot equals the sequential scan's in that snapshot."""
    rng = random.Random(61)
    centres = [rng.getrandbits(64) for _ in range(4)]
    load(db, [flip_random(rng.choice(centres), rng.randint(0, 6), rng) for _ in range(300)])
    info = db.info
    conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    writer_info = f"{conninfo} options='-c simhash.mih_pending_limit=1000000'"  # every row stays in the lanes
    written: list[int] = []
    compared: list[int] = []
    vacuums: list[int] = []

    def write(seed: int) -> None:
        wrng = random.Random(seed)
        with psycopg.connect(writer_info, autocommit=True) as conn:
            for i in range(1500):
                row = 1_000_000 * (seed + 1) + i
                conn.execute("INSERT INTO docs VALUES (%s, %s::text::simhash64)",
                             (row, str(flip_random(wrng.choice(centres), wrng.randint(0, 4), wrng))))
                written.append(row)

    def delete_and_vacuum(stop: threading.Event) -> None:
        vrng = random.Random(62)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            while not stop.is_set():
                if written:
                    conn.execute("DELETE FROM docs WHERE id = ANY(%s)", ([vrng.choice(written) for _ in range(20)],))
                conn.execute("VACUUM docs")
                vacuums.append(1)

    def compare(stop: threading.Event) -> None:
        qrng = random.Random(63)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            while not stop.is_set():
                centre, k = qrng.choice(centres), qrng.randint(3, 6)
                with conn.transaction():  # one snapshot for both
                    by_index = ids_of_plan(conn, centre, k, index=True)
                    assert by_index == ids_of_plan(conn, centre, k, index=False), (centre, k)
                compared.append(k)

    errors = run_together([lambda seed=seed: write(seed) for seed in range(4)], [delete_and_vacuum, compare])
    assert not errors, errors
    assert len(compared) > 50 and vacuums
    final = stats(db)
    assert final["flushes"] == 0 and final["pending_rows"] > 4 * 256  # tails went past a count of 256
    db.execute("SELECT simhash_mih_check('docs_fp', true)")
    for centre in centres:
        assert ids_of_plan(db, centre, 6, index=True) == ids_of_plan(db, centre, 6, index=False), centre


def test_an_index_built_before_lanes_keeps_its_pending_list_and_starts_lanes(tmp_path_factory) -> None:
    """An index an older version wrote has one pending list, in lane 0's
    place, whose count includes its tail's rows, and no lanes after it (the
    metapage reads 0 there): scans, stats and the checker read it so, and the
    first insert that links a page starts the lanes, lane 0's count leaving
    its tail out from then on."""
    with own_server(tmp_path_factory.mktemp("before_lanes")) as server:
        rng = random.Random(41)
        fps = [rng.getrandbits(64) for _ in range(2000)]
        with indexed_table(server, fps) as conn:
            conn.execute(INSERT_RANGE, (10_000, 10_000 + PENDING_CAP + 99))

        def as_written_before_lanes(f) -> None:
            head, tail, rows = f.lanes()[f.pending_lane()]
            before = rows + f.get(tail, 2, "<H")
            f.data[CONTENTS + META_NLANES:CONTENTS + META_MORE_LANES + 16 * (LANES - 1)] = \
                bytes(META_MORE_LANES + 16 * (LANES - 1) - META_NLANES)
            struct.pack_into("<IIq", f.data, CONTENTS + lane_offset(0), head, tail, before)
        edit_index(server, as_written_before_lanes)
        with connect(server) as conn:
            assert conn.execute("SELECT pending_rows FROM simhash_mih_stats('docs_fp')").fetchone()[0] == \
                PENDING_CAP + 100
            conn.execute("SELECT simhash_mih_check('docs_fp', true)")
            new = [int(r[0]) for r in conn.execute("SELECT fp::text FROM docs WHERE id IN (10000, 10650)")]
            centres = new + [flip_random(rng.choice(fps), rng.randint(0, 4), rng) for _ in range(4)]
            assert_exact(conn, centres)
            # the tail has room: an append under the exclusive lock, which starts the lanes
            conn.execute(INSERT_RANGE, (20_000, 20_000 + PENDING_CAP))
            lanes = lanes_of(conn)
            assert len(lanes) == LANES
            assert conn.execute("SELECT pending_rows FROM simhash_mih_stats('docs_fp')").fetchone()[0] == \
                2 * PENDING_CAP + 101
            conn.execute("SELECT simhash_mih_check('docs_fp', true)")
            assert_exact(conn, centres)
            conn.execute("SET simhash.mih_pending_limit = 64")
            conn.execute(INSERT_RANGE, (30_000, 30_000))
            now = wait_for_flush(conn, "docs_fp")
            assert (now["pending_rows"], now["sealed_rows"], sum(now["set_rows"]), now["lost_pages"]) == \
                (0, 0, 2000 + 2 * PENDING_CAP + 102, False)
            conn.execute("SELECT simhash_mih_check('docs_fp', true)")
            assert_exact(conn, centres)


@pytest.mark.parametrize("simd", ["auto", "avx2", "none"])
def test_pending_rows_at_every_distance_are_found_by_every_copy_of_the_comparison(db: psycopg.Connection,
                                                                                   simd: str) -> None:
    """A query compares the pending rows eight at a time where the CPU has AVX2
    (simhash_within_many; simhash.debug_simd picks the copy): rows at every
    distance from the centre, on pages whose counts are no multiple of 8,
    against brute force at every radius, each copy; and the index hands the
    heap no row outside the ball (the heap's recheck would hide those)."""
    rng = random.Random(29)
    centre = rng.getrandbits(64)
    # rows 0..64 bits from the centre, each distance several times, then random ones
    fps = [flip_random(centre, d % 65, rng) for d in range(65 * 5)] + [rng.getrandbits(64) for _ in range(700)]
    rng.shuffle(fps)
    load(db, [])  # an empty index: every row inserted stays pending (no flush below the limit)
    db.execute(f"SET simhash.mih_pending_limit = {len(fps) + 1}")
    copy_rows(db, "COPY docs FROM STDIN", ((i, str(fp)) for i, fp in enumerate(fps)))
    assert stats(db)["pending_rows"] == len(fps) and len(fps) % PENDING_CAP % 8 != 0
    db.execute(f"SET simhash.debug_simd = {simd}")
    db.execute("SET enable_seqscan = off")
    query_sql = "SELECT id FROM docs WHERE fp <@ (%s::simhash64, %s)::simhash64_ball"
    for k in [0, 1, 2, 3, 7, 8, 31, 32, 33, 63, 64]:
        for query in (centre, flip_random(centre, 1, rng)):
            found = sorted(row[0] for row in db.execute(query_sql, (str(query), k)))
            assert found == brute_force_within(fps, query, k), (k, query)
            plan = db.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query_sql, (str(query), k)).fetchone()[0][0]["Plan"]
            assert plan["Node Type"] == "Bitmap Heap Scan" and plan.get("Rows Removed by Index Recheck", 0) == 0
