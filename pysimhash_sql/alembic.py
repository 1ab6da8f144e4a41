"""Alembic support: migration operations and autogenerate (an Alembic plugin).

Operations, available as ``op.<name>`` once this module is imported (env.py
does, for render_item; migrations that use them import it too)::

    op.create_simhash_extension()            op.drop_simhash_extension()
    op.create_simhash_index("documents_fingerprint_idx", "documents", "fingerprint",
                            method="simhash_mih")            # runs=4: its option
    op.create_simhash_index("pages_domain_fingerprint_idx", "pages", "fingerprint",
                            method="simhash_mih", scope=["domain"])  # per site
    op.create_simhash_index("pages_domain_fingerprint_gin", "pages", "fingerprint",
                            method="gin", scope=["domain"])  # two-column GIN (btree_gin)
    op.create_simhash_index("documents_fingerprint_gin", "documents", "fingerprint",
                            method="gin", blocks=6, max_distance=3)
    op.drop_simhash_index("documents_fingerprint_idx", "documents", "fingerprint", method="simhash_mih")

A migration is a record: without ``method`` the operations mean GIN (as in
every migration file written before simhash_mih became the default; GIN's
options without a method mean GIN, ``runs`` means simhash_mih), so an old file
keeps creating what it created.  Autogenerate writes the method in every
operation, taking it from the model (``simhash_index``, whose default is
simhash_mih).

Autogenerate, enabled by two additions to ``env.py``::

    from pysimhash_sql.alembic import render_item
    context.configure(..., render_item=render_item,
                      autogenerate_plugins=["alembic.autogenerate.*", "pysimhash_sql"])

(the plugin is the ``alembic.plugins`` entry point, pysimhash_sql.alembic_plugin).
It then creates the extension first when the models use ``SimHash64`` and the
database lacks it, renders ``SimHash64`` columns with their import, emits the
operations above for ``simhash_index`` indexes, detects changed index
parameters, scope columns and methods, which Alembic's own index comparison
does not look at (so a model's ``simhash_index(name, column)`` on a table
indexed with GIN migrates it to simhash_mih), and gives type changes between
an integer column and ``SimHash64`` the ``postgresql_using`` their downgrade
needs.  It leaves out the ``drop_column`` of a column ``pysimhash-sql
refingerprint`` keeps in step beside the model's (the old column
``--keep-old`` kept, until ``--drop-kept`` drops it; a move's shadow column),
which no model declares.  It does not compare ``fastupdate``: an index made with GIN's default
(on) keeps it until ``ALTER INDEX ... SET (fastupdate = off)``.

On the plain back end (docs/managed.md; env.py names it: ``set_backend(engine,
"plain")``), autogenerate creates no extension, takes a ``bigint`` column for
a ``SimHash64`` one, and reads the plain indexes (GIN on the key array of a
layout, pysimhash_sql/plain.py) as simhash indexes with their layout, so a
model's layout change migrates them.  ``op.move_simhash_to_extension`` and
``op.move_simhash_to_plain`` move a table between the back ends (the column's
type and its index, every bit kept); each is the other's downgrade.
"""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import renderers
from alembic.operations import MigrateOperation, Operations, ops
from alembic.util import PriorityDispatchResult
from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, Table, text

from . import plain, text_spec
from .backends import BACKENDS, backend_for, backend_named
from .index_kinds import choose_method
from .sqlalchemy import (
    GIN, MIH, OPCLASS, SimHash64, index_fastupdate, index_method, index_parameters, index_scope, plain_layout,
    simhash_index,
)

__all__ = [
    "CreateSimhashExtensionOp",
    "CreateSimhashIndexOp",
    "DropSimhashExtensionOp",
    "DropSimhashIndexOp",
    "AlterSimhashColumnOp",
    "MoveSimhashOp",
    "compare_column_types",
    "compare_extension",
    "compare_indexes",
    "compare_refingerprint_columns",
    "render_item",
]

EXTENSION = "simhash"
PLUGIN_IMPORT = "import pysimhash_sql.alembic"


# ---------------------------------------------------------------- operations


@Operations.register_operation("create_simhash_extension")
class CreateSimhashExtensionOp(MigrateOperation):
    """CREATE EXTENSION IF NOT EXISTS simhash."""

    @classmethod
    def create_simhash_extension(cls, operations: Operations) -> Any:
        return operations.invoke(cls())

    def reverse(self) -> DropSimhashExtensionOp:
        return DropSimhashExtensionOp()

    def to_diff_tuple(self) -> tuple:
        return ("add_extension", EXTENSION)


