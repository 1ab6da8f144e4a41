"""The range every simhash64 value must fit, checked client-side before a value
reaches the server (shared by the driver and ORM layers; no dependencies)."""

from __future__ import annotations

import operator

MAX_FINGERPRINT = 2**64 - 1


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
