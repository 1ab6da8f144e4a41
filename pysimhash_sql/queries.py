"""Near-duplicate queries as SQLAlchemy constructs (a Session or Connection
executes them, and they compose like any ``select``).

``near_duplicates`` and ``nearest`` look up one fingerprint;
``has_near_duplicate`` and ``near_duplicate_matches`` check a batch of new
rows against the stored ones, one index lookup per new row; ``find_all`` and
``clusters`` run the SQL functions ``simhash_find_all`` / ``simhash_clusters``
over the rows of a ``select`` of (id, fingerprint).  Those functions take the
query as SQL text: it is compiled here with every value rendered as a literal
by SQLAlchemy's PostgreSQL quoting (no string formatting), and the text is
then sent as a bound parameter.

``run_find_all`` and ``run_clusters`` run them on a connection of either back
end (pysimhash_sql/backends.py): with the extension, the SQL functions; on
the plain back end (docs/managed.md), the rows (id, fingerprint) are streamed
to the client in one chunk or plain.STREAM_CHUNKS (two bytea each, in binary
format through psycopg 3) into two numpy arrays (16 bytes a row) and searched, in
threads, by the package's numpy find_all (pysimhash_sql/_find_all.py:
radix-sorted block tables), which was faster than block self-joins in SQL
(docs/managed.md has the figures).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import (
    BigInteger, Boolean, Exists, Integer, Select, Text, cast, column, exists, func, literal, select, text,
)
from sqlalchemy.dialects.postgresql.base import PGCompiler, PGDialect
from sqlalchemy.sql import sqltypes

from . import plain
from .sqlalchemy import SimHash64, as_fingerprint, plain_layout  # (and func.hamming_within etc. typed)
from .backends import BACKENDS, EXTENSION, PLAIN, Backend, Rows, backend_for, backend_named, check_workers, set_backend

__all__ = ["clusters", "find_all", "has_near_duplicate", "near_duplicate_matches", "near_duplicates", "nearest",
           "query_sql", "run_clusters", "run_find_all", "run_nearest"]


def _owner(fingerprint_column: Any) -> Any:
    """What to select alongside a column: its ORM entity (or alias), else its table."""
    parent = getattr(fingerprint_column, "parent", None)
    if parent is not None and hasattr(parent, "entity"):
        return parent.entity
    return fingerprint_column.table


def near_duplicates(fingerprint_column: Any, q: int, max_distance: int) -> Select:
    """Rows whose fingerprint is within ``max_distance`` bits of ``q``, with a
    ``distance`` column, closest first.  Uses the simhash64_ops index if any."""
    distance = fingerprint_column.hamming_distance(q).label("distance")
    return (
        select(_owner(fingerprint_column), distance)
        .where(fingerprint_column.within(q, max_distance))
        .order_by(distance)
    )


def nearest(fingerprint_column: Any, q: int, n: int) -> Select:
    """The ``n`` rows closest to ``q`` (exact top-n by Hamming distance), with
    a ``distance`` column, closest first: a Select on the model that callers
    extend with joins and filters.

    It is ``ORDER BY fp <~> q LIMIT n`` (the comparator's operator), which a
    simhash_mih index answers with its ordering scan (docs/index.md, "The n
    most similar rows"): EXPLAIN shows ``Index Scan using ... Order By``.  GIN
    cannot order: through a GIN index (or none) it reads every row, and so
    does the plain back end's distance; ``run_nearest`` runs it on either
    back end, the plain one looking the rows up in its block index first."""
    distance = fingerprint_column.hamming_distance(q).label("distance")
    return select(_owner(fingerprint_column), distance).order_by(distance).limit(n)


def run_nearest(connection: Any, fingerprint_column: Any, q: int, n: int) -> list:
    """``nearest(fingerprint_column, q, n)``'s rows (entity or table row,
    distance), executed on ``connection`` (a Session or Connection) on either
    back end, exact.  With the extension it is that query (a simhash_mih
    index's ordering scan).  On the plain back end, where no index orders, the
    rows within the layout's max_distance bits first, by a lookup of its
    block index (``near_duplicates(...).limit(n)``): when there are n of them
    they are the n nearest; else ``nearest``'s scan (docs/managed.md, "The n
    most similar rows")."""
    def rows(radius: int | None) -> list:
        query = nearest(fingerprint_column, q, n) if radius is None else near_duplicates(
            fingerprint_column, q, radius).limit(n)
        return connection.execute(query).all()

    return backend_for(connection).nearest(rows, n, lambda: plain_layout(fingerprint_column))


def has_near_duplicate(new_fingerprint: Any, stored_fingerprint_column: Any, max_distance: int) -> Exists:
    """``EXISTS`` a stored row whose fingerprint is within ``max_distance``
    bits of ``new_fingerprint`` (a column of the new rows' select): the batch
    check of new rows against stored ones (docs/find_all.md, "New rows against
    stored rows").  ``select(Fresh).where(~has_near_duplicate(Fresh.fp,
    Page.fp, 3))`` keeps the new rows nothing stored resembles.  Each new row
    is one index lookup in the stored table, and the new rows' side runs in
    parallel workers where the planner gives it some."""
    return exists().where(_within(stored_fingerprint_column, new_fingerprint, max_distance))


def _within(stored_fingerprint_column: Any, new_fingerprint: Any, max_distance: int) -> Any:
    """``hamming_within(stored, new, k)``; the comparator's ValueError
    (sqlalchemy.as_fingerprint) when the two declare different text spec versions."""
    stored_type = getattr(stored_fingerprint_column, "type", None)
    new_fingerprint = as_fingerprint(new_fingerprint, stored_type if isinstance(stored_type, SimHash64) else None)
    return func.hamming_within(stored_fingerprint_column, new_fingerprint, max_distance)


def near_duplicate_matches(new_fingerprint: Any, stored_fingerprint_column: Any, max_distance: int) -> Select:
    """Every (new row, stored row, distance) within ``max_distance`` bits: the
    new rows' entity (or table) and the stored one's, joined by an index
    lookup per new row.  For new rows in the stored table itself, alias one
    side (``aliased(Page)``)."""
    within = _within(stored_fingerprint_column, new_fingerprint, max_distance)
    distance = stored_fingerprint_column.hamming_distance(new_fingerprint).label("distance")
    return (
        select(_owner(new_fingerprint), _owner(stored_fingerprint_column), distance)
        .join_from(_owner(new_fingerprint), _owner(stored_fingerprint_column), within)
    )


class _InlineLiteralCompiler(PGCompiler):
    def render_literal_value(self, value: Any, type_: Any) -> str:
        # An E'' literal means the same under either standard_conforming_strings
        # setting, so no backslash in a value can end the literal early.
        if isinstance(value, str) and isinstance(type_, sqltypes.String):
            return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
        return super().render_literal_value(value, type_)


class _InlineLiteralDialect(PGDialect):
    """PostgreSQL, rendering SQL text that is run as is: no driver paramstyle
    (so no doubled %), and string literals from _InlineLiteralCompiler."""

    statement_compiler = _InlineLiteralCompiler
    _backslash_escapes = False


def _inline_dialect(name: str) -> _InlineLiteralDialect:
    dialect = _InlineLiteralDialect(paramstyle="named")
    set_backend(dialect, name)
    return dialect


_INLINE = {backend_named(name): _inline_dialect(name) for name in BACKENDS}
"""Each back end's inlining dialect: a query's fingerprints as its columns hold them."""


def query_sql(query: Select, backend: Backend = backend_named(EXTENSION)) -> str:
    """The SQL text of a select of (id, fingerprint), values inlined as
    literals (as ``backend`` writes them: the extension's by default)."""
    _check_two_columns(query)
    return str(query.compile(dialect=_INLINE[backend], compile_kwargs={"literal_binds": True}))


def _check_two_columns(query: Select) -> None:
    if len(query.selected_columns) != 2:
        raise ValueError(
            "find_all/clusters need a select of exactly two columns, (id, fingerprint); "
            f"got {len(query.selected_columns)}"
        )


def _arguments(query: Select, max_distance: int, blocks: int | None) -> list:
    # blocks NULL lets the server pick the block count for the distance.
    return [cast(literal(query_sql(query)), Text), max_distance, cast(literal(blocks), Integer)]


def _workers(workers: int | None) -> list:
    # Passed only when given, so that a database at extension 1.1 (no workers
    # parameter) runs the call too; NULL would mean the server's default anyway.
    if check_workers(workers) is None:
        return []
    return [cast(literal(workers), Integer)]


def find_all(query: Select, max_distance: int = 3, blocks: int | None = None, workers: int | None = None) -> Select:
    """Every pair of rows of ``query`` within ``max_distance`` bits: rows of
    (id1, id2, distance) with id1 < id2, from ``simhash_find_all``.  ``workers``:
    parallel workers besides the backend (default: the server's
    max_parallel_maintenance_workers; extension 1.2).  For a progress bar, run
    it inside ``pysimhash_sql.progress.track_progress``."""
    pairs = func.simhash_find_all(*_arguments(query, max_distance, blocks), *_workers(workers)).table_valued(
        column("id1", BigInteger), column("id2", BigInteger), column("distance", Integer)
    )
    return select(pairs.c.id1, pairs.c.id2, pairs.c.distance)


def clusters(
    query: Select,
    max_distance: int = 3,
    blocks: int | None = None,
    include_singletons: bool = False,
    workers: int | None = None,
) -> Select:
    """Connected components of the within-``max_distance`` graph over the rows
    of ``query``: rows of (id, cluster_id), from ``simhash_clusters``
    (``workers`` as for ``find_all``)."""
    members = func.simhash_clusters(
        *_arguments(query, max_distance, blocks), cast(literal(include_singletons), Boolean), *_workers(workers)
    ).table_valued(column("id", BigInteger), column("cluster_id", BigInteger))
    return select(members.c.id, members.c.cluster_id)


# ------------------------------------------------ either back end, executed

class Pair(NamedTuple):
    id1: int
    id2: int
    distance: int


class Member(NamedTuple):
    id: int
    cluster_id: int


class _SessionRows(Rows):
    """A select's rows on a Session or Connection (backends.Rows)."""

    def __init__(self, connection: Any, query: Select, backend: Backend) -> None:
        _check_two_columns(query)
        self.connection, self.query, self.backend = connection, query, backend

    def sql(self) -> str:
        return query_sql(self.query, self.backend)

    def run(self, sql: str, params: dict) -> list:
        return self.connection.execute(text(sql), params).all()

    def stream(self) -> tuple:
        return _stream_rows(self.connection, self.query)


def run_find_all(connection: Any, query: Select, max_distance: int = 3, blocks: int | None = None,
                 workers: int | None = None) -> list[Pair]:
    """``find_all(query, ...)`` executed on ``connection`` (a Session or
    Connection) on either back end: the pairs (id1 < id2, distance), in no
    particular order.  On the plain back end the search runs here (module
    notes), in ``workers`` threads (None: one per CPU); ``blocks`` is the
    numpy search's (default max_distance + 2)."""
    backend = backend_for(connection)
    return [Pair(*pair) for pair in
            backend.find_all(_SessionRows(connection, query, backend), max_distance, blocks, workers)]


def run_clusters(connection: Any, query: Select, max_distance: int = 3, blocks: int | None = None,
                 include_singletons: bool = False, workers: int | None = None) -> list[Member]:
    """``clusters(query, ...)`` executed on either back end: (id, cluster_id),
    the cluster id being its smallest member's id, as simhash_clusters's."""
    backend = backend_for(connection)
    return [Member(*member) for member in backend.clusters(_SessionRows(connection, query, backend), max_distance,
                                                           blocks, include_singletons, workers)]


def _stream_rows(connection: Any, query: Select) -> tuple:
    """The (id, fingerprint) rows of ``query`` with a fingerprint, as int64 ids
    and uint64 fingerprints (plain.stream_rows); in binary format through
    psycopg 3's own connection, else through ``connection``."""
    _check_two_columns(query)
    id_column, fp_column = query.subquery().c
    rows = select(cast(id_column, BigInteger), cast(fp_column, BigInteger)).where(fp_column.is_not(None))
    database = connection.connection() if callable(getattr(connection, "connection", None)) else connection
    execute = plain.binary_execute(database.connection.dbapi_connection) or (lambda sql: connection.execute(text(sql)))
    return plain.stream_rows(execute, str(rows.compile(dialect=_INLINE[backend_named(PLAIN)],
                                                       compile_kwargs={"literal_binds": True})))