@Operations.register_operation("drop_simhash_extension")
class DropSimhashExtensionOp(MigrateOperation):
    """DROP EXTENSION IF EXISTS simhash."""

    @classmethod
    def drop_simhash_extension(cls, operations: Operations) -> Any:
        return operations.invoke(cls())

    def reverse(self) -> CreateSimhashExtensionOp:
        return CreateSimhashExtensionOp()

    def to_diff_tuple(self) -> tuple:
        return ("remove_extension", EXTENSION)


class _SimhashIndexOp(MigrateOperation):
    """What both index operations know: enough to build the index itself."""

    def __init__(
        self,
        index_name: str,
        table_name: str,
        column_name: str,
        blocks: int | None = None,
        max_distance: int | None = None,
        schema: str | None = None,
        *,
        scope: list[str] | None = None,
        fastupdate: bool = False,
        method: str | None = None,
        runs: int | None = None,
    ) -> None:
        self.index_name = index_name
        self.table_name = table_name
        self.column_name = column_name
        self.blocks = blocks
        self.max_distance = max_distance
        self.schema = schema
        self.scope = list(scope) if scope else None
        self.fastupdate = fastupdate
        self.method = choose_method(method, gin_options=blocks is not None or max_distance is not None or fastupdate,
                                    mih_options=runs is not None, migration=True)
        self.runs = runs

    @classmethod
    def from_index(cls, index: Index) -> _SimhashIndexOp:
        return cls(index.name, index.table.name, list(index.columns)[-1].name, schema=index.table.schema,
                   scope=index_scope(index), fastupdate=index_fastupdate(index), method=index_method(index),
                   **index_parameters(index))

    def to_index(self) -> Index:
        scope = [Column(name) for name in self.scope or ()]
        table = Table(self.table_name, MetaData(), *scope, Column(self.column_name, SimHash64()), schema=self.schema)
        return simhash_index(self.index_name, table.c[self.column_name], self.blocks, self.max_distance,
                             scope=[table.c[c.name] for c in scope], fastupdate=self.fastupdate,
                             method=self.method, runs=self.runs)

    def _swapped(self, cls: type[_SimhashIndexOp]) -> _SimhashIndexOp:
        return cls(**vars(self))

    def render(self, verb: str) -> str:
        """The call, with the method always named: a file stays what it was
        written as whatever the default becomes."""
        args = [repr(self.index_name), repr(self.table_name), repr(self.column_name), f"method={self.method!r}"]
        for name in ("blocks", "max_distance", "schema", "scope"):
            if getattr(self, name) is not None:
                args.append(f"{name}={getattr(self, name)!r}")
        if self.fastupdate:
            args.append("fastupdate=True")
        if self.runs is not None:
            args.append(f"runs={self.runs!r}")
        return f"op.{verb}_simhash_index({', '.join(args)})"


@Operations.register_operation("create_simhash_index")
class CreateSimhashIndexOp(_SimhashIndexOp):
    """With method="simhash_mih": CREATE INDEX ... USING simhash_mih (column) [WITH (runs = n)];
    with method="gin", or no method (module notes): CREATE INDEX ... USING gin ([scope columns,]
    column simhash64_ops (...)) WITH (fastupdate = off)."""

    @classmethod
    def create_simhash_index(cls, operations: Operations, index_name: str, table_name: str,
                             column_name: str, blocks: int | None = None,
                             max_distance: int | None = None, schema: str | None = None, *,
                             scope: list[str] | None = None, fastupdate: bool = False,
                             method: str | None = None, runs: int | None = None) -> Any:
        return operations.invoke(cls(index_name, table_name, column_name, blocks, max_distance, schema,
                                     scope=scope, fastupdate=fastupdate, method=method, runs=runs))

    def reverse(self) -> DropSimhashIndexOp:
        return self._swapped(DropSimhashIndexOp)

    def to_diff_tuple(self) -> tuple:
        return ("add_index", self.to_index())


@Operations.register_operation("drop_simhash_index")
class DropSimhashIndexOp(_SimhashIndexOp):
    """DROP INDEX; keeps the parameters so that downgrade recreates the index."""

    @classmethod
    def drop_simhash_index(cls, operations: Operations, index_name: str, table_name: str,
                           column_name: str, blocks: int | None = None,
                           max_distance: int | None = None, schema: str | None = None, *,
                           scope: list[str] | None = None, fastupdate: bool = False,
                           method: str | None = None, runs: int | None = None) -> Any:
        return operations.invoke(cls(index_name, table_name, column_name, blocks, max_distance, schema,
                                     scope=scope, fastupdate=fastupdate, method=method, runs=runs))

    def reverse(self) -> CreateSimhashIndexOp:
        return self._swapped(CreateSimhashIndexOp)

    def to_diff_tuple(self) -> tuple:
        return ("remove_index", self.to_index())


