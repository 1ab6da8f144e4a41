"""The plain back end's SQL: exact near-duplicate search with core
PostgreSQL 14+ alone (docs/managed.md), behind the same SQLAlchemy API as the
extension's (pysimhash_sql/backends.py's ``Plain`` back end, chosen per
engine) and the CLI's.  Plain Python, SQL as text.

Fingerprints are ``bigint``: the same 64 bits, read as two's complement (as
the extension's casts between simhash64 and bigint define); ``to_signed`` and
``to_unsigned`` convert.  The Hamming distance is
``bit_count((a # b)::bit(64))``.

The index (``PlainLayout``): Manku's tables over the extension's blocks
(``extension_block_masks``: ``blocks`` blocks, the first ones one bit wider).
A table is a choice of ``blocks - max_distance`` blocks; a row's key in it is
its fingerprint masked to those blocks, XORed with a constant of the table
(so that the tables' keys differ).  ``simhash_index`` makes one GIN index
(core PostgreSQL's array_ops) on the array of a row's keys; a radius query
within k <= max_distance bits asks for the rows whose key array overlaps the
query's (``&&``), then rechecks the distance.  Exact: fingerprints within k
bits agree on at least blocks - k >= blocks - max_distance blocks, so on every
block of at least one table.  A radius past max_distance cannot be answered by
the keys: it is a scan with the recheck alone (the documented fallback).  The
layout's one home is this module: the index DDL, the queries and the lock keys
all come from here.

The lock keys (``lock_keys``) are ``simhash_lock_near``'s
(pg_ext/src/locks/lock_near.c), bit for bit: PostgreSQL's own hash functions
(lookup3's hash_bytes_extended, hash_bytes_uint32_extended, hash_combine64)
reimplemented here, so a plain writer and an extension writer of the same
fingerprint wait for each other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations
from math import comb
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._find_all import blocks_exceed_distance, check_unique_ids, extension_block_masks

_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1

DEFAULT_BLOCKS = 4
DEFAULT_MAX_DISTANCE = 3
"""The plain index when simhash_index names no GIN layout: 4 blocks of 16
bits, one key per block (4 keys a row), exact up to 3 bits.  At 1M random
rows a radius query reads about 4 * 1M / 2**16 = 61 candidate rows
(docs/managed.md has the figures of other layouts)."""

MAX_KEYS = 64
"""At most this many keys (tables) per row: each is a GIN entry of every row."""

SCOPE_EXTENSION = "btree_gin"
"""What a plain index with scope columns needs: GIN operator classes for
scalar columns (text, integers, uuid...).  It is a contrib extension every
managed service listed in docs/managed.md allows, and trusted (PostgreSQL
13+: a database owner creates it without superuser); the extension's own
scoped GIN indexes need it too.  A plain index without scope needs nothing."""


def to_signed(value: int) -> int:
    """A fingerprint (0 .. 2**64-1) as the bigint with the same bits."""
    return value - (1 << 64) if value >> 63 else value


def to_unsigned(value: int) -> int:
    """A bigint as the fingerprint with the same bits."""
    return value & _U64


def _bigint(value: int) -> str:
    """A bigint constant rendered inline (``'-5'::bigint``): index expressions
    match the query's only with constants, never with parameters."""
    return f"'{to_signed(value)}'::bigint"


def distance_sql(a: str, b: str) -> str:
    """The Hamming distance of two bigint SQL expressions, an integer."""
    return f"bit_count(({a} # {b})::bit(64))::integer"


