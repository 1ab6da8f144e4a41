"""The two back ends (docs/managed.md), each one object that owns everything
in which they differ; the rest of the package asks its back end, never which
one it is:

- ``EXTENSION`` (``Extension``): the simhash extension is installed
  (``simhash64``, ``hamming_within``, simhash_mih/GIN indexes,
  ``simhash_lock_near``, ``simhash_find_all``);
- ``PLAIN`` (``Plain``): core PostgreSQL 14+ only, as on a managed service
  where ``CREATE EXTENSION simhash`` is not allowed: fingerprints in
  ``bigint`` columns, block keys in a GIN expression index, the recheck by
  ``bit_count`` (the SQL is pysimhash_sql/plain.py's).

A back end is chosen once per engine and never mixed: ``register_simhash(engine)``
(pysimhash_sql.sqlalchemy) detects it on the engine's first connection (is the
extension installed in that database?), or takes it as ``backend=``; the
choice lives on the engine's dialect, which compiles every statement.  The
helpers that run statements (``run_find_all``, ``insert_unless_near_duplicate``...)
take it with ``backend_for``, which opens a Session's connection first, so the
back end is known before their first statement.  The CLI detects it with
``detect`` (psycopg).  What differs is said here in SQL text and Python
values: importing this module needs no SQLAlchemy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from operator import index as as_integer
from typing import Any

from . import plain, text_spec
from ._find_all import id_clusters, id_pairs
from .fingerprint import check_fingerprint, to_sql_literal

EXTENSION = "extension"
PLAIN = "plain"
BACKENDS = (EXTENSION, PLAIN)

DETECT_SQL = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'simhash')"
"""Whether the extension is installed in the connection's database."""
AVAILABLE_SQL = "SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'simhash')"
"""Whether the server could create it (its files are installed)."""
COLUMN_TYPE_SQL = """SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                     WHERE attrelid = to_regclass(%s) AND attname = %s AND attnum > 0 AND NOT attisdropped"""
"""The type of a table's column (psycopg's parameters): a table's own back end."""

RADIUS_MAX = 64
INVALID_PARAMETER_VALUE = "22023"

Run = Callable[[str, dict], list]
"""Runs a SQL statement with ``:name`` parameters, returns its rows."""


class InvalidRadius(ValueError):
    """A Hamming radius outside 0..64 or not an integer: refused before any
    SQL is sent, with the extension's SQLSTATE and message
    (simhash_check_radius, pg_ext/src/type/hamming.c), on both back ends."""

    sqlstate = INVALID_PARAMETER_VALUE
    detail = "A distance between simhash64 values is between 0 and 64."

    def __init__(self, radius: Any) -> None:
        self.message = f"Hamming distance {radius!r} is out of range"
        super().__init__(self.message)


def check_radius(radius: Any) -> int:
    """``radius`` as an int in 0..64 (an integer: numpy's too, not bool),
    else InvalidRadius."""
    if isinstance(radius, bool):
        raise InvalidRadius(radius)
    try:
        value = as_integer(radius)
    except TypeError:
        raise InvalidRadius(radius) from None
    if not 0 <= value <= RADIUS_MAX:
        raise InvalidRadius(value)
    return value


def check_workers(workers: int | None) -> int | None:
    """find_all's and clusters's ``workers``: None (the default) or 0 or more."""
    if workers is not None and workers < 0:
        raise ValueError(f"workers must be 0 or more, got {workers}")
    return workers


class RepeatableReadError(RuntimeError):
    """The plain back end's lock was asked for under REPEATABLE READ."""


class MissingFunction(LookupError):
    """The extension in the database is older than a function asked for."""


class Rows(ABC):
    """The (id, fingerprint) rows a find_all or clusters reads, and how its
    caller runs statements (pysimhash_sql.queries: on a Session or Connection)."""

    @abstractmethod
    def sql(self) -> str:
        """The rows' query, values inlined as this back end writes them."""

    @abstractmethod
    def run(self, sql: str, params: dict) -> list:
        """Runs a statement with ``:name`` parameters; its rows."""

    @abstractmethod
    def stream(self) -> tuple:
        """The rows with a fingerprint, streamed to the client
        (``plain.stream_rows``): int64 ids, uint64 fingerprints."""


