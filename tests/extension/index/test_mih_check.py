"""simhash_mih_check, the checker of simhash_mih indexes (what amcheck is for
btree and GIN): a healthy index passes after build, inserts, flushes of the
pending list, deletes and VACUUM; a page corrupted on disk is an ERROR naming
the block (index_corrupted, XX002), a heap row missing from the index is
found, and no corruption crashes the server.

The page offsets below follow mih.h's page format (version 1): each page's
contents start after the 24-byte page header; a run page is (n, next, keys[],
tids[]), a directory page (n, next, first_key[], blkno[]), the metapage
(magic, version, ntables, generation, nsets, sets[] of (nentries, dir_head[8],
npages[8]), ...).
"""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import psycopg
import pytest

from pysimhash_sql.throwaway import ThrowawayServer
from toolbox import copy_rows, error_of
from toolbox.data import planted_fingerprints

BLCKSZ = 8192
CONTENTS = 24                      # MAXALIGN(SizeOfPageHeaderData)
RUN_CAP = (BLCKSZ - CONTENTS - 8) // 14
DIR_CAP = (BLCKSZ - CONTENTS - 8) // 12
META_NSETS = CONTENTS + 16
META_SET0_DIR_HEAD = CONTENTS + 32  # sets[0].dir_head[0]
INDEX_CORRUPTED = "XX002"


def load(conn: psycopg.Connection, rows: int, seed: int = 1) -> list[int | None]:
    fps = planted_fingerprints(random.Random(seed), rows)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    copy_rows(conn, "COPY docs FROM STDIN", enumerate(fps))
    conn.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
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


@pytest.fixture
def own_server(tmp_path_factory):
    server = ThrowawayServer(os.environ["SIMHASH_PG_BINDIR"], tmp_path_factory.mktemp("mih-check")).initdb().start()
    try:
        yield server
    finally:
        server.stop("immediate")


def connect(server: ThrowawayServer) -> psycopg.Connection:
    conn = psycopg.connect(server.dsn(), autocommit=True)
    # PostgreSQL 18 initializes clusters with checksums: let the checker, not
    # the buffer manager, see the corrupted pages.
    conn.execute("SET ignore_checksum_failure = on")
    return conn


class IndexFile:
    """The index's first segment on disk, edited while its server is down."""

    def __init__(self, server: ThrowawayServer, conn: psycopg.Connection) -> None:
        conn.execute("CHECKPOINT")
        self.path = server.datadir / conn.execute("SELECT pg_relation_filepath('docs_fp')").fetchone()[0]
        self.data = bytearray(self.path.read_bytes())

    def u32(self, block: int, offset: int) -> int:
        return struct.unpack_from("<I", self.data, block * BLCKSZ + offset)[0]

    def put_u32(self, block: int, offset: int, value: int) -> None:
        struct.pack_into("<I", self.data, block * BLCKSZ + offset, value)

    def put_u64(self, block: int, offset: int, value: int) -> None:
        struct.pack_into("<Q", self.data, block * BLCKSZ + offset, value)

    def run_page(self) -> int:
        """The first page of run 0 of the first run set."""
        directory = self.u32(0, META_SET0_DIR_HEAD)
        return self.u32(directory, CONTENTS + 8 + 8 * DIR_CAP)

    def write(self, path: Path | None = None) -> None:
        (path or self.path).write_bytes(bytes(self.data))


def corrupted(server: ThrowawayServer, corrupt) -> psycopg.Error | None:
    """Loads the table, corrupts its index on disk with corrupt(IndexFile),
    and returns what simhash_mih_check raises (None if it passes); the server
    must still answer afterwards."""
    with connect(server) as conn:
        if conn.execute("SELECT to_regclass('docs')").fetchone()[0] is None:
            conn.execute("CREATE EXTENSION simhash")
            load(conn, 5000)
        index = IndexFile(server, conn)
    server.stop()
    original = bytes(index.data)
    corrupt(index)
    index.write()
    server.start()
    try:
        with connect(server) as conn:
            try:
                check(conn)
                error = None
            except psycopg.Error as raised:
                error = raised
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
        index.path.write_bytes(original)
        server.start()
    return error


TARGETED = {
    "a run page's count beyond its capacity": lambda f: f.put_u32(f.run_page(), CONTENTS, RUN_CAP + 1),
    "a run page's count cut (rows lost)": lambda f: f.put_u32(f.run_page(), CONTENTS, 3),
    "a recycled page in a run": lambda f: f.put_u32(f.run_page(), CONTENTS, 0xFFFFFFFF),
    "keys out of order": lambda f: f.put_u64(f.run_page(), CONTENTS + 8, 2**64 - 1),
    "a directory pointing past the end": lambda f: f.put_u32(f.u32(0, META_SET0_DIR_HEAD), CONTENTS + 8 + 8 * DIR_CAP,
                                                               10**6),
    "a directory pointing at the metapage": lambda f: f.put_u32(0, META_SET0_DIR_HEAD, 0),
    "a directory count beyond its capacity": lambda f: f.put_u32(f.u32(0, META_SET0_DIR_HEAD), CONTENTS, DIR_CAP + 7),
    "a directory chain into a cycle": lambda f: f.put_u32(f.u32(0, META_SET0_DIR_HEAD), CONTENTS + 4,
                                                           f.u32(0, META_SET0_DIR_HEAD)),
    "the metapage's run set count": lambda f: f.put_u32(0, META_NSETS, 1000),
    "a zeroed run page": lambda f: f.data.__setitem__(slice(f.run_page() * BLCKSZ, (f.run_page() + 1) * BLCKSZ),
                                                      bytes(BLCKSZ)),
    "a heap TID changed": lambda f: f.put_u32(f.run_page(), CONTENTS + 8 + 8 * RUN_CAP, 0x7777),
}


@pytest.mark.parametrize("corruption", list(TARGETED))
def test_corrupted_pages_are_errors_naming_the_block(own_server, corruption: str) -> None:
    error = corrupted(own_server, TARGETED[corruption])
    assert error is not None, f"{corruption}: not detected"
    assert error.sqlstate == INDEX_CORRUPTED, str(error)
    assert "block" in str(error) or "run" in str(error), str(error)


def test_random_byte_flips_never_crash(own_server) -> None:
    rng = random.Random(11)
    outcomes = []
    for _ in range(12):
        def flip(f: IndexFile) -> None:
            for _ in range(rng.randint(1, 8)):
                block = rng.randrange(len(f.data) // BLCKSZ)
                offset = rng.randrange(CONTENTS, CONTENTS + 256 if rng.random() < 0.7 else BLCKSZ)
                f.data[block * BLCKSZ + offset] ^= 1 << rng.randrange(8)

        error = corrupted(own_server, flip)
        assert error is None or error.sqlstate in {INDEX_CORRUPTED, "55000"}, str(error)
        outcomes.append(error is not None)
    assert any(outcomes), "no flip was detected at all"
