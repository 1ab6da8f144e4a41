"""Store a document unless a near-duplicate is already stored: safe with many
concurrent writers (SQLAlchemy Session or Connection, sync or async).

``insert_unless_near_duplicate`` runs the pattern of docs/crawling.md in the
caller's transaction: ``simhash_lock_near`` (advisory locks that make writers
of near fingerprints in the same scope wait for each other), then one
statement that looks for a stored row within ``max_distance`` bits in the
scope and inserts the new row only if there is none.  The locks are held until
the transaction ends, so commit soon after (a crawler commits per page or per
small batch).  It needs READ COMMITTED (PostgreSQL's default): the lock
statement raises under REPEATABLE READ, where the check could not see what
the other writer committed.  The check is ``hamming_within`` (and ``scope =
value``), which uses whichever near-duplicate index the table has: simhash_mih
(``simhash_index``'s default, with the scope columns or without), or GIN.

On the plain back end (docs/managed.md: a server without the extension) the
same steps run in core SQL: ``pg_advisory_xact_lock`` on the very keys
``simhash_lock_near`` takes (computed here, pysimhash_sql/plain.py), then the
check through the plain index, with the same rule on REPEATABLE READ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Boolean, ClauseElement, exists, insert, literal, select, text

from .backends import RepeatableReadError, backend_for

__all__ = ["RepeatableReadError", "Stored", "insert_unless_near_duplicate", "insert_unless_near_duplicate_async",
           "lock_near"]


@dataclass(frozen=True)
class Stored:
    """The outcome: the id of the stored near-duplicate (``inserted`` False) or
    of the row just inserted (``inserted`` True)."""

    id: Any
    inserted: bool


def _column(table: Any, column: Any) -> Any:
    return table.c[column] if isinstance(column, str) else table.c[column.key]


def insert_unless_near_duplicate(
    connection: Any,
    table: Any,
    values: dict[str, Any],
    *,
    fingerprint: Any = "fingerprint",
    scope: Any = None,
    max_distance: int = 3,
) -> Stored:
    """Inserts ``values`` into ``table`` (a Table or a mapped class) unless a
    row within ``max_distance`` bits of its fingerprint exists, among the rows
    with the same value in the ``scope`` column (e.g. ``"domain"``) if given.

    ``values`` holds the new row's column values by column name; the
    fingerprint value may be an int or a SQL expression (``func.simhash(body)``,
    computed first).  ``table`` needs a one-column primary key, whose value is
    returned.  ``connection`` is a Session or Connection; see the module's
    notes on transactions."""
    backend = backend_for(connection)  # before the first statement (a fresh engine's detection)
    table = getattr(table, "__table__", table)
    (key,) = table.primary_key.columns
    fp_column = _column(table, fingerprint)
    values = dict(values)
    fp = values[fp_column.key]
    if isinstance(fp, ClauseElement):
        fp = connection.execute(select(fp)).scalar_one()
        values[fp_column.key] = fp
    scope_column = None if scope is None else _column(table, scope)
    scope_value = None if scope_column is None else values[scope_column.key]

    lock_scope = None if scope_value is None else str(scope_value)
    lock_near(connection, fp, max_distance, lock_scope)

    near = fp_column.within(fp, max_distance)
    if scope_column is not None:
        near = near & (scope_column == scope_value)
    existing = select(key.label("id")).where(near).limit(backend.near_row_limit).cte("existing")
    new_row = select(*(literal(value, table.c[name].type) for name, value in values.items()))
    inserted = (
        insert(table)
        .from_select(list(values), new_row.where(~exists(select(existing.c.id))))
        .returning(key.label("id"))
        .cte("inserted")
    )
    outcome = select(existing.c.id, literal(False, Boolean()).label("inserted")).union_all(
        select(inserted.c.id, literal(True, Boolean()))
    )
    row = connection.execute(outcome).first()  # several near rows: any of them
    return Stored(row.id, row.inserted)


def lock_near(connection: Any, fingerprint: int, max_distance: int, scope: str | None = None) -> None:
    """``simhash_lock_near(fingerprint, max_distance, scope)`` on either back
    end: the same advisory locks, until the transaction ends
    (RepeatableReadError under REPEATABLE READ)."""
    backend_for(connection).lock_near(lambda sql, params: connection.execute(text(sql), params).all(),
                                      fingerprint, max_distance, scope)


async def insert_unless_near_duplicate_async(connection: Any, table: Any, values: dict[str, Any],
                                             **options: Any) -> Stored:
    """``insert_unless_near_duplicate`` on an AsyncSession or AsyncConnection."""
    return await connection.run_sync(
        lambda sync_connection: insert_unless_near_duplicate(sync_connection, table, values, **options)
    )