class Backend(ABC):
    """What a back end decides: the column's type and values, the SQL of a
    radius query, of a distance and of the index, find_all and clusters, the
    near-duplicate lock, the database's preparation, the fingerprints of
    refingerprint and the reflection of its indexes by Alembic."""

    name: str
    column_type: str
    """The SQL type of a fingerprint column."""
    near_row_limit: int | None
    """The LIMIT of insert_unless_near_duplicate's check for a stored near row."""

    def __repr__(self) -> str:
        return f"<{self.name} back end>"

    # -- values

    @abstractmethod
    def to_column(self, fingerprint: int) -> int:
        """A fingerprint (0 .. 2**64-1) as the column's value."""

    @abstractmethod
    def from_column(self, value: Any) -> int:
        """A column's value as the fingerprint."""

    @abstractmethod
    def bind_value(self, fingerprint: int) -> int | str:
        """A fingerprint as the parameter a driver sends."""

    @abstractmethod
    def literal_sql(self, fingerprint: int) -> str:
        """A fingerprint as a SQL constant."""

    # -- SQL of the expressions

    @abstractmethod
    def parameter_sql(self, sql: str) -> str:
        """A parameter compared with a fingerprint column (a driver may send a
        small int as smallint)."""

    def within_sql(self, column: str, other: str, radius_sql: str, radius: Any,
                   layout: Callable[[], plain.PlainLayout]) -> str:
        """``hamming_within(column, other, radius)``; ``radius`` is the
        radius's value when a constant (checked: InvalidRadius), else
        ``NOT_CONSTANT``; ``layout()`` is the plain index's of the column."""
        if radius is not NOT_CONSTANT and radius is not None:
            radius = check_radius(radius)
        return self._within_sql(column, other, radius_sql, radius if isinstance(radius, int) else None, layout)

    @abstractmethod
    def _within_sql(self, column: str, other: str, radius_sql: str, radius: int | None,
                    layout: Callable[[], plain.PlainLayout]) -> str: ...

    @abstractmethod
    def distance_sql(self, a: str, b: str) -> str:
        """The Hamming distance of two fingerprint SQL expressions."""

    def nearest(self, rows: Callable[[int | None], list], n: int, layout: Callable[[], plain.PlainLayout]) -> list:
        """The n rows nearest to a fingerprint, exactly: ``rows(radius)`` runs
        ``ORDER BY distance LIMIT n`` over the rows within ``radius`` bits
        (None: over every row).  The rows within ``nearest_lookup_radius``
        first, when the back end has one: if there are n, they are the n
        nearest (every other row is farther); else every row."""
        radius = self.nearest_lookup_radius(layout)
        if radius is not None:
            found = rows(radius)
            if len(found) >= n:
                return found
        return rows(None)

    @abstractmethod
    def nearest_lookup_radius(self, layout: Callable[[], plain.PlainLayout]) -> int | None:
        """The radius of the index lookup ``nearest`` tries first (``layout()``
        is the plain index's of the column), None when ``ORDER BY distance
        LIMIT n`` goes through an index by itself."""

    @abstractmethod
    def distance_function_sql(self, extension_sql: Callable[[], str], a: str, b: str) -> str:
        """``hamming_distance(a, b)``: ``extension_sql()`` (the function
        call), or the back end's distance."""

    @abstractmethod
    def index_sql(self, extension_sql: Callable[[], str], layout: Callable[[], plain.PlainLayout], index: str,
                  table: str, column: str, scope: Sequence[str] = (), if_not_exists: bool = False,
                  concurrently: bool = False) -> str:
        """CREATE INDEX of a near-duplicate index (names quoted):
        ``extension_sql()`` (the extension's, as its model says), or the plain
        index of ``layout()``."""

    @abstractmethod
    def index_needs(self, method: str, scoped: bool) -> list[str]:
        """The extensions an index of ``method`` (scoped or not) needs besides."""

    # -- the database

    @abstractmethod
    def register_adapters(self, dbapi_connection: Any, register: Callable, is_async: bool) -> None:
        """The driver's simhash64 adapters on a new connection (``register``)."""

    @abstractmethod
    def needs_creating(self, installed: Callable[[], bool]) -> bool:
        """Whether a migration must create the extension (``installed()`` asks)."""

    @abstractmethod
    def prepare_sql(self) -> list[str]:
        """The statements that make a database ready for new tables."""

    @abstractmethod
    def fingerprints_in_server(self, has_function: Callable[[str], bool], function: str) -> bool:
        """Whether the server computes fingerprints (``function(text)``)."""

    @abstractmethod
    def fingerprint_function(self, run_one: Callable[[str, tuple], Any], version: int) -> tuple[str, str] | None:
        """The SQL function (schema, name) that fingerprints a text under
        text spec ``version`` in triggers; MissingFunction if the extension
        lacks it (text_spec.missing_function_message); None: the client
        computes them (refingerprint's plain back end)."""

    # -- executed

    def lock_near(self, run: Run, fingerprint: int, max_distance: int, scope: str | None) -> None:
        """``simhash_lock_near(fingerprint, max_distance, scope)``'s advisory
        locks, until the transaction ends; max_distance checked as a radius
        (InvalidRadius) before."""
        self._lock_near(run, fingerprint, max_distance if max_distance is None else check_radius(max_distance), scope)

    @abstractmethod
    def _lock_near(self, run: Run, fingerprint: int, max_distance: int, scope: str | None) -> None: ...

    @abstractmethod
    def find_all(self, rows: Rows, max_distance: int, blocks: int | None, workers: int | None) -> list[tuple]:
        """(id1, id2, distance) of every pair of rows within max_distance bits, id1 < id2."""

    @abstractmethod
    def clusters(self, rows: Rows, max_distance: int, blocks: int | None, include_singletons: bool,
                 workers: int | None) -> list[tuple]:
        """(id, cluster_id) of the rows' connected components (cluster id: the smallest member's)."""

    @abstractmethod
    def pick(self, on_extension: Any, on_plain: Any) -> Any:
        """Of two whole versions of a flow that a caller owns and that share
        nothing but their inputs (the CLI's reports computed by the server or
        here, Alembic's two index reflections), this back end's."""


