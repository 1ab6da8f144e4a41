"""psycopg2 adapters for the ``simhash64`` type.

After ``register_simhash(conn)`` ``simhash64`` and ``simhash64[]`` values come
back as Python ``int`` in 0 .. 2**64-1 (psycopg2 reads results as text), and
``Fingerprint`` values are sent as ``'…'::simhash64`` literals.

Plain ``int`` parameters need nothing: psycopg2 writes them into the query
as literals (integer, bigint, or numeric from 2**63 on), and the extension
converts each of those to ``simhash64`` implicitly (SQL 1.1).
"""

from __future__ import annotations

import psycopg2
from psycopg2.extensions import AsIs, new_array_type, new_type, register_adapter, register_type

from .fingerprint import NOT_INSTALLED, Fingerprint, from_text, to_sql_literal

__all__ = ["Fingerprint", "SimhashNotInstalled", "register_simhash"]

_TYPE_OIDS = "SELECT to_regtype('simhash64')::oid, to_regtype('simhash64[]')::oid"


class SimhashNotInstalled(psycopg2.ProgrammingError):
    """The database has no ``simhash64`` type: the extension is not created."""


def _cast(value: str | None, _cursor) -> int | None:
    return None if value is None else from_text(value)


def _adapt(value: Fingerprint) -> AsIs:
    return AsIs(to_sql_literal(value))


def _type_oids(conn_or_cursor) -> tuple[int, int]:
    """The OIDs of simhash64 and simhash64[], without leaving a transaction
    open on a connection that had none."""
    conn = getattr(conn_or_cursor, "connection", conn_or_cursor)
    was_idle = conn.status == psycopg2.extensions.STATUS_READY and not conn.autocommit
    with conn.cursor() as cur:
        cur.execute(_TYPE_OIDS)
        oid, array_oid = cur.fetchone()
    if was_idle:
        conn.rollback()
    if oid is None:
        raise SimhashNotInstalled(NOT_INSTALLED)
    return oid, array_oid


def register_simhash(conn_or_cursor, globally: bool = False) -> None:
    """Register the simhash64 adapters on a connection or cursor (or, with
    ``globally=True``, for every connection of the process)."""
    oid, array_oid = _type_oids(conn_or_cursor)
    simhash64 = new_type((oid,), "SIMHASH64", _cast)
    scope = None if globally else conn_or_cursor
    register_type(simhash64, scope)
    register_type(new_array_type((array_oid,), "SIMHASH64[]", simhash64), scope)
    register_adapter(Fingerprint, _adapt)  # psycopg2's adapters are process-wide