@Operations.implementation_for(CreateSimhashExtensionOp)
def _create_extension(operations: Operations, operation: CreateSimhashExtensionOp) -> None:
    operations.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")


@Operations.implementation_for(DropSimhashExtensionOp)
def _drop_extension(operations: Operations, operation: DropSimhashExtensionOp) -> None:
    operations.execute(f"DROP EXTENSION IF EXISTS {EXTENSION}")


@Operations.implementation_for(CreateSimhashIndexOp)
def _create_index(operations: Operations, operation: CreateSimhashIndexOp) -> None:
    # btree_gin's operator classes (a trusted extension): a scoped GIN index,
    # and any scoped index on the plain back end (GIN on the key array)
    for needed in backend_for(operations.impl.dialect).index_needs(operation.method, bool(operation.scope)):
        operations.execute(f"CREATE EXTENSION IF NOT EXISTS {needed}")
    operations.impl.create_index(operation.to_index())


@Operations.implementation_for(DropSimhashIndexOp)
def _drop_index(operations: Operations, operation: DropSimhashIndexOp) -> None:
    operations.impl.drop_index(operation.to_index())


class AlterSimhashColumnOp(ops.AlterColumnOp):
    """alter_column between SimHash64 and an integer type, with a USING clause:
    PostgreSQL converts simhash64 to bigint only when asked (an explicit cast).
    ``USING column::bigint`` serves both directions (bigint converts to
    simhash64 by itself), so the downgrade that reverse() makes keeps it."""

    @classmethod
    def from_alter_column(cls, op: ops.AlterColumnOp, column_sql: str) -> AlterSimhashColumnOp:
        fields = ("existing_type", "existing_server_default", "existing_nullable", "existing_comment",
                  "modify_nullable", "modify_comment", "modify_server_default", "modify_name", "modify_type")
        return cls(op.table_name, op.column_name, schema=op.schema, **{f: getattr(op, f) for f in fields},
                   **{**op.kw, "postgresql_using": f"{column_sql}::bigint"})


# ----------------------------------------------------------------- rendering


def _render(verb: str):
    def render(autogen_context, operation) -> str:
        autogen_context.imports.add(PLUGIN_IMPORT)
        if isinstance(operation, _SimhashIndexOp):
            return operation.render(verb)
        return f"op.{verb}_simhash_extension()"

    return render


for _op, _verb in [
    (CreateSimhashExtensionOp, "create"),
    (DropSimhashExtensionOp, "drop"),
    (CreateSimhashIndexOp, "create"),
    (DropSimhashIndexOp, "drop"),
]:
    renderers.dispatch_for(_op)(_render(_verb))


@renderers.dispatch_for(AlterSimhashColumnOp)
def _render_alter_column_using(autogen_context, operation: AlterSimhashColumnOp) -> str:
    """Alembic's own alter_column, plus the postgresql_using it leaves out."""
    rendered = renderers.dispatch(ops.AlterColumnOp)(autogen_context, operation)
    return f"{rendered[:-1]},\n{' ' * 11}postgresql_using={operation.kw['postgresql_using']!r})"


def render_item(type_: str, obj: Any, autogen_context) -> str | bool:
    """``render_item`` for env.py: SimHash64 columns render with their import
    (and their text spec, when declared)."""
    if type_ == "type" and isinstance(obj, SimHash64):
        autogen_context.imports.add("from pysimhash_sql.sqlalchemy import SimHash64")
        return "SimHash64()" if obj.text_spec is None else f"SimHash64(text_spec={obj.text_spec})"
    return False


# -------------------------------------------------------------- autogenerate


def _uses_simhash(autogen_context) -> bool:
    return any(
        isinstance(column.type, SimHash64)
        for table in autogen_context.sorted_tables
        for column in table.columns
    )


