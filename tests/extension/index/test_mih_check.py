"""simhash_mih_check, the checker of simhash_mih indexes (what amcheck is for
btree and GIN): a healthy index passes after build, inserts, flushes of the
pending list, deletes and VACUUM; a page corrupted on disk is an ERROR naming
the block (index_corrupted, XX002), a heap row missing from the index is
found, and no corruption crashes the server — neither the checker nor the
queries, inserts and VACUUM that read the same pages (every width and count a
page holds is checked before use in scans too).

The page offsets come from toolbox.mih_pages (page format 2).
"""

from __future__ import annotations

import random

import psycopg
import pytest

from pysimhash_sql.throwaway import ThrowawayServer
from toolbox import copy_rows, error_of
from toolbox.data import planted_fingerprints
from toolbox.mih_pages import (BLCKSZ, CONTENTS, DIR_CAP, KIND_DELETED, META_NSETS, PENDING_CAP, RUN_BUCKETS,
                               RUN_MAX_ENTRIES, SET0, SET0_NPAGES, IndexFile, connect, crashed, edit_index,
                               own_server)

INDEX_CORRUPTED = "XX002"
FEATURE_NOT_SUPPORTED = "0A000"  # an index of another page format (test_mih_format.py)


def load(conn: psycopg.Connection, rows: int, seed: int = 1, pending: int = 0) -> list[int | None]:
    """rows rows in one run set, then `pending` more in the pending list."""
    fps = planted_fingerprints(random.Random(seed), rows + pending)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    copy_rows(conn, "COPY docs FROM STDIN", enumerate(fps[:rows]))
    conn.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
    copy_rows(conn, "COPY docs FROM STDIN", ((rows + i, fp) for i, fp in enumerate(fps[rows:])))
    return fps


def check(conn: psycopg.Connection, heapallindexed: bool = True) -> None:
    conn.execute("SELECT simhash_mih_check('docs_fp', %s)", (heapallindexed,))


def test_a_healthy_index_passes_after_every_kind_of_write(db: psycopg.Connection) -> None:
    db.execute("SET simhash.mih_pending_limit = 100")
    load(db, 3000)
    check(db)
    db.execute("INSERT INTO docs SELECT 100000 + g, hashint8extended(g, 7)::simhash64 FROM generate_series(1, 250) g")
    db.execute("INSERT INTO docs VALUES (200000, NULL)")
    check(db)  # two flushed run sets and a pending list
    db.execute("DELETE FROM docs WHERE id % 3 = 0")
    db.execute("UPDATE docs SET fp = (fp::bigint # 1)::simhash64 WHERE id % 5 = 0")
    check(db)
    db.execute("VACUUM docs")
    check(db, heapallindexed=False)
    check(db)
    db.execute("REINDEX INDEX docs_fp")
    check(db)


def test_an_empty_index_and_runs_of_every_count_pass(db: psycopg.Connection) -> None:
    db.execute("CREATE TABLE docs (id int, fp simhash64)")
    db.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
    check(db)
    db.execute("INSERT INTO docs SELECT g, hashint8extended(g % 50, 1)::simhash64 FROM generate_series(1, 2000) g")
    for runs in (1, 2, 5, 8):
        db.execute(f"DROP INDEX docs_fp; CREATE INDEX docs_fp ON docs USING simhash_mih (fp) WITH (runs = {runs})")
        check(db)


@pytest.mark.parametrize(("relation", "message"), [
    ("docs", '"docs" is not an index'),
    ("docs_pkey", 'index "docs_pkey" is not a simhash_mih index'),
    ("docs_gin", 'index "docs_gin" is not a simhash_mih index'),
])
def test_other_relations_are_refused(db: psycopg.Connection, relation: str, message: str) -> None:
    load(db, 100)
    db.execute("CREATE INDEX docs_gin ON docs USING gin (fp)")
    error = error_of(db, "SELECT simhash_mih_check(%s::regclass)", (relation,))
    assert (error.sqlstate, message in str(error)) == ("42809", True), str(error)


