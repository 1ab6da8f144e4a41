"""psycopg 3 adapters for the ``simhash64`` type.

After ``register_simhash(conn)`` (or ``await register_simhash_async(aconn)``)
``simhash64`` and ``simhash64[]`` values come back as Python ``int`` in
0 .. 2**64-1, in text and binary results alike, and ``Fingerprint`` values
(an ``int`` subclass, checked when made) are sent as ``simhash64``.

Plain ``int`` parameters keep psycopg's own adaptation (smallint, integer,
bigint, or numeric from 2**63 on): taking over every ``int`` on a connection
would turn ``LIMIT %s`` into a ``simhash64``.  The extension converts each of
those to ``simhash64`` implicitly (SQL 1.1), so a plain int works where a
fingerprint is expected, registered or not; ``Fingerprint`` makes the type
explicit (``SELECT %s`` then returns a simhash64).
"""

from __future__ import annotations

import functools

from psycopg import ProgrammingError, postgres
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from .fingerprint import MAX_FINGERPRINT, NOT_INSTALLED, Fingerprint, check_fingerprint, from_binary, to_binary, to_text

__all__ = [
    "MAX_FINGERPRINT",
    "Fingerprint",
    "SimhashNotInstalled",
    "check_fingerprint",
    "register_simhash",
    "register_simhash_async",
]

TYPE_NAME = "simhash64"


class SimhashNotInstalled(ProgrammingError):
    """The database has no ``simhash64`` type: the extension is not created."""


class _TextDumper(Dumper):
    def dump(self, obj: int) -> bytes:
        return to_text(obj).encode()


class _BinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: int) -> bytes:
        return to_binary(obj)


# simhash64's text form is an unsigned decimal: psycopg's own integer loader
# reads it, in C when psycopg's binary build is installed (twice as fast).
_TextLoader = postgres.adapters.get_loader(postgres.types["int8"].oid, Format.TEXT)


class _BinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data) -> int:
        return from_binary(data)


@functools.cache
def _dumpers_for(oid: int) -> tuple[type[Dumper], type[Dumper]]:
    """Dumper classes bound to one database's simhash64 OID, made once per OID
    (the OID differs between databases; classes must not pile up per call)."""
    return (
        type("SimHash64TextDumper", (_TextDumper,), {"oid": oid}),
        type("SimHash64BinaryDumper", (_BinaryDumper,), {"oid": oid}),
    )


def _checked(info: TypeInfo | None) -> TypeInfo:
    if info is None:
        raise SimhashNotInstalled(NOT_INSTALLED)
    return info


def _register(info: TypeInfo, context: AdaptContext) -> None:
    info.register(context)  # also registers simhash64[] from the element adapters
    adapters = context.adapters
    for dumper in _dumpers_for(info.oid):
        adapters.register_dumper(Fingerprint, dumper)
    adapters.register_loader(info.oid, _TextLoader)
    adapters.register_loader(info.oid, _BinaryLoader)


def register_simhash(context: AdaptContext) -> None:
    """Register the simhash64 adapters on a connection (or cursor)."""
    conn = getattr(context, "connection", context)
    _register(_checked(TypeInfo.fetch(conn, TYPE_NAME)), context)


async def register_simhash_async(context: AdaptContext) -> None:
    """Register the simhash64 adapters on an async connection (or cursor)."""
    conn = getattr(context, "connection", context)
    _register(_checked(await TypeInfo.fetch(conn, TYPE_NAME)), context)