def compare_extension(autogen_context, upgrade_ops: ops.UpgradeOps) -> PriorityDispatchResult:
    """The extension goes first in upgrade (so last in downgrade) when needed
    (never on the plain back end)."""
    def installed() -> bool:
        return bool(autogen_context.connection.scalar(
            text("SELECT count(*) FROM pg_extension WHERE extname = :name"), {"name": EXTENSION}))

    if _uses_simhash(autogen_context) and backend_for(autogen_context.connection).needs_creating(installed):
        upgrade_ops.ops.insert(0, CreateSimhashExtensionOp())
    return PriorityDispatchResult.CONTINUE


_REFLECT_INDEXES = text(
    """
    SELECT i.relname AS index_name, am.amname AS method,
           array(SELECT a.attname FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                 ORDER BY k.position) AS columns,
           CASE am.amname WHEN :gin THEN coalesce(ia.attoptions, '{}') ELSE coalesce(i.reloptions, '{}') END
               AS options
    FROM pg_index x
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_am am ON am.oid = i.relam
    JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_opclass oc ON oc.oid = x.indclass[x.indnatts - 1]
    JOIN pg_attribute ia ON ia.attrelid = i.oid AND ia.attnum = x.indnatts
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE t.relname = :table AND n.nspname = coalesce(:schema, current_schema())
      AND ((am.amname = :gin AND oc.opcname = :opclass) OR am.amname = :mih)
    """
)


def _database_indexes(autogen_context, schema: str | None, table: str) -> dict[str, tuple[list[str], dict, str]]:
    """name -> (columns, parameters, method) of the table's simhash indexes:
    GIN simhash64_ops ones (the fingerprint last, after the scope columns) and
    simhash_mih ones."""
    rows = autogen_context.connection.execute(
        _REFLECT_INDEXES, {"table": table, "schema": schema, "opclass": OPCLASS, "gin": GIN, "mih": MIH}
    )
    return {
        row.index_name: (row.columns, dict(_option(o) for o in row.options), row.method) for row in rows
    }


_REFLECT_PLAIN_INDEXES = text(
    """
    SELECT i.relname AS index_name, pg_get_expr(x.indexprs, x.indrelid) AS expression,
           array(SELECT a.attname FROM unnest(x.indkey[0:x.indnatts - 2]) WITH ORDINALITY AS k (attnum, n)
                 JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS scope
    FROM pg_index x
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_am am ON am.oid = i.relam
    JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE t.relname = :table AND n.nspname = coalesce(:schema, current_schema())
      AND am.amname = 'gin' AND x.indexprs IS NOT NULL AND x.indkey[x.indnatts - 1] = 0
      AND 0 <> ALL (x.indkey[0:x.indnatts - 2])
    """
)


def _plain_database_indexes(autogen_context, schema: str | None, table: str, columns: list[str]) -> dict:
    """name -> ([*scope, column], layout parameters, GIN) of the table's plain
    indexes: GIN indexes whose last (only expression) column is a layout's
    key array, after their scope columns."""
    rows = autogen_context.connection.execute(_REFLECT_PLAIN_INDEXES, {"table": table, "schema": schema})
    found = {}
    for row in rows:
        for name in columns:
            layout = plain.layout_of_expression(row.expression, autogen_context.dialect.identifier_preparer.quote(name))
            if layout is not None:
                found[row.index_name] = ([*row.scope, name],
                                         {"blocks": layout.blocks, "max_distance": layout.max_distance}, GIN)
    return found


class _ExtensionIndexes:
    """The extension's simhash indexes of a table (GIN simhash64_ops and
    simhash_mih), compared by parameters, scope and method."""

    @staticmethod
    def reflect(autogen_context, schema, tname, conn_table, modify_ops, wanted) -> dict:
        return _database_indexes(autogen_context, schema, tname)

    @staticmethod
    def changed(index: Index, columns: list[str], params: dict, method: str) -> bool:
        return (index_parameters(index) != params or index_scope(index) != columns[:-1]
                or index_method(index) != method)


class _PlainIndexes:
    """The plain back end's indexes of a table (GIN on a layout's key
    array), compared by layout and scope: all a plain index has."""

    @staticmethod
    def reflect(autogen_context, schema, tname, conn_table, modify_ops, wanted) -> dict:
        existing = _plain_database_indexes(autogen_context, schema, tname, [c.name for c in conn_table.columns])
        # Alembic cannot compare an expression index with the model's: a plain
        # index in both is compared by compare_indexes, by its layout
        modify_ops.ops = [op for op in modify_ops.ops
                          if not (isinstance(op, (ops.CreateIndexOp, ops.DropIndexOp))
                                  and op.index_name in existing and op.index_name in wanted)]
        return existing

    @staticmethod
    def changed(index: Index, columns: list[str], params: dict, method: str) -> bool:
        return (plain_layout(list(index.columns)[-1]).table_masks != plain.PlainLayout(**params).table_masks
                or index_scope(index) != columns[:-1])


