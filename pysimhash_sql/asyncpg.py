"""asyncpg codec for the ``simhash64`` type.

After ``await register_simhash(conn)`` ``simhash64`` and ``simhash64[]``
values come back as Python ``int`` in 0 .. 2**64-1, and parameters of type
``simhash64`` are sent in the binary format from ``int`` (numpy's too) or,
as before registering, from the decimal ``str`` (SQLAlchemy's ``SimHash64``
sends that).  For a pool, register on every connection it opens::

    pool = await asyncpg.create_pool(dsn, init=register_simhash)

asyncpg types each parameter as the server infers it, so in
``hamming_within(fingerprint, $1, 3)`` ``$1`` is a ``simhash64`` and a plain
``int`` works once the codec is registered.
"""

from __future__ import annotations

import asyncpg

from .fingerprint import NOT_INSTALLED, from_binary, to_binary

__all__ = ["SimhashNotInstalled", "register_simhash"]

# The extension is relocatable: the codec is set in whichever schema has the type.
_TYPE_SCHEMA = """
SELECT n.nspname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = to_regtype('simhash64')
"""


class SimhashNotInstalled(asyncpg.InterfaceError):
    """The database has no ``simhash64`` type: the extension is not created."""


async def register_simhash(conn: asyncpg.Connection) -> None:
    """Set the simhash64 codec on a connection (arrays included)."""
    schema = await conn.fetchval(_TYPE_SCHEMA)
    if schema is None:
        raise SimhashNotInstalled(NOT_INSTALLED)
    await conn.set_type_codec(
        "simhash64", schema=schema, encoder=to_binary, decoder=from_binary, format="binary"
    )
