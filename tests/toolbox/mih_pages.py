"""A simhash_mih index's file on disk, for tests that corrupt it or craft an
old format: its page format's offsets (page format 2, pg_ext/src/index/mih/mih.h
and mih_page.h), a reader of the metapage, directories and run page headers,
and edits made while the index's server is down.

Each page's contents start after the 24-byte page header.  The metapage is
(magic, version, ntables, generation, nsets, sets[16] of (nentries,
dir_head[8], npages[8]), ..., nscope); every other page starts with (kind, n) as two
uint16: a directory page is (kind, n, next, first_key[680], blkno[680]), a
pending page (kind, n, next, fps[583], tids[583]), a run page (kind, n,
key_bits, bucket_bits, block_bits, offset_bits, base, bucket_start[2^bucket_bits],
remainders, TIDs).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import psycopg

from pysimhash_sql.throwaway import ThrowawayServer

BLCKSZ = 8192
CONTENTS = 24                      # MAXALIGN(SizeOfPageHeaderData)
PD_LOWER = 12                      # the page header's pd_lower (uint16), after pd_lsn, pd_checksum, pd_flags
DIR_CAP = (BLCKSZ - CONTENTS - 8) // 12
PENDING_CAP = (BLCKSZ - CONTENTS - 8) // 14
RUN_MAX_ENTRIES = 4096
# Offsets below are in a page's contents (after the page header).
META_VERSION = 4
META_NSETS = 16
SET0 = 24                          # sets[0]: nentries (int64), dir_head[8], npages[8]
SET0_NPAGES = SET0 + 8 + 32
META_LANE0 = SET0 + 16 * 72        # lane0: head, tail (uint32), rows (int64)
META_NLANES = 4672                 # after sealed_waits: the lanes in use (0 before lanes), then lanes 1 to 7
META_MORE_LANES = 4680
LANES = 8                          # MIH_LANES
META_NSEALS = META_MORE_LANES + 16 * (LANES - 1)   # seals done (uint64), then VACUUM's passes over pending pages
META_PENDING_VACUUMS = META_NSEALS + 8
META_NSCOPE = 4016                 # after retired[32] (88 bytes each, from 1200): the scope column count
# The merge policy's caps: run sets once merges catch up (MIH_SET_CAP), of them sets too large for a
# filter (MIH_PROBED_CAP); the metapage's room (MIH_MAX_SETS).
SET_CAP = 5
PROBED_CAP = 3
MAX_SETS = 16
MAX_RETIRED = 32  # the metapage's retired list (MIH_MAX_RETIRED)


def filtered_most(runs: int) -> int:
    """The most rows a run set may hold for scans to filter its probes in every run (mih.h's
    mih_filter_bits: 2^(width - MIH_FILTER_SPARSITY), width the narrowest block, at most 21 bits)."""
    return 2 ** (min(64 // runs, 21) - 3)
# While a sealed list waits for its flusher, the pending list grows up to this many times the limit (MIH_PENDING_BOUND).
PENDING_BOUND = 2
KIND_RUN, KIND_DIRECTORY, KIND_PENDING, KIND_DELETED = 0x5201, 0x5202, 0x5203, 0x52FF
# A run page's header fields: (offset in the contents, struct format)
RUN_FIELDS = {"kind": (0, "<H"), "n": (2, "<H"), "key_bits": (4, "B"), "bucket_bits": (5, "B"),
              "block_bits": (6, "B"), "offset_bits": (7, "B"), "base": (8, "<Q")}
RUN_BUCKETS = 16                   # offset of bucket_start[0]


def lane_offset(lane: int) -> int:
    """Where pending lane `lane` (head, tail, rows) lies in the metapage's contents."""
    return META_LANE0 if lane == 0 else META_MORE_LANES + 16 * (lane - 1)


def lanes_of_metapage(contents: bytes) -> list[tuple[int, int, int]]:
    """(head, tail, rows before the tail) of each pending lane the metapage uses
    (one, counting its tail's rows too, in an index written before lanes)."""
    count = max(struct.unpack_from("<I", contents, META_NLANES)[0], 1)
    return [struct.unpack_from("<IIq", contents, lane_offset(i)) for i in range(count)]


def lanes_of(conn: psycopg.Connection, index: str = "docs_fp") -> list[tuple[int, int, int]]:
    """The pending lanes of a live index, its metapage read through pageinspect."""
    return lanes_of_metapage(metapage_of(conn, index))