NOT_CONSTANT = object()
"""within_sql's radius when it is not a constant (a column, a bind without value)."""


class Extension(Backend):
    name = EXTENSION
    column_type = "simhash64"
    near_row_limit = 1

    def to_column(self, fingerprint: int) -> int:
        return fingerprint

    def from_column(self, value: Any) -> int:
        return int(value)

    def bind_value(self, fingerprint: int) -> str:
        return str(fingerprint)

    def literal_sql(self, fingerprint: int) -> str:
        return to_sql_literal(fingerprint)

    def parameter_sql(self, sql: str) -> str:
        return sql

    def _within_sql(self, column, other, radius_sql, radius, layout) -> str:
        return f"hamming_within({column}, {other}, {radius_sql})"

    def distance_sql(self, a: str, b: str) -> str:
        return f"{a} <~> {b}"

    def distance_function_sql(self, extension_sql, a: str, b: str) -> str:
        return extension_sql()

    def nearest_lookup_radius(self, layout) -> None:
        return None  # a simhash_mih index orders by <~> (GIN cannot: a scan)

    def index_sql(self, extension_sql, layout, index, table, column, scope=(), if_not_exists=False,
                  concurrently=False) -> str:
        return extension_sql()

    def register_adapters(self, dbapi_connection, register, is_async: bool) -> None:
        if is_async:
            dbapi_connection.run_async(register)
        else:
            register(dbapi_connection)

    def index_needs(self, method: str, scoped: bool) -> list[str]:
        from .index_kinds import GIN

        return [plain.SCOPE_EXTENSION] if scoped and method == GIN else []

    def needs_creating(self, installed: Callable[[], bool]) -> bool:
        return not installed()

    def prepare_sql(self) -> list[str]:
        return ["CREATE EXTENSION IF NOT EXISTS simhash"]

    def fingerprints_in_server(self, has_function: Callable[[str], bool], function: str) -> bool:
        return has_function(f"{function}(text)")

    def fingerprint_function(self, run_one, version: int) -> tuple[str, str]:
        function = text_spec.sql_function(version)
        if not run_one(TEXT_FUNCTION_SQL, (function,))[0]:
            raise MissingFunction(text_spec.missing_function_message(version))
        return run_one(EXTENSION_SCHEMA_SQL, ())[0], function

    def _lock_near(self, run: Run, fingerprint: int, max_distance: int, scope: str | None) -> None:
        run("SELECT simhash_lock_near(CAST(:fp AS simhash64), :k, CAST(:scope AS text))",
            {"fp": str(check_fingerprint(fingerprint)), "k": max_distance, "scope": scope})

    def _server(self, rows: Rows, function: str, columns: str, max_distance: int, blocks: int | None,
                workers: int | None, *flags: bool) -> list[tuple]:
        """``function(query, k, blocks, *flags[, workers])``'s rows; workers
        only when given (extension 1.1 has no workers parameter)."""
        params = {"query": rows.sql(), "k": max_distance, "blocks": blocks,
                  **{f"flag{i}": flag for i, flag in enumerate(flags)}}
        arguments = ["CAST(:query AS text)", ":k", "CAST(:blocks AS integer)",
                     *(f"CAST(:flag{i} AS boolean)" for i in range(len(flags)))]
        if check_workers(workers) is not None:
            params["workers"] = workers
            arguments.append("CAST(:workers AS integer)")
        return [tuple(row) for row in rows.run(f"SELECT {columns} FROM {function}({', '.join(arguments)})", params)]

    def find_all(self, rows, max_distance, blocks, workers) -> list[tuple]:
        return self._server(rows, "simhash_find_all", "id1, id2, distance", max_distance, blocks, workers)

    def clusters(self, rows, max_distance, blocks, include_singletons, workers) -> list[tuple]:
        return self._server(rows, "simhash_clusters", "id, cluster_id", max_distance, blocks, workers,
                            bool(include_singletons))

    def pick(self, on_extension, on_plain):
        return on_extension