def _option(option: str) -> tuple[str, int]:
    name, _, value = option.partition("=")
    return name, int(value)


def compare_indexes(
    autogen_context, modify_ops: ops.ModifyTableOps, schema, tname, conn_table, metadata_table
) -> PriorityDispatchResult:
    """Runs after Alembic's index comparison: turns its operations on simhash
    indexes into ours (which keep the parameters) and adds the parameter
    changes it cannot see."""
    wanted = {
        index.name: index
        for index in (metadata_table.indexes if metadata_table is not None else ())
        if index_parameters(index) is not None
    }
    indexes = backend_for(autogen_context.connection).pick(_ExtensionIndexes, _PlainIndexes)
    existing = {} if conn_table is None else indexes.reflect(autogen_context, schema, tname, conn_table, modify_ops,
                                                             wanted)

    def existing_op(cls, name):
        columns, params, method = existing[name]
        return cls(name, tname, columns[-1], schema=schema, scope=columns[:-1], method=method, **params)

    touched = set()
    for position, operation in enumerate(modify_ops.ops):
        if isinstance(operation, ops.CreateIndexOp) and operation.index_name in wanted:
            modify_ops.ops[position] = CreateSimhashIndexOp.from_index(wanted[operation.index_name])
            touched.add(operation.index_name)
        elif isinstance(operation, ops.DropIndexOp) and operation.index_name in existing:
            modify_ops.ops[position] = existing_op(DropSimhashIndexOp, operation.index_name)
            touched.add(operation.index_name)

    for name in sorted((wanted.keys() & existing.keys()) - touched):
        if indexes.changed(wanted[name], *existing[name]):
            modify_ops.ops.append(existing_op(DropSimhashIndexOp, name))
            modify_ops.ops.append(CreateSimhashIndexOp.from_index(wanted[name]))
    return PriorityDispatchResult.CONTINUE


def _bigint_and_simhash(operation: ops.AlterColumnOp) -> bool:
    types = (operation.existing_type, operation.modify_type)
    return any(isinstance(t, SimHash64) for t in types) and any(isinstance(t, BigInteger) for t in types)


def _same_sql_type(operation: ops.AlterColumnOp, dialect) -> bool:
    return len({t.compile(dialect=dialect).lower() for t in (operation.existing_type, operation.modify_type)}) == 1


def _between_simhash_and_integer(operation: ops.AlterColumnOp) -> bool:
    types = (operation.existing_type, operation.modify_type)
    return any(isinstance(t, SimHash64) for t in types) and any(isinstance(t, Integer) for t in types)


def compare_column_types(
    autogen_context, modify_ops: ops.ModifyTableOps, schema, tname, conn_table, metadata_table
) -> PriorityDispatchResult:
    """Runs after Alembic's column comparison: its type changes between
    SimHash64 and an integer type get the USING clause they need."""
    quote = autogen_context.dialect.identifier_preparer.quote
    dialect = autogen_context.connection.dialect
    # no change where both are the back end's fingerprint type (plain: a SimHash64 column is a bigint one)
    modify_ops.ops = [op for op in modify_ops.ops if not (
        type(op) is ops.AlterColumnOp and op.modify_type is not None and _bigint_and_simhash(op)
        and _same_sql_type(op, dialect))]
    for position, operation in enumerate(modify_ops.ops):
        if (type(operation) is ops.AlterColumnOp and operation.modify_type is not None
                and _between_simhash_and_integer(operation)):
            modify_ops.ops[position] = AlterSimhashColumnOp.from_alter_column(operation, quote(operation.column_name))
    return PriorityDispatchResult.CONTINUE


_REFLECT_REFINGERPRINT = text(
    """
    SELECT array(SELECT a.attname FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attnum > 0
                 AND NOT a.attisdropped) AS columns,
           EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = t.oid AND g.tgname = :trigger) AS has_trigger
    FROM pg_class t
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE t.relname = :table AND n.nspname = coalesce(:schema, current_schema())
    """
)


