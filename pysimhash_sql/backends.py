"""Which back end an engine's SQL is written for (docs/managed.md), chosen
once per engine and never mixed:

- ``EXTENSION``: the simhash extension is installed (``simhash64``,
  ``hamming_within``, simhash_mih/GIN indexes, ``simhash_lock_near``,
  ``simhash_find_all``);
- ``PLAIN``: core PostgreSQL 14+ only, as on a managed service where
  ``CREATE EXTENSION simhash`` is not allowed: fingerprints in ``bigint``
  columns, block keys in a GIN expression index, the recheck by
  ``bit_count`` (pysimhash_sql/plain.py).

``register_simhash(engine)`` (pysimhash_sql.sqlalchemy) detects it on the
engine's first connection (is the extension installed in that database?), or
takes it as ``backend=``.  The choice lives on the engine's dialect, which
compiles every statement, so one engine never renders both.  Needs nothing
but Python.
"""

from __future__ import annotations

from typing import Any

EXTENSION = "extension"
PLAIN = "plain"
BACKENDS = (EXTENSION, PLAIN)

DETECT_SQL = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'simhash')"
"""Whether the extension is installed in the connection's database."""

_ATTRIBUTE = "_pysimhash_sql_backend"


def _dialect(target: Any) -> Any:
    """The dialect of an Engine, AsyncEngine, Connection or of a dialect itself."""
    target = getattr(target, "sync_engine", target)
    return getattr(target, "dialect", target)


def backend_of(target: Any) -> str:
    """The back end of an engine (or connection, or dialect): EXTENSION unless
    PLAIN was chosen or detected for it.  A dialect no engine registered
    (``str(statement)``, the default dialect) renders the extension's SQL."""
    return getattr(_dialect(target), _ATTRIBUTE, EXTENSION)


def chosen_backend(target: Any) -> str | None:
    """The back end chosen or detected for an engine, None before either."""
    return getattr(_dialect(target), _ATTRIBUTE, None)


def set_backend(target: Any, backend: str) -> None:
    """Fix the back end of an engine's dialect; ValueError for an unknown one or
    for a change (an engine never mixes the two)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    dialect = _dialect(target)
    current = getattr(dialect, _ATTRIBUTE, None)
    if current is not None and current != backend:
        raise ValueError(f"this engine already uses the {current} back end, not {backend}: "
                         "one engine per back end (docs/managed.md)")
    setattr(dialect, _ATTRIBUTE, backend)


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