@dataclass(frozen=True)
class PlainLayout:
    """Manku's tables for the plain index: ``blocks`` blocks, exact up to
    ``max_distance`` bits (module notes)."""

    blocks: int = DEFAULT_BLOCKS
    max_distance: int = DEFAULT_MAX_DISTANCE

    def __post_init__(self) -> None:
        for name in ("blocks", "max_distance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"plain index {name} must be an int, not {value!r}")
        if not blocks_exceed_distance(self.blocks, self.max_distance):
            raise ValueError(f"plain index blocks must be greater than max_distance (and 64 at most), "
                             f"got blocks {self.blocks} and max_distance {self.max_distance}")
        if comb(self.blocks, self.max_distance) > MAX_KEYS:
            raise ValueError(f"blocks {self.blocks} with max_distance {self.max_distance} make "
                             f"{comb(self.blocks, self.max_distance)} keys a row, more than {MAX_KEYS}")

    @classmethod
    def from_parameters(cls, blocks: int | None = None, max_distance: int | None = None) -> PlainLayout:
        """The layout for simhash_index's GIN parameters: either alone means
        single-block tables (blocks = max_distance + 1); neither, the default."""
        if blocks is None and max_distance is None:
            return cls()
        if blocks is None:
            return cls(max_distance + 1, max_distance)
        return cls(blocks, blocks - 1 if max_distance is None else max_distance)

    @property
    def table_masks(self) -> list[int]:
        """Each table's bits: the union of its blocks."""
        masks = extension_block_masks(self.blocks)
        return [sum(masks[i] for i in chosen)
                for chosen in combinations(range(self.blocks), self.blocks - self.max_distance)]

    def keys_sql(self, fingerprint: str) -> str:
        """The key array of a bigint SQL expression: ``ARRAY[(fp & mask) # tag, ...]``,
        the expression the index is made on and the queries compare."""
        return "ARRAY[" + ", ".join(f"({fingerprint} & {_bigint(mask)}) # {_bigint(_table_tag(table))}"
                                    for table, mask in enumerate(self.table_masks)) + "]"

    def index_sql(self, index: str, table: str, column: str, *, scope: Sequence[str] = (),
                  if_not_exists: bool = False, concurrently: bool = False) -> str:
        """CREATE INDEX of the plain index (names already quoted); ``scope``
        columns come first, each GIN entries of its own through btree_gin's
        operator classes (SCOPE_EXTENSION), so that ``scope = value AND`` the
        key overlap is one index scan reading only the scope's rows."""
        columns = ", ".join([*scope, f"({self.keys_sql(column)})"])
        return (f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}{'IF NOT EXISTS ' if if_not_exists else ''}"
                f"{index} ON {table} USING gin ({columns}) WITH (fastupdate = off)")

    def within_sql(self, fingerprint: str, other: str, max_distance: str, radius: int | None) -> str:
        """``hamming_within(fingerprint, other, max_distance)`` on the plain back
        end: the key overlap when the layout answers the radius (a constant,
        else None), and the recheck."""
        recheck = f"{distance_sql(fingerprint, other)} <= {max_distance}"
        if radius is not None and self.answers(radius):
            return f"({self.keys_sql(fingerprint)} && {self.keys_sql(other)} AND {recheck})"
        return f"({recheck})"

    def answers(self, max_distance: int) -> bool:
        """Whether the keys find every row within ``max_distance`` bits."""
        return 0 <= max_distance <= self.max_distance


def layout_of_expression(expression: str, column: str) -> PlainLayout | None:
    """The layout whose key array on ``column`` (quoted as PostgreSQL would) is
    ``expression`` (an index's expression as PostgreSQL prints it), else None:
    how autogenerate knows a plain index and its layout."""
    def normal(sql: str) -> str:
        return "".join(c for c in sql if c not in "() \n\t")

    wanted = normal(expression)
    tables = expression.count("#")
    for blocks in range(1, 65):
        for max_distance in range(blocks):
            if comb(blocks, max_distance) != tables:
                continue
            if normal(PlainLayout(blocks, max_distance).keys_sql(column)) == wanted:
                return PlainLayout(blocks, max_distance)
    return None


def _table_tag(table: int) -> int:
    """The constant XORed into table ``table``'s keys (Fibonacci hashing)."""
    return (table * 0x9E3779B97F4A7C15) & _U64


# ------------------------------------------------- simhash_lock_near's keys

_LOCK_SEED = 0x73696D686173686C  # SIMHASH_LOCK_SEED
_LOCK_MAX_BLOCKS = 32  # SIMHASH_MAX_BLOCKS
_RADIUS_MAX = 64


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _U32


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - c) & _U32; a ^= _rot(c, 4); c = (c + b) & _U32  # noqa: E702
    b = (b - a) & _U32; b ^= _rot(a, 6); a = (a + c) & _U32  # noqa: E702
    c = (c - b) & _U32; c ^= _rot(b, 8); b = (b + a) & _U32  # noqa: E702
    a = (a - c) & _U32; a ^= _rot(c, 16); c = (c + b) & _U32  # noqa: E702
    b = (b - a) & _U32; b ^= _rot(a, 19); a = (a + c) & _U32  # noqa: E702
    c = (c - b) & _U32; c ^= _rot(b, 4); b = (b + a) & _U32  # noqa: E702
    return a, b, c


