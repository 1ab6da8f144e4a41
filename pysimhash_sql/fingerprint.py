"""The range every simhash64 value must fit, checked client-side before a value
reaches the server (shared by the driver and ORM layers; no dependencies)."""

from __future__ import annotations

MAX_FINGERPRINT = 2**64 - 1


def check_fingerprint(value: int) -> int:
    """``value`` if it is an int in 0 .. 2**64-1; TypeError or ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a simhash64 fingerprint is an int, not {type(value).__name__}")
    if not 0 <= value <= MAX_FINGERPRINT:
        raise ValueError(f"simhash64 fingerprint out of range 0 .. 2**64-1: {value}")
    return value