def test_only_superusers_may_run_it_unless_granted(db: psycopg.Connection) -> None:
    load(db, 100)
    db.execute("CREATE ROLE checker_nobody")
    db.execute("GRANT SELECT ON docs TO checker_nobody")
    db.execute("SET ROLE checker_nobody")
    try:
        assert error_of(db, "SELECT simhash_mih_check('docs_fp')").sqlstate == "42501"
    finally:
        db.execute("RESET ROLE")
    db.execute("GRANT EXECUTE ON FUNCTION simhash_mih_check(regclass, boolean) TO checker_nobody")
    db.execute("SET ROLE checker_nobody")
    try:
        error = error_of(db, "SELECT simhash_mih_check('docs_fp')")  # it may run, but not lock others' tables
        assert error.sqlstate == "42501"
    finally:
        db.execute("RESET ROLE")


# ---------- corruption on disk, on a server of the test's own ----------


# One server for the module: corrupted() loads the table once and puts the
# original index back after each corruption.
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with own_server(tmp_path_factory.mktemp("mih-check")) as started:
        yield started


# What else reads the corrupted pages: queries at several radii through the
# index (k = 30 reads the first run whole), an insert (the pending list's
# tail) and VACUUM (every first-run and pending page, the later runs' pages
# holding removed rows); the insert is rolled back so the table stays as the
# restored index knows it.
EXERCISE = [
    *(f"SET enable_seqscan = off; SELECT count(*) FROM docs WHERE hamming_within(fp, (SELECT fp FROM docs"
      f" WHERE fp IS NOT NULL ORDER BY id LIMIT 1 OFFSET {offset}), {k})" for offset, k in
      [(0, 0), (1, 3), (2, 5), (3, 8), (4, 30)]),
    "BEGIN; INSERT INTO docs VALUES (-1, '12345'); ROLLBACK",
    "VACUUM docs",
]


def corrupted(server: ThrowawayServer, corrupt) -> tuple[psycopg.Error | None, dict[str, psycopg.Error]]:
    """Loads the table (5000 rows in a run set, 100 pending), corrupts its
    index on disk with corrupt(IndexFile), and returns what simhash_mih_check
    raises (None if it passes) and what the statements of EXERCISE raise:
    only XX002 or 0A000, and no backend may crash."""
    with connect(server) as conn:
        if conn.execute("SELECT to_regclass('docs')").fetchone()[0] is None:
            conn.execute("CREATE EXTENSION simhash")
            load(conn, 5000, pending=100)
    index = edit_index(server, corrupt)
    raised_by = {}
    try:
        with connect(server) as conn:
            try:
                check(conn)
                error = None
            except psycopg.Error as raised:
                error = raised
            for sql in EXERCISE:
                try:
                    conn.execute(sql)
                except psycopg.Error as raised:
                    assert raised.sqlstate in {INDEX_CORRUPTED, FEATURE_NOT_SUPPORTED}, (sql, str(raised))
                    raised_by[sql] = raised
                    conn.execute("ROLLBACK")  # not RESET ALL: ignore_checksum_failure stays on
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert not crashed(server)
    finally:
        server.stop()
        index.restore()
        server.start()
    return error, raised_by


def run_field(name: str, value: int, run: int = 0, page: int = 0):
    """Sets a field of the header of a run page (run `run` of the first run set)."""
    return lambda f: f.set_run_field(f.run_page(run, page), name, value)


def flip_tid(f: IndexFile) -> None:
    """Flips the lowest bit of the first TID of the first run's first page (its line pointer)."""
    block = f.run_page(0)
    _, tids = f.run_areas(block)
    f.data[block * BLCKSZ + CONTENTS + tids] ^= 1


def pending_cycle(f: IndexFile) -> None:
    """The first pending page's next names itself, and its lane's tail is another block (a run page):
    following the lane to its tail goes round the cycle."""
    head = f.pending_head()
    f.put_u32(head, 4, head)
    f.put_u32(0, f.lane_offset(f.pending_lane()) + 4, f.run_page(0))


def base_beyond_keys(f: IndexFile) -> None:
    """A base key so high that the page's keys wrap around: out of order."""
    f.set_run_field(f.run_page(1, 1), "base", 2**64 - 1)


def widths_beyond_the_page(f: IndexFile) -> None:
    block = f.run_page(0)
    f.set_run_field(block, "key_bits", 64)
    f.set_run_field(block, "bucket_bits", 0)