class Plain(Backend):
    name = PLAIN
    column_type = "bigint"
    # Without LIMIT: the planner, which cannot estimate the bit_count recheck,
    # would read the whole table for "the first row".
    near_row_limit = None

    def to_column(self, fingerprint: int) -> int:
        return plain.to_signed(fingerprint)

    def from_column(self, value: Any) -> int:
        return plain.to_unsigned(int(value))

    def bind_value(self, fingerprint: int) -> int:
        return plain.to_signed(fingerprint)

    def literal_sql(self, fingerprint: int) -> str:
        return str(plain.to_signed(fingerprint))

    def parameter_sql(self, sql: str) -> str:
        return f"CAST({sql} AS BIGINT)"

    def _within_sql(self, column, other, radius_sql, radius, layout) -> str:
        return layout().within_sql(column, other, radius_sql, radius)

    def distance_sql(self, a: str, b: str) -> str:
        return plain.distance_sql(a, b)

    def nearest_lookup_radius(self, layout) -> int:
        # every radius up to the layout's max_distance is the same lookup (the
        # same key overlap, a different recheck): its widest, once
        return layout().max_distance

    def distance_function_sql(self, extension_sql, a: str, b: str) -> str:
        return self.distance_sql(a, b)

    def register_adapters(self, dbapi_connection, register, is_async: bool) -> None:
        pass  # no simhash64 type: bigint values need no adapter

    def index_sql(self, extension_sql, layout, index, table, column, scope=(), if_not_exists=False,
                  concurrently=False) -> str:
        return layout().index_sql(index, table, column, scope=scope, if_not_exists=if_not_exists,
                                concurrently=concurrently)

    def index_needs(self, method: str, scoped: bool) -> list[str]:
        return [plain.SCOPE_EXTENSION] if scoped else []

    def needs_creating(self, installed: Callable[[], bool]) -> bool:
        return False

    def prepare_sql(self) -> list[str]:
        return []

    def fingerprints_in_server(self, has_function: Callable[[str], bool], function: str) -> bool:
        return False  # no simhash(text) in the server; the same bits computed by the client

    def fingerprint_function(self, run_one, version: int) -> None:
        return None

    def _lock_near(self, run: Run, fingerprint: int, max_distance: int, scope: str | None) -> None:
        keys = plain.lock_keys([fingerprint], max_distance, scope)
        isolation = run(plain.LOCK_SQL, {"keys": keys})[0][1]
        if isolation == "repeatable read":
            raise RepeatableReadError(
                "the near-duplicate lock does not protect a REPEATABLE READ transaction: its snapshot predates "
                "the lock, so the check after it cannot see what a writer holding the lock committed; "
                "use READ COMMITTED (the default) or SERIALIZABLE")

    def _pairs(self, rows: Rows, max_distance: int, blocks: int | None, workers: int | None) -> tuple:
        ids, fps = rows.stream()
        return ids, id_pairs(ids, fps, max_distance, blocks, workers, ids_checked=True)

    def find_all(self, rows, max_distance, blocks, workers) -> list[tuple]:
        return list(self._pairs(rows, max_distance, blocks, workers)[1])

    def clusters(self, rows, max_distance, blocks, include_singletons, workers) -> list[tuple]:
        ids, pairs = self._pairs(rows, max_distance, blocks, workers)
        return list(id_clusters(pairs, ids if include_singletons else None))

    def pick(self, on_extension, on_plain):
        return on_plain