def metapage_of(conn: psycopg.Connection, index: str = "docs_fp") -> bytes:
    """The contents of a live index's metapage, read through pageinspect."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
    return bytes(conn.execute("SELECT get_raw_page(%s, 0)", (index,)).fetchone()[0])[CONTENTS:]


def backends_of_other_lanes(conninfo: str, count: int) -> list[psycopg.Connection]:
    """`count` connections whose backends have different home lanes (pid % LANES)."""
    conns: list[psycopg.Connection] = []
    for _ in range(100):
        conn = psycopg.connect(conninfo, autocommit=True)
        if conn.info.backend_pid % LANES in {c.info.backend_pid % LANES for c in conns}:
            conn.close()
            continue
        conns.append(conn)
        if len(conns) == count:
            return conns
    raise AssertionError(f"no {count} backends of different lanes in 100 connections")


@contextlib.contextmanager
def own_server(directory: Path) -> Iterator[ThrowawayServer]:
    """A server of the test's own, whose files the test may edit."""
    server = ThrowawayServer(os.environ["SIMHASH_PG_BINDIR"], directory).initdb().start()
    try:
        yield server
    finally:
        server.stop("immediate")


def connect(server: ThrowawayServer) -> psycopg.Connection:
    conn = psycopg.connect(server.dsn(), autocommit=True)
    # PostgreSQL 18 initializes clusters with checksums: let the index, not
    # the buffer manager, see the edited pages.
    conn.execute("SET ignore_checksum_failure = on")
    return conn


class IndexFile:
    """The first segment of index `index` on disk, read after a CHECKPOINT and
    edited in memory; write() puts the edit in place, restore() the original
    (its server must be down for both)."""

    def __init__(self, server: ThrowawayServer, conn: psycopg.Connection, index: str = "docs_fp") -> None:
        conn.execute("CHECKPOINT")
        self.path = server.datadir / conn.execute("SELECT pg_relation_filepath(%s)", (index,)).fetchone()[0]
        self.original = self.path.read_bytes()
        self.data = bytearray(self.original)

    def get(self, block: int, offset: int, fmt: str) -> int:
        return struct.unpack_from(fmt, self.data, block * BLCKSZ + CONTENTS + offset)[0]

    def put(self, block: int, offset: int, fmt: str, value: int) -> None:
        struct.pack_into(fmt, self.data, block * BLCKSZ + CONTENTS + offset, value)

    def u32(self, block: int, offset: int) -> int:
        return self.get(block, offset, "<I")

    def put_u32(self, block: int, offset: int, value: int) -> None:
        self.put(block, offset, "<I", value)

    def dir_head(self, run: int = 0) -> int:
        """The first directory page of run `run` of the first run set."""
        return self.u32(0, SET0 + 8 + 4 * run)

    def lane_offset(self, lane: int) -> int:
        return lane_offset(lane)

    def lanes(self) -> list[tuple[int, int, int]]:
        return lanes_of_metapage(self.data[CONTENTS:BLCKSZ])

    def pending_lane(self) -> int:
        """The first lane with rows."""
        return next(i for i, (head, _, _) in enumerate(self.lanes()) if head != 0xFFFFFFFF)

    def pending_head(self) -> int:
        return self.lanes()[self.pending_lane()][0]

    def run_pages(self, run: int = 0) -> list[int]:
        """The blocks of run `run` of the first run set, in order."""
        pages, directory = [], self.dir_head(run)
        while directory != 0xFFFFFFFF:
            n = self.get(directory, 2, "<H")
            pages += [self.u32(directory, 8 + 8 * DIR_CAP + 4 * j) for j in range(n)]
            directory = self.u32(directory, 4)
        return pages

    def run_page(self, run: int = 0, page: int = 0) -> int:
        return self.run_pages(run)[page]

    def run_header(self, block: int) -> dict[str, int]:
        return {name: self.get(block, offset, fmt) for name, (offset, fmt) in RUN_FIELDS.items()}

    def set_run_field(self, block: int, name: str, value: int) -> None:
        offset, fmt = RUN_FIELDS[name]
        self.put(block, offset, fmt, value)

    def run_areas(self, block: int) -> tuple[int, int]:
        """Byte offsets (in the contents) of a run page's remainders and TIDs."""
        h = self.run_header(block)
        rems = RUN_BUCKETS + 2 * (1 << h["bucket_bits"])
        return rems, rems + (h["n"] * (h["key_bits"] - h["bucket_bits"]) + 7) // 8

    def write(self) -> None:
        self.path.write_bytes(bytes(self.data))

    def restore(self) -> None:
        self.path.write_bytes(self.original)


def edit_index(server: ThrowawayServer, edit, index: str = "docs_fp") -> IndexFile:
    """Applies edit(IndexFile) to the index on disk, the server stopped
    meanwhile and started again; returns the IndexFile (restore() undoes it)."""
    with connect(server) as conn:
        file = IndexFile(server, conn, index)
    server.stop()
    edit(file)
    file.write()
    server.start()
    return file


def crashed(server: ThrowawayServer) -> bool:
    """Whether a backend of the server died of a signal (a crash, not an ERROR)."""
    return "terminated by signal" in (server.directory / "server.log").read_text(errors="replace")
