"""SQLAlchemy 2 support: the ``SimHash64`` column type, its comparator, typed
SQL functions and the ``simhash_index`` constructor.

Importing this module needs only SQLAlchemy.  Values are sent as their decimal
text (which the server casts to ``simhash64``) and read back with ``int()``,
so a column round-trips Python ints on every driver whether or not its
adapters are registered; ``register_simhash(engine)`` registers them for raw
driver use (psycopg, psycopg2, asyncpg).

Two back ends (pysimhash_sql/backends.py, docs/managed.md): with the
extension, or, where it cannot be installed, core PostgreSQL alone (the
``bigint`` column, the GIN index on block keys and the ``bit_count`` recheck of
pysimhash_sql/plain.py).  ``register_simhash(engine)`` detects which on the
engine's first connection (or takes ``backend=``); the type, the comparator,
the typed functions ``hamming_within``/``hamming_distance`` and the DDL of
``simhash_index`` are compiled for the engine's back end.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from importlib import import_module
from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, Table, Text, event, func, literal
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql.base import ischema_names
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex
from sqlalchemy.sql import operators
from sqlalchemy.sql.base import SchemaEventTarget
from sqlalchemy.sql.elements import BindParameter, ClauseElement, Grouping
from sqlalchemy.sql.functions import FunctionElement, GenericFunction
from sqlalchemy.types import UserDefinedType

from . import plain
from . import text_spec as text_spec_module
from .text_spec import TEXT_SPEC_VERSION_LATEST
from .backends import NOT_CONSTANT, backend_for, chosen_backend, detect_backend, set_backend
from .fingerprint import check_fingerprint
from .index_kinds import GIN, MIH, OPCLASS, choose_method, index_params as _index_params, opclass_clause

__all__ = [
    "OPCLASS",
    "SimHash64",
    "GIN",
    "MIH",
    "index_fastupdate",
    "index_method",
    "index_parameters",
    "index_scope",
    "opclass_clause",
    "plain_layout",
    "register_simhash",
    "TEXT_SPEC_VERSION_LATEST",
    "simhash_index",
]

_INDEX_INFO_KEY = "simhash64_ops"
_INDEX_METHOD_KEY = "simhash_index_method"


def as_fingerprint(value: Any, type_: SimHash64 | None = None) -> ClauseElement:
    """A SQL expression for ``value``: itself if already one, else a bind of
    ``type_`` (the column's, so that its text spec is checked) or SimHash64."""
    if isinstance(value, ClauseElement) or hasattr(value, "__clause_element__"):
        # two declared columns (or func.simhash_v2(...)) of different versions: refused
        text_spec_module.check_columns(getattr(type_, "text_spec", None),
                                       getattr(getattr(value, "type", None), "text_spec", None))
        return value
    type_ = type_ if type_ is not None else SimHash64()
    type_._checked(value)  # a value of another text spec: ValueError now, not when the statement runs
    return literal(value, type_)


class SimHash64(SchemaEventTarget, UserDefinedType[int]):
    """The ``simhash64`` column type: Python ``int`` in 0 .. 2**64-1.

    ``text_spec``: the text fingerprint spec version the column holds
    (pysimhash_sql/text_spec.py); new models declare
    ``TEXT_SPEC_VERSION_LATEST``.  A value computed with another version
    (``hashing.simhash`` is version 1, ``simhash_v2`` version 2, ``simhash_v3``
    version 3) raises ValueError when bound to the column, in a query or an
    insert; plain ints
    are taken as they are.  Its column's comment records it (unless the
    column is given a comment of its own): CREATE TABLE and Alembic write it,
    the CLI reads it.  None (the default): undeclared, no check."""

    cache_ok = True

    def __init__(self, text_spec: int | None = None) -> None:
        self.text_spec = None if text_spec is None else text_spec_module.check_version(text_spec, "text_spec")

    def _set_parent(self, parent: Any, **kw: Any) -> None:
        # a Column made with this type: the comment that records its version
        if self.text_spec is not None and isinstance(parent, Column) and parent.comment is None:
            parent.comment = text_spec_module.comment(self.text_spec)

    def _checked(self, value: Any) -> int:
        return check_fingerprint(text_spec_module.check_spec(value, self.text_spec, "this simhash64 column"))

    def get_col_spec(self, **kw: Any) -> str:
        return "simhash64"

    @property
    def python_type(self) -> type:
        return int

    def bind_processor(self, dialect):
        bind_value = backend_for(dialect).bind_value

        def process(value):
            return None if value is None else bind_value(self._checked(value))

        return process

    def result_processor(self, dialect, coltype):
        spec = self.text_spec
        unsigned = backend_for(dialect).from_column

        def process(value):
            # a declared column's values carry its version (text_spec.TextFingerprint)
            if value is None:
                return None
            return unsigned(value) if spec is None else text_spec_module.tagged(unsigned(value), spec)

        return process

    def literal_processor(self, dialect):
        literal_sql = backend_for(dialect).literal_sql
        return lambda value: literal_sql(self._checked(value))

    class comparator_factory(UserDefinedType.Comparator):
        def hamming_distance(self, other: Any):
            """Number of differing bits, ``col <~> other`` (an integer)."""
            return hamming_distance_op(self.expr, as_fingerprint(other, self.type))

        def within(self, other: Any, max_distance: int):
            """``hamming_within(col, other, k)``: at most k differing bits; index-aware.
            A constant k outside 0..64 or not an integer: InvalidRadius
            (pysimhash_sql.backends), on either back end."""
            return func.hamming_within(self.expr, as_fingerprint(other, self.type), max_distance)


ischema_names["simhash64"] = SimHash64  # reflected columns come back as SimHash64


@event.listens_for(Table, "column_reflect")
def _reflected_text_spec(inspector, table: Table, column_info: dict) -> None:
    """A reflected fingerprint column declares the text spec version its
    comment records (text_spec.comment), as the model that made it did:
    ``Table(..., autoload_with=engine)``, ``MetaData.reflect`` and Alembic's
    autogenerate get ``SimHash64(text_spec=3)``, not an undeclared
    ``SimHash64()``.  Any column of the back end's fingerprint type with that
    comment is one of ours: on the plain back end a ``bigint`` one comes back
    as ``SimHash64(text_spec=N)`` (which compiles to bigint there).  Without
    the comment the column stays undeclared (no check), as ``SimHash64()`` in
    a model is."""
    recorded = text_spec_module.spec_of_comment(column_info.get("comment"))
    if recorded is None:
        return
    type_ = column_info["type"]
    fingerprint_type = type_.compile(dialect=inspector.dialect).lower() == backend_for(inspector.dialect).column_type
    if fingerprint_type and getattr(type_, "text_spec", None) is None:
        column_info["type"] = SimHash64(text_spec=text_spec_module.check_version(
            recorded, f"the comment of {table.fullname}.{column_info['name']}"))



@compiles(SimHash64)
def _column_type(type_, compiler, **kw) -> str:
    return backend_for(compiler.dialect).column_type


_DISTANCE_OPERATOR = operators.custom_op("<~>")


class hamming_distance_op(FunctionElement):
    """``a <~> b`` (the extension's operator), or the plain back end's
    ``bit_count`` distance: an integer."""

    type = Integer()
    inherit_cache = True

    def self_group(self, against=None):
        # Parenthesized as the binary operator it renders as.
        if against is not None and operators.is_precedent(_DISTANCE_OPERATOR, against):
            return Grouping(self)
        return self


@compiles(hamming_distance_op)
def _distance(element, compiler, **kw) -> str:
    a, b = element.clauses
    backend = backend_for(compiler.dialect)
    return backend.distance_sql(compiler.process(a, **kw), _parameter(backend, b, compiler, **kw))


# Typed SQL functions: func.<name>(...) returns the right SQLAlchemy type.
# Defining a GenericFunction subclass registers it under its class name.
FUNCTION_TYPES = {
    # a text fingerprint function (simhash, simhash_v2, simhash_v3): its version's
    **{name: partial(SimHash64, text_spec=version) for version, name in text_spec_module.SQL_FUNCTIONS.items()},
    "simhash_agg": SimHash64,
    "hamming_distance": Integer,
    "hamming_within": Boolean,
    "simhash64_to_hex": Text,
    "simhash_tokens": lambda: ARRAY(Text),
    "simhash_shingles": lambda: ARRAY(Text),
    "simhash_feature_hash": BigInteger,
}


class _RadiusInCacheKey:
    """hamming_within's radius (when a constant) is part of its statement cache
    key: on the plain back end the SQL itself depends on it (the index keys
    answer a radius up to the layout's max_distance, a scan beyond), so a
    statement compiled for k = 3 must never be reused for k = 5; and it is
    checked when compiled (InvalidRadius), so a statement compiled for k = 3
    is never reused for k = 3.0."""

    def _gen_cache_key(self, anon_map, bindparams):
        key = super()._gen_cache_key(anon_map, bindparams)
        if key is None:
            return None
        radius = getattr(list(self.clauses)[-1], "value", None)
        # its type too: True and 3.0 (refused, InvalidRadius) equal 1 and 3
        return (*key, ("radius", type(radius).__name__, radius))


def _define_typed_functions() -> dict[str, type]:
    def bases(name: str) -> tuple[type, ...]:
        return (_RadiusInCacheKey, GenericFunction) if name == "hamming_within" else (GenericFunction,)

    return {name: type(name, bases(name), {"type": make_type(), "inherit_cache": True, "__module__": __name__})
            for name, make_type in FUNCTION_TYPES.items()}


_TYPED_FUNCTIONS = _define_typed_functions()


def plain_layout(column: Any) -> plain.PlainLayout:
    """The plain index layout of a fingerprint column: that of the
    ``simhash_index`` on it in its table's metadata, else the default one
    (exact either way: the layout only decides which index can serve)."""
    for base in getattr(column, "proxy_set", ()):
        for index in getattr(getattr(base, "table", None), "indexes", ()):
            if _INDEX_METHOD_KEY in index.info and list(index.columns)[-1] is base:
                return _index_layout(index)
    return plain.PlainLayout()


def _index_layout(index: Index) -> plain.PlainLayout:
    params = index.info[_INDEX_INFO_KEY]
    return plain.PlainLayout.from_parameters(params.get("blocks"), params.get("max_distance"))


@compiles(_TYPED_FUNCTIONS["hamming_within"])
def _hamming_within(element, compiler, **kw) -> str:
    """The back end's radius query; a constant radius is checked
    (InvalidRadius: out of 0..64 or not an integer) on either back end."""
    column, other, max_distance = element.clauses
    backend = backend_for(compiler.dialect)
    constant = isinstance(max_distance, BindParameter) and max_distance.callable is None and not (
        max_distance.value is None and max_distance.required)
    return backend.within_sql(compiler.process(column, **kw), _parameter(backend, other, compiler, **kw),
                              compiler.process(max_distance, **kw),
                              max_distance.value if constant else NOT_CONSTANT, lambda: plain_layout(column))


def _parameter(backend: Any, value: Any, compiler: Any, **kw: Any) -> str:
    """A parameter as the back end compares it (a driver may send a small int
    as smallint); columns and other expressions as they are, so index
    expressions match."""
    sql = compiler.process(value, **kw)
    return backend.parameter_sql(sql) if isinstance(value, BindParameter) else sql


@compiles(_TYPED_FUNCTIONS["hamming_distance"])
def _hamming_distance(element, compiler, **kw) -> str:
    a, b = element.clauses
    backend = backend_for(compiler.dialect)
    return backend.distance_function_sql(lambda: compiler.visit_function(element, **kw), compiler.process(a, **kw),
                                         _parameter(backend, b, compiler, **kw))


def simhash_index(
    name: str | None,
    column: Any,
    blocks: int | None = None,
    max_distance: int | None = None,
    *,
    scope: Sequence[Any] = (),
    fastupdate: bool | None = None,
    method: str | None = None,
    runs: int | None = None,
    **kw: Any,
) -> Index:
    """A near-duplicate index on a fingerprint column, for ``within()``:
    ``method="simhash_mih"`` (the extension's access method, fast at every
    radius, the smaller) or ``method="gin"`` (the ``simhash64_ops`` operator
    class); docs/index.md says which to pick.

    Without a method: simhash_mih, unless the arguments are GIN's —
    ``blocks``, ``max_distance`` or ``fastupdate`` — so code written when GIN
    was the default with those keeps its index.

    ``column`` is a column name (as in ``__table_args__``) or a column.
    Parameters left as None take the index's defaults: ``blocks`` and
    ``max_distance`` are GIN's, ``runs`` is simhash_mih's.

    ``fastupdate`` is GIN's pending list of not-yet-merged entries, off here
    (PostgreSQL's default is on): with it, every lookup also scans the pending
    list, which cut the check-then-insert loop of a crawler to a fraction
    (docs/crawling.md).  Bulk loads are fastest without any index: create it
    after loading.

    ``scope``: columns the queries also compare with ``=`` (a crawler's
    ``domain``), put before the fingerprint: simhash_mih folds them into its
    keys and reads only the scope's rows (text, integer and uuid columns); a
    GIN index with scope needs ``CREATE EXTENSION btree_gin``, and so does
    a scoped index on the plain back end (docs/managed.md: GIN on the scope
    columns and the key array).
    docs/crawling.md measures the scoped shapes against a plain index.
    """
    key = column if isinstance(column, str) else column.key
    gin_options = blocks is not None or max_distance is not None or fastupdate is not None
    method = choose_method(method, gin_options=gin_options, mih_options=runs is not None)
    if method == GIN:
        if runs is not None:
            raise ValueError("runs is an option of simhash_mih indexes, not of GIN ones")
        params = _index_params(blocks=blocks, max_distance=max_distance)
        options = {"postgresql_ops": {key: opclass_clause(params)},
                   "postgresql_with": {"fastupdate": "on" if fastupdate else "off"}}
    else:
        if blocks is not None or max_distance is not None or fastupdate:
            raise ValueError("blocks, max_distance and fastupdate are options of GIN indexes, not of simhash_mih ones")
        params = _index_params(runs=runs)
        options = {"postgresql_with": {"runs": str(runs)}} if runs is not None else {}
    return Index(
        name,
        *scope,
        column,
        postgresql_using=method,
        info={_INDEX_INFO_KEY: params, _INDEX_METHOD_KEY: method},
        **options,
        **kw,
    )


@compiles(CreateIndex, "postgresql")
def _create_index(create, compiler, **kw) -> str:
    """A simhash_index on the plain back end: the GIN index on the key array of
    its layout (pysimhash_sql/plain.py), whatever method the model names."""
    index = create.element
    if _INDEX_METHOD_KEY not in index.info:
        return compiler.visit_create_index(create, **kw)
    preparer = compiler.preparer
    return backend_for(compiler.dialect).index_sql(
        lambda: compiler.visit_create_index(create, **kw), lambda: _index_layout(index),
        preparer.format_index(index), preparer.format_table(index.table), preparer.quote(list(index.columns)[-1].name),
        scope=[preparer.quote(name) for name in index_scope(index)], if_not_exists=bool(create.if_not_exists),
        concurrently=bool(index.dialect_options["postgresql"]["concurrently"]))


def index_method(index: Index) -> str:
    """The access method of an index made by ``simhash_index``: GIN or MIH."""
    return index.info.get(_INDEX_METHOD_KEY, GIN)


def index_parameters(index: Index) -> dict[str, int] | None:
    """The parameters given to ``simhash_index`` for an index it made (GIN's
    blocks and max_distance, or simhash_mih's runs), else None."""
    return index.info.get(_INDEX_INFO_KEY)


def index_scope(index: Index) -> list[str]:
    """The names of the scope columns of an index made by ``simhash_index``:
    all its columns but the last, the fingerprint."""
    return [column.name for column in list(index.columns)[:-1]]


def index_fastupdate(index: Index) -> bool:
    """Whether an index made by ``simhash_index`` has GIN's fastupdate on."""
    return index_method(index) == GIN and index.dialect_options["postgresql"]["with"].get("fastupdate", "on") == "on"


# How each driver SQLAlchemy may use registers the adapters on a new DBAPI
# connection: (module, function, is it a coroutine run on the async adapter).
_DRIVER_REGISTRATION = {
    ("psycopg", False): ("psycopg", "register_simhash", False),
    ("psycopg", True): ("psycopg", "register_simhash_async", True),
    ("psycopg2", False): ("psycopg2", "register_simhash", False),
    ("asyncpg", True): ("asyncpg", "register_simhash", True),
}


def register_simhash(engine, backend: str | None = None) -> None:
    """Choose the engine's back end (pysimhash_sql/backends.py): ``backend``
    (EXTENSION or PLAIN) if given, else detected on its first connection (is
    the extension installed in the database?); and, on the extension's,
    register the driver's simhash64 adapters on every connection ``engine``
    opens (an Engine or an AsyncEngine on psycopg, psycopg2 or asyncpg), so
    raw driver results are ints too.  Other drivers raise ValueError here,
    before any connection is made."""
    sync_engine = getattr(engine, "sync_engine", engine)
    dialect = sync_engine.dialect
    if backend is not None:
        set_backend(dialect, backend)
    key = (dialect.driver, bool(dialect.is_async))
    if key not in _DRIVER_REGISTRATION:
        supported = ", ".join(sorted({driver for driver, _ in _DRIVER_REGISTRATION}))
        raise ValueError(f"register_simhash supports the {supported} drivers, not {dialect.driver}")
    module, function, is_async = _DRIVER_REGISTRATION[key]
    register = getattr(import_module(f".{module}", __package__), function)  # only engines need the driver

    @event.listens_for(sync_engine, "connect")
    def _register(dbapi_connection, _record) -> None:
        if chosen_backend(dialect) is None:
            set_backend(dialect, detect_backend(dbapi_connection))
            dbapi_connection.rollback()
        backend_for(dialect).register_adapters(dbapi_connection, register, is_async)