def _final(a: int, b: int, c: int) -> tuple[int, int, int]:
    c ^= b; c = (c - _rot(b, 14)) & _U32  # noqa: E702
    a ^= c; a = (a - _rot(c, 11)) & _U32  # noqa: E702
    b ^= a; b = (b - _rot(a, 25)) & _U32  # noqa: E702
    c ^= b; c = (c - _rot(b, 16)) & _U32  # noqa: E702
    a ^= c; a = (a - _rot(c, 4)) & _U32  # noqa: E702
    b ^= a; b = (b - _rot(a, 14)) & _U32  # noqa: E702
    c ^= b; c = (c - _rot(b, 24)) & _U32  # noqa: E702
    return a, b, c


def _start(length: int, seed: int) -> tuple[int, int, int]:
    a = b = c = (0x9E3779B9 + length + 3923095) & _U32
    if seed:
        a = (a + (seed >> 32)) & _U32
        b = (b + (seed & _U32)) & _U32
        a, b, c = _mix(a, b, c)
    return a, b, c


def hash_bytes_extended(data: bytes, seed: int) -> int:
    """PostgreSQL's hash_bytes_extended (common/hashfn.c, a little-endian server)."""
    a, b, c = _start(len(data), seed)
    rest = data
    while len(rest) >= 12:
        a = (a + int.from_bytes(rest[0:4], "little")) & _U32
        b = (b + int.from_bytes(rest[4:8], "little")) & _U32
        c = (c + int.from_bytes(rest[8:12], "little")) & _U32
        a, b, c = _mix(a, b, c)
        rest = rest[12:]
    a = (a + int.from_bytes(rest[0:4], "little")) & _U32
    b = (b + int.from_bytes(rest[4:8], "little")) & _U32
    c = (c + (int.from_bytes(rest[8:11], "little") << 8)) & _U32  # c's lowest byte is not data
    a, b, c = _final(a, b, c)
    return (b << 32) | c


def hash_uint32_extended(value: int, seed: int) -> int:
    """PostgreSQL's hash_bytes_uint32_extended."""
    a, b, c = _start(4, seed)
    a, b, c = _final((a + value) & _U32, b, c)
    return (b << 32) | c


def hash_combine64(a: int, b: int) -> int:
    """PostgreSQL's hash_combine64."""
    return a ^ ((b + 0x49A0F4DD15E5A8E3 + (a << 54) + (a >> 7)) & _U64)


def lock_keys(fingerprints: Any, max_distance: int, scope: str | None = None) -> list[int]:
    """The advisory-lock keys (bigints, ascending, each once) that
    ``simhash_lock_near_batch(fingerprints, max_distance, scope)`` takes."""
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or not 0 <= max_distance <= _RADIUS_MAX:
        raise ValueError(f"max_distance must be an int between 0 and {_RADIUS_MAX}, not {max_distance!r}")
    scope_hash = _LOCK_SEED if scope is None else hash_bytes_extended(scope.encode(), _LOCK_SEED)
    keys = set()
    for fp in fingerprints:
        if max_distance + 1 > _LOCK_MAX_BLOCKS:
            keys.add(to_signed(hash_combine64(scope_hash, max_distance)))
            continue
        for i, mask in enumerate(extension_block_masks(max_distance + 1)):
            block = hash_bytes_extended((fp & mask).to_bytes(8, "little"), 0)
            key = hash_combine64(scope_hash, hash_uint32_extended(max_distance << 8 | i, 0))
            keys.add(to_signed(hash_combine64(key, block)))
    return sorted(keys)


LOCK_SQL = ("SELECT pg_advisory_xact_lock(key)::text, current_setting('transaction_isolation') "
            "FROM unnest(CAST(:keys AS BIGINT[])) AS key")
"""Takes the keys in the array's order (ascending: no deadlock between two
writers) and reports the isolation level, which must not be REPEATABLE READ
(simhash_lock_near's rule: the check after the lock could not see what the
other writer committed)."""


# ------------------------------------------------ rows to the client (find_all)

STREAM_CHUNKS = 16
"""The chunks the plain back end sends many rows to the client in
(rows_in_chunks_sql): a row's chunk is ``hashint8(id) & (STREAM_CHUNKS - 1)``,
so an id that comes twice comes twice in one chunk, and a chunk of unique ids
holds about 1/16 of them: each column's bytea of a chunk stays below
PostgreSQL's 1 GB limit on a value up to about 2 billion rows."""

