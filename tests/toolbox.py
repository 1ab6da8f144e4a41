"""What many tests need, once: the checkout's root, the Hamming distance,
brute-force pairs (the reference every index and find_all result is compared
with) and near copies made by flipping bits."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def distance(a: int, b: int) -> int:
    """Bits in which two 64-bit values differ."""
    return (a ^ b).bit_count()


def brute_force_pairs(rows: Iterable[tuple[int, int | None]], k: int) -> list[tuple[int, int, int]]:
    """Every pair of rows (id, fingerprint) within k bits, O(n^2), as sorted
    (id1 < id2, distance); rows without a fingerprint (None) have no pairs."""
    present = [(i, h) for i, h in rows if h is not None]
    return sorted((min(i, j), max(i, j), distance(a, b))
                  for (i, a), (j, b) in combinations(present, 2) if distance(a, b) <= k)


def brute_force_hash_pairs(hashes: Iterable[int], k: int) -> list[tuple[int, int]]:
    """The pairs (a < b) of distinct hashes within k bits (simhash-cpp's find_all)."""
    distinct = set(hashes)
    return [(a, b) for a, b, _ in brute_force_pairs(((h, h) for h in distinct), k)]


def flip(fp: int, bits: Iterable[int]) -> int:
    """fp with the given bit positions flipped."""
    for bit in bits:
        fp ^= 1 << bit
    return fp