TEXT_FUNCTION_SQL = """SELECT EXISTS (SELECT FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
                       AND d.objid = p.oid AND d.refclassid = 'pg_extension'::regclass
                       JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
                       WHERE p.proname = %s AND p.proargtypes[0] = 'text'::regtype)"""
EXTENSION_SCHEMA_SQL = """SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                          WHERE e.extname = 'simhash'"""

_BACKENDS = {backend.name: backend for backend in (Extension(), Plain())}
_BY_COLUMN_TYPE = {backend.column_type: backend for backend in _BACKENDS.values()}
_ATTRIBUTE = "_pysimhash_sql_backend"


def backend_named(name: str) -> Backend:
    """The back end of a name (EXTENSION, PLAIN); ValueError for another."""
    try:
        return _BACKENDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {name!r}") from None


def holding(column_type: str) -> Backend:
    """The back end whose fingerprint column is of this SQL type: plain's
    bigint, else the extension's."""
    return _BY_COLUMN_TYPE.get(column_type, _BACKENDS[EXTENSION])


def _dialect(target: Any) -> Any:
    """The dialect of an Engine, AsyncEngine, Connection or of a dialect itself."""
    target = getattr(target, "sync_engine", target)
    return getattr(target, "dialect", target)


def backend_for(target: Any) -> Backend:
    """The back end of an engine, connection or dialect, or of a Session's
    bind: its connection is opened first (the engine's first connection
    detects the back end), so it is known before any statement is compiled.
    A dialect no engine registered renders the extension's SQL."""
    if hasattr(target, "sync_session"):  # an AsyncSession: its bind (a connection is opened by awaiting)
        target = target.sync_session.get_bind()
    elif hasattr(target, "get_bind"):  # a Session: the connection it would open for its next statement
        target = target.connection()
    return getattr(_dialect(target), _ATTRIBUTE, None) or _BACKENDS[EXTENSION]


def backend_of(target: Any) -> str:
    """The name of an engine's (or connection's, or dialect's) back end:
    EXTENSION unless PLAIN was chosen or detected for it."""
    return backend_for(target).name


def chosen_backend(target: Any) -> str | None:
    """The name of the back end chosen or detected for an engine, None before either."""
    backend = getattr(_dialect(target), _ATTRIBUTE, None)
    return None if backend is None else backend.name


def set_backend(target: Any, backend: str) -> None:
    """Fix the back end of an engine's dialect; ValueError for an unknown one or
    for a change (an engine never mixes the two)."""
    chosen = backend_named(backend)
    dialect = _dialect(target)
    current = getattr(dialect, _ATTRIBUTE, None)
    if current is not None and current is not chosen:
        raise ValueError(f"this engine already uses the {current.name} back end, not {chosen.name}: "
                         "one engine per back end (docs/managed.md)")
    setattr(dialect, _ATTRIBUTE, chosen)


def detect_backend(dbapi_connection: Any) -> str:
    """EXTENSION if the extension is installed in the database of a DBAPI
    connection (SQLAlchemy's, sync or adapted async), else PLAIN."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(DETECT_SQL)
        (installed,) = cursor.fetchone()
    finally:
        cursor.close()
    return EXTENSION if installed else PLAIN


def detect(run_one: Callable[[str, tuple], Any], chosen: str = "auto", table: str | None = None,
           column: str | None = None, creating: bool = False) -> Backend:
    """The back end of a database for the CLI: ``chosen`` if not "auto", else
    the type of the table's fingerprint column if it has one (given
    ``table`` and ``column``: bigint is plain), else the extension if the
    database has it (or, ``creating``, can create it), else plain.
    ``run_one(sql, params)`` runs a statement, returns its first row."""
    if chosen != "auto":
        return backend_named(chosen)
    if table is not None and column is not None:
        existing = run_one(COLUMN_TYPE_SQL, (table, column))
        if existing is not None:
            return holding(existing[0])
    if run_one(DETECT_SQL, ())[0] or (creating and run_one(AVAILABLE_SQL, ())[0]):
        return _BACKENDS[EXTENSION]
    return _BACKENDS[PLAIN]