ONE_CHUNK_ROWS = 16_000_000
"""Up to this many rows by the planner's estimate, the rows come in one chunk
(one aggregate, no grouping: 0.05-0.07 s less at 1M rows, and parallel from
PostgreSQL 16), 128 MB a column: a bytea holds 134M rows, so an estimate 8
times too low still fits."""


def rows_in_chunks_sql(rows_sql: str, columns: int = 2, chunks: int = STREAM_CHUNKS) -> str:
    """The rows of ``rows_sql`` (id, fingerprint, and up to ``columns``
    bigints in all; fingerprints not NULL), in ``chunks`` chunks (1, or
    a power of two, STREAM_CHUNKS, by the id's hash), each chunk one bytea of big-endian
    bigints per column: a few values to the client instead of a few a row,
    which numpy reads as they are (rows_of_chunks).  Measured at 1M rows
    (docs/managed.md): one aggregate per column, not one of
    ``int8send(id) || int8send(fp)`` (0.37 s against 0.66 s, the
    concatenation costs); chunks by the id's hash, not by
    ``row_number() OVER ()`` (the window costs about 0.15 s: its rows go
    through a tuplestore); the bytea rather than binary COPY (psycopg 3 reads
    COPY a row at a time: 0.7 s).  The server aggregates every chunk before
    sending the first (8 bytes a row and column, in the backend running the
    query)."""
    names = [f"c{n}" for n in range(columns)]
    grouped = "" if chunks == 1 else f" GROUP BY hashint8(c0) & {chunks - 1}"
    return ("SELECT " + ", ".join(f"string_agg(int8send({name}), ''::bytea)" for name in names) +
            f" FROM ({rows_sql}) AS r ({', '.join(names)}){grouped}")


def chunks_for(estimated_rows: float) -> int:
    """rows_in_chunks_sql's chunks for the planner's estimate of the rows."""
    return 1 if estimated_rows <= ONE_CHUNK_ROWS else STREAM_CHUNKS


def stream_rows(execute: Any, rows_sql: str, columns: int = 2) -> tuple[np.ndarray, ...]:
    """The rows of ``rows_sql`` (as rows_in_chunks_sql's) as rows_of_chunks's
    arrays; ``execute(sql)`` runs a statement and returns its rows.  The
    planner's estimate (``EXPLAIN``, no execution) chooses the chunks."""
    ((plan,),) = list(execute(f"EXPLAIN (FORMAT JSON) {rows_sql}"))
    if isinstance(plan, str):
        plan = json.loads(plan)
    chunks = chunks_for(plan[0]["Plan"]["Plan Rows"])
    return rows_of_chunks(execute(rows_in_chunks_sql(rows_sql, columns, chunks)), columns)


def rows_of_chunks(chunks: Any, columns: int = 2) -> tuple[np.ndarray, ...]:
    """The chunks of rows_in_chunks_sql (a bytea per column each) as int64 ids,
    uint64 fingerprints and int64 others (8 bytes a row and column);
    ValueError if an id comes twice or is NULL (as the extension's find_all
    refuses them: string_agg skips a NULL, so its chunk's columns differ in
    length).  Each chunk's ids are checked on their own (an id given twice
    is in one chunk), without a sort where the scan read them in order.  One
    chunk of no rows is all NULLs."""
    parts: list[list[np.ndarray]] = [[] for _ in range(columns)]
    for chunk in chunks:
        if all(data is None for data in chunk):
            continue
        if any(data is None for data in chunk) or len({len(data) for data in chunk}) != 1:
            raise ValueError("find_all/clusters need ids: the query returned a NULL id")
        for part, data in zip(parts, chunk, strict=True):
            part.append(np.frombuffer(data, ">i8"))
        check_unique_ids(parts[0][-1])
    arrays = [np.concatenate(part, dtype=np.int64) if part else np.empty(0, np.int64) for part in parts]
    arrays[1] = arrays[1].view(np.uint64)
    return tuple(arrays)


def binary_execute(dbapi_connection: Any) -> Any:
    """stream_rows's ``execute`` on a DBAPI connection in PostgreSQL's binary
    format when it is psycopg 3's (the bytea as it is stored, not hex:
    0.05-0.09 s less at 1M rows), else None (the caller executes its own
    way)."""
    try:
        import psycopg
    except ImportError:
        return None
    if not isinstance(dbapi_connection, psycopg.Connection):
        return None
    return lambda sql: dbapi_connection.cursor(binary=True).execute(sql)
