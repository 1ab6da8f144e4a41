"""Test data: fingerprints planted in clusters, radius queries near them, and
hypothesis's rows around a few centres (find_all's inputs)."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from toolbox import MAX_FINGERPRINT as MAX, flip, flip_random

MAX_PLANTED_DISTANCE = 6


def planted_fingerprints(rng: random.Random, n_random: int) -> list[int | None]:
    """Random fingerprints, clusters of near-duplicates, edge values, NULLs."""
    fps: list[int | None] = [rng.getrandbits(64) for _ in range(n_random)]
    for _ in range(n_random // 50):
        centre = rng.getrandbits(64)
        fps.append(centre)
        fps += [flip_random(centre, rng.randint(0, MAX_PLANTED_DISTANCE), rng) for _ in range(rng.randint(1, 8))]
    fps += [0, MAX, 1, 1 << 63, None, None]
    rng.shuffle(fps)
    return fps


def random_queries(rng: random.Random, fps: list[int | None], count: int) -> list[tuple[int, int]]:
    """(centre, k) pairs: mostly near stored rows and small k, some of every k up to 64."""
    stored = [fp for fp in fps if fp is not None]
    queries = []
    for _ in range(count):
        centre = rng.choice([rng.getrandbits(64), flip_random(rng.choice(stored), rng.randint(0, 5), rng)])
        roll = rng.random()
        if roll < 0.85:
            k = rng.randint(0, 7)
        elif roll < 0.97:
            k = rng.randint(8, 24)
        else:
            k = rng.randint(25, 64)
        queries.append((centre, k))
    return queries


@st.composite
def clustered_rows(draw, max_k: int = 5):
    """Rows around a few centres: copies at 0..k+2 bits, exact duplicates, NULLs,
    unique ids in random order (negative ones too)."""
    k = draw(st.integers(0, max_k))
    centres = draw(st.lists(st.integers(0, MAX), max_size=6))
    n = draw(st.integers(0, 60))
    fingerprints = []
    for _ in range(n):
        kind = draw(st.sampled_from(["near", "near", "near", "random", "null"]))
        if kind == "null" or (kind == "near" and not centres):
            fingerprints.append(None if kind == "null" else draw(st.integers(0, MAX)))
        elif kind == "random":
            fingerprints.append(draw(st.integers(0, MAX)))
        else:
            centre = draw(st.sampled_from(centres))
            bits = draw(st.lists(st.integers(0, 63), max_size=k + 2, unique=True))
            fingerprints.append(flip(centre, bits))
    ids = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n, unique=True))
    blocks = draw(st.one_of(st.none(), st.integers(k + 1, min(k + 5, 32))))
    return list(zip(ids, fingerprints)), k, blocks


def rows_query(rows: list[tuple[int, int | None]], id_type: str = "bigint") -> str:
    """SQL text whose rows are `rows` (no table needed, so read-only databases do)."""
    if not rows:
        return f"SELECT NULL::{id_type}, NULL::simhash64 WHERE false"
    values = ", ".join(
        f"('{i}'::{id_type}, {'NULL' if h is None else repr(str(h))}::simhash64)" for i, h in rows
    )
    return f"SELECT * FROM (VALUES {values}) AS v(id, fp)"


def planted_pairs_query(base: int, planted: int, duplicates: int = 0, order: str = "i") -> str:
    """SQL text of rows (i, fingerprint): `base` random fingerprints (i = 1..base), then
    `planted` copies of the first ones with one bit flipped (row base + j pairs with
    row j at distance 1), then `duplicates` rows equal to rows 0..4999 of the base
    (i % 5000): groups of exact duplicates.  Too big for brute force, exact all the same."""
    return (
        "SELECT i, CASE WHEN i <= {b} THEN hashint8extended(i, 0)"
        " WHEN i <= {b} + {p} THEN hashint8extended(i - {b}, 0) # (1::bigint << (i % 64)::int)"
        " ELSE hashint8extended(i % 5000, 0) END::simhash64"
        " FROM generate_series(1, {n}) i ORDER BY {order}"
    ).format(b=base, p=planted, n=base + planted + duplicates, order=order)