TARGETED = {
    "a run page's count beyond any page": run_field("n", RUN_MAX_ENTRIES + 1),
    "a run page's count cut (rows lost)": run_field("n", 3),
    "a run page's count cut in a later run": run_field("n", 3, run=2),
    "a recycled page in a run": run_field("kind", KIND_DELETED),
    "key bits beyond 64": run_field("key_bits", 65, run=1),
    "bucket bits beyond their limit": run_field("bucket_bits", 9),
    "TID bits beyond a TID": run_field("block_bits", 40),
    "widths beyond the page": widths_beyond_the_page,
    "a bucket starting past the page's entries": lambda f: f.put(f.run_page(1), RUN_BUCKETS + 2 * 3, "<H", 0xFFFF),
    "bucket starts out of order": lambda f: f.put(f.run_page(0), RUN_BUCKETS + 2 * 5, "<H", 1),
    "a base key beyond the page's keys": base_beyond_keys,
    "a later run's page with TIDs": run_field("block_bits", 5, run=1),
    "a first run's page without TIDs": run_field("offset_bits", 0),
    "a directory pointing past the end": lambda f: f.put_u32(f.dir_head(0), 8 + 8 * DIR_CAP, 10**6),
    "a directory pointing at a directory": lambda f: f.put_u32(f.dir_head(1), 8 + 8 * DIR_CAP, f.dir_head(1)),
    "a directory pointing at the metapage": lambda f: f.put_u32(0, SET0 + 8, 0),
    "a directory count beyond its capacity": lambda f: f.put(f.dir_head(0), 2, "<H", DIR_CAP + 7),
    "a directory chain into a cycle": lambda f: f.put_u32(f.dir_head(0), 4, f.dir_head(0)),
    "a run shorter than the metapage says": lambda f: f.put_u32(0, SET0_NPAGES, f.u32(0, SET0_NPAGES) + 1),
    "a run set's entry count below its runs'": lambda f: f.put(0, SET0, "<q", 10),
    "the metapage's run set count": lambda f: f.put_u32(0, META_NSETS, 1000),
    "a zeroed run page": lambda f: f.data.__setitem__(slice(f.run_page(2) * BLCKSZ, (f.run_page(2) + 1) * BLCKSZ),
                                                      bytes(BLCKSZ)),
    "a heap TID changed": flip_tid,
    "a pending page's count beyond its capacity": lambda f: f.put(f.pending_head(), 2, "<H", PENDING_CAP + 1),
    "a pending list into a cycle": pending_cycle,
    # an insert appending there would wait for the lock it holds
    "a pending lane's tail at the metapage": lambda f: f.put_u32(0, f.lane_offset(f.pending_lane()) + 4, 0),
}


# Corruptions of the first run's first page that a scan must report too: a
# query reading the first run whole (k = 30, past every probe plan) reads it.
SEEN_BY_A_WHOLE_RUN_SCAN = [
    "a run page's count beyond any page", "a recycled page in a run", "bucket bits beyond their limit",
    "TID bits beyond a TID", "widths beyond the page", "a first run's page without TIDs",
    "a directory pointing past the end", "a directory count beyond its capacity", "a run shorter than the metapage says",
]
WHOLE_RUN_SCAN = EXERCISE[4]


@pytest.mark.parametrize("corruption", list(TARGETED))
def test_corrupted_pages_are_errors_naming_the_block(server, corruption: str) -> None:
    error, raised_by = corrupted(server, TARGETED[corruption])
    assert error is not None, f"{corruption}: not detected"
    assert error.sqlstate == INDEX_CORRUPTED, str(error)
    assert "block" in str(error) or "run" in str(error), str(error)
    if corruption in SEEN_BY_A_WHOLE_RUN_SCAN:
        assert "block" in str(raised_by.get(WHOLE_RUN_SCAN)), f"{corruption}: the scan did not see it"


def test_random_byte_flips_never_crash(server) -> None:
    """Flips in every kind of page (the headers most often); whatever the
    checker says, queries, inserts and VACUUM on the same pages never crash."""
    rng = random.Random(11)
    outcomes = []
    for _ in range(16):
        def flip(f: IndexFile) -> None:
            for _ in range(rng.randint(1, 8)):
                block = rng.randrange(len(f.data) // BLCKSZ)
                offset = rng.randrange(CONTENTS, CONTENTS + 64 if rng.random() < 0.7 else BLCKSZ)
                f.data[block * BLCKSZ + offset] ^= 1 << rng.randrange(8)

        error, _ = corrupted(server, flip)
        assert error is None or error.sqlstate in {INDEX_CORRUPTED, FEATURE_NOT_SUPPORTED}, str(error)
        outcomes.append(error is not None)
    assert any(outcomes), "no flip was detected at all"