def compare_refingerprint_columns(autogen_context, upgrade_ops: ops.UpgradeOps, schemas) -> PriorityDispatchResult:
    """Runs after Alembic's table comparison (which adds a table's
    drop_column operations after its table comparators): leaves out the
    drop_column of the columns refingerprint keeps in step
    (text_spec.refingerprint_columns), which its trigger needs; a table left
    with nothing to do goes."""
    for table_ops in list(upgrade_ops.ops):
        if not isinstance(table_ops, ops.ModifyTableOps):
            continue
        dropped = {op.column_name for op in table_ops.ops if isinstance(op, ops.DropColumnOp)}
        if not dropped:
            continue
        row = autogen_context.connection.execute(_REFLECT_REFINGERPRINT, {
            "table": table_ops.table_name, "schema": table_ops.schema,
            "trigger": text_spec.REFINGERPRINT_TRIGGER}).one()
        kept = text_spec.refingerprint_columns(row.columns, row.has_trigger) & dropped
        table_ops.ops = [op for op in table_ops.ops
                         if not (isinstance(op, ops.DropColumnOp) and op.column_name in kept)]
        if table_ops.is_empty():
            upgrade_ops.ops.remove(table_ops)
    return PriorityDispatchResult.CONTINUE


# ------------------------------------------------ between the back ends


@Operations.register_operation("move_simhash_to_extension")
@Operations.register_operation("move_simhash_to_plain", "move_to_plain")
class MoveSimhashOp(MigrateOperation):
    """A table's fingerprint column and its near-duplicate index moved between
    the back ends (docs/managed.md, "Moving to the extension"): to the
    extension, CREATE EXTENSION IF NOT EXISTS simhash, the plain index
    dropped, the column altered from bigint to simhash64 (the same bits) and
    a simhash_mih index made under the same name; to plain, the reverse (the
    extension stays).  ``blocks``/``max_distance``: the plain index's layout
    (default: plain's default); ``scope``: the index's scope columns, on both
    sides (the plain one needs btree_gin, created if missing)."""

    def __init__(self, table_name: str, column_name: str, index_name: str, *, to: str,
                 blocks: int | None = None, max_distance: int | None = None, schema: str | None = None,
                 scope: list[str] | None = None) -> None:
        self.table_name, self.column_name, self.index_name = table_name, column_name, index_name
        self.to, self.blocks, self.max_distance, self.schema = to, blocks, max_distance, schema
        self.scope = list(scope) if scope else None
        plain.PlainLayout.from_parameters(blocks, max_distance)  # checked now

    @classmethod
    def move_simhash_to_extension(cls, operations: Operations, table_name: str, column_name: str, index_name: str,
                                  **options: Any) -> Any:
        return operations.invoke(cls(table_name, column_name, index_name, to="extension", **options))

    @classmethod
    def move_to_plain(cls, operations: Operations, table_name: str, column_name: str, index_name: str,
                      **options: Any) -> Any:
        return operations.invoke(cls(table_name, column_name, index_name, to="plain", **options))

    def reverse(self) -> MoveSimhashOp:
        return MoveSimhashOp(**{**vars(self), "to": next(name for name in BACKENDS if name != self.to)})

    def statements(self, dialect) -> list[str]:
        """The SQL of the move: what the target back end needs (the extension,
        btree_gin for a scoped plain index), the old index dropped, the column
        altered to the target's type, the target's index made (simhash_mih,
        or the plain index as the plain back end makes it)."""
        target = backend_named(self.to)
        preparer = dialect.identifier_preparer
        scope = self.scope or []
        column = preparer.quote(self.column_name)
        index = preparer.quote(self.index_name)
        qualified = preparer.format_table(Table(self.table_name, MetaData(), schema=self.schema))
        columns = ", ".join([*map(preparer.quote, scope), column])
        drop = f"DROP INDEX IF EXISTS {preparer.quote_schema(self.schema) + '.' if self.schema else ''}{index}"
        return [*target.prepare_sql(), *(f"CREATE EXTENSION IF NOT EXISTS {needed}" for needed in
                                         target.index_needs(MIH, bool(scope))),
                drop, f"ALTER TABLE {qualified} ALTER COLUMN {column} TYPE {target.column_type} USING {column}::bigint",
                target.index_sql(lambda: f"CREATE INDEX {index} ON {qualified} USING simhash_mih ({columns})",
                                 lambda: plain.PlainLayout.from_parameters(self.blocks, self.max_distance), index,
                                 qualified, column, scope=[preparer.quote(name) for name in scope])]


@Operations.implementation_for(MoveSimhashOp)
def _move(operations: Operations, operation: MoveSimhashOp) -> None:
    for statement in operation.statements(operations.impl.dialect):
        operations.execute(statement)
