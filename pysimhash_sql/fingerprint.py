"""The simhash64 value on the client side, shared by every driver and ORM
layer (no dependencies): the range check, the ``Fingerprint`` int, and the
conversions to and from the server's text and binary forms.  The driver
modules (psycopg, psycopg2, asyncpg) only bind these to their adapter APIs.
"""

from __future__ import annotations

import operator
import struct

MAX_FINGERPRINT = 2**64 - 1

# The server's send/recv format: 8 bytes, network order, unsigned.
_WIRE = struct.Struct(">Q")

NOT_INSTALLED = (
    "type simhash64 not found in this database: run CREATE EXTENSION simhash "
    "(and check that it is on the search_path)"
)


def check_fingerprint(value: int) -> int:
    """``value`` as an int if it is an integer (numpy's too) in 0 .. 2**64-1;
    TypeError or ValueError otherwise."""
    if isinstance(value, bool):
        raise TypeError("a simhash64 fingerprint is an int, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"a simhash64 fingerprint is an int, not {type(value).__name__}") from None
    if not 0 <= value <= MAX_FINGERPRINT:
        raise ValueError(f"simhash64 fingerprint out of range 0 .. 2**64-1: {value}")
    return value


class Fingerprint(int):
    """An int sent to PostgreSQL as ``simhash64`` by the driver adapters;
    range-checked when made."""

    def __new__(cls, value: int) -> Fingerprint:
        return super().__new__(cls, check_fingerprint(value))

    __str__ = int.__repr__  # str() stays the decimal digits, as for any int

    def __repr__(self) -> str:
        return f"Fingerprint({int(self)})"


def parameter_value(value: int | str) -> int:
    """A parameter as an int: an integer, or the decimal text a driver would
    otherwise pass through to the server (SQLAlchemy's ``SimHash64`` sends
    that, so it works with and without a driver's adapters)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or not text.isdigit():
            raise ValueError(f"not a simhash64 fingerprint (an unsigned decimal): {value!r}")
        value = int(text)
    return check_fingerprint(value)


def coerce_fingerprint(value: int | str | bytes) -> int:
    """A fingerprint from any form an application holds one in, as an int: an
    integer, its unsigned decimal text, ``0x`` and 1 to 16 hex digits (the
    server's other text form), or the 8 bytes of the binary form (``bytea``'s
    cast); TypeError or ValueError otherwise.  ORM fields (Django's) take
    these."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) != _WIRE.size:
            raise ValueError(f"a simhash64 fingerprint in bytes is {_WIRE.size} bytes, not {len(data)}")
        return from_binary(data)
    if isinstance(value, str):
        return from_hex(value) if value.strip()[:2].lower() == "0x" else parameter_value(value)
    return check_fingerprint(value)


def _is_hex(text: str) -> bool:
    return text.isascii() and all(c in "0123456789abcdefABCDEF" for c in text)


def to_hex(value: int) -> str:
    """16 hex digits, no prefix: how forms show a fingerprint."""
    return f"{check_fingerprint(value):016x}"


def from_hex(text: str) -> int:
    """1 to 16 hex digits, ``0x`` before them or not, as an int (ValueError otherwise)."""
    text = text.strip()
    digits = text[2:] if text[:2].lower() == "0x" else text
    if not 0 < len(digits) <= 16 or not _is_hex(digits):
        raise ValueError(f"not a simhash64 fingerprint (16 hex digits): {text!r}")
    return int(digits, 16)


def to_text(value: int | str) -> str:
    """The server's text form: unsigned decimal."""
    return str(parameter_value(value))


def to_sql_literal(value: int) -> str:
    """A typed SQL literal, ``'…'::simhash64``: right in any context."""
    return f"'{check_fingerprint(value)}'::simhash64"


def from_text(text: str | bytes) -> int:
    """A value in the server's text form (unsigned decimal) as an int."""
    return int(text)


def to_binary(value: int | str) -> bytes:
    """The server's binary form (simhash64_recv reads it)."""
    return _WIRE.pack(parameter_value(value))


def from_binary(data: bytes) -> int:
    """A value in the server's binary form (simhash64_send) as an int."""
    return _WIRE.unpack(data)[0]
