"""All pairs of near-equal 64-bit hashes: simhash-cpp's block-table search in numpy.

The Python twin of the extension's find_all (pg_ext/src/find_all/find_all.c, pg_ext/src/blocks/permute.c):
the same rule (blocks_exceed_distance), the same pairs.  One difference, on
purpose: blocks are cut as simhash-cpp cuts them (block_masks: the last
blocks are the wider ones), so the hashing.find_all drop-in keys its tables
exactly as simhash-cpp does; the C code widens the first blocks
(simhash_blocks_init).  The results do not depend on the cut."""

from __future__ import annotations

from itertools import combinations

import numpy as np

# Odd multiplier for Fibonacci hashing of table keys into buckets.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# At most 2**23 buckets: the bucket counts stay at 64 MiB whatever the input size.
_MAX_BUCKET_BITS = 23
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def _popcount_lut(x: np.ndarray) -> np.ndarray:
    """Bits set in each uint64 (numpy 1.x has no bitwise_count)."""
    return _POPCOUNT8[x.astype("<u8").view(np.uint8).reshape(-1, 8)].sum(axis=1)


popcount = getattr(np, "bitwise_count", _popcount_lut)


MAX_BLOCKS = 64  # a block holds at least one bit


def blocks_exceed_distance(blocks: int, k: int) -> bool:
    """The rule every block layout obeys, in Python its one home:
    0 <= k < blocks <= MAX_BLOCKS.  Two hashes within k bits agree on at
    least blocks - k blocks, and the search needs at least one."""
    return 0 <= k < blocks <= MAX_BLOCKS


def block_masks(blocks: int) -> list[int]:
    """simhash-cpp's blocks: block i holds bits i*64//blocks up to (i+1)*64//blocks."""
    edges = [i * 64 // blocks for i in range(blocks + 1)]
    return [((1 << (hi - lo)) - 1) << lo for lo, hi in zip(edges, edges[1:])]


def extension_block_masks(blocks: int) -> list[int]:
    """The extension's blocks (simhash_blocks_init in pg_ext/src/blocks/permute.c):
    from bit 0 up, the first 64 % blocks blocks one bit wider.  The plain back
    end's index keys and lock keys (pysimhash_sql/plain.py) are cut this way, so
    its locks are the extension's."""
    if not 1 <= blocks <= MAX_BLOCKS:
        raise ValueError(f"blocks must be between 1 and {MAX_BLOCKS}, not {blocks!r}")
    masks, bit = [], 0
    for i in range(blocks):
        width = 64 // blocks + (i < 64 % blocks)
        masks.append(((1 << width) - 1) << bit)
        bit += width
    return masks


def _equal_key_pairs(keys: np.ndarray, values: np.ndarray, k: int):
    """Pairs of values that share a key and differ in at most k bits; keys sorted."""
    found_a, found_b = [], []
    idx = np.flatnonzero(keys[1:] == keys[:-1])
    step = 1
    # idx holds the i with keys[i] == keys[i + step]; as keys are sorted, that set
    # only shrinks as step grows, so the work is the number of same-key pairs.
    while idx.size:
        a, b = values[idx], values[idx + step]
        near = popcount(a ^ b) <= k
        found_a.append(a[near])
        found_b.append(b[near])
        step += 1
        idx = idx[idx + step < keys.size]
        idx = idx[keys[idx + step] == keys[idx]]
    return found_a, found_b


def near_pairs(hashes: np.ndarray, blocks: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (a, b), a < b, of distinct values of the uint64 array `hashes` with
    popcount(a ^ b) <= k, sorted; requires 0 <= k < blocks <= 64.

    Two hashes within k bits agree on at least blocks - k of the blocks, so each
    pair has equal keys in the table keyed on some choice of blocks - k blocks.
    """
    h = np.sort(np.asarray(hashes, np.uint64))
    distinct = np.ones(h.size, bool)
    distinct[1:] = h[1:] != h[:-1]
    h = h[distinct]
    masks = block_masks(blocks)
    bits = min(_MAX_BUCKET_BITS, max(1, (4 * h.size).bit_length()))
    found_a, found_b = [], []
    for chosen in combinations(range(blocks), blocks - k):
        keys = h & np.uint64(sum(masks[j] for j in chosen))
        # Sorting is the cost; with about 4 buckets per hash, few hashes share a
        # bucket, and only those can share a key, so only those are sorted.
        bucket = ((keys * _GOLDEN) >> np.uint64(64 - bits)).astype(np.intp)
        shared = np.bincount(bucket, minlength=1 << bits)[bucket] > 1
        keys, values = keys[shared], h[shared]
        order = np.argsort(keys)
        a, b = _equal_key_pairs(keys[order], values[order], k)
        if not a:
            continue
        a, b = np.concatenate(a), np.concatenate(b)
        # A pair agreeing on more than blocks - k blocks turns up in several tables:
        # keep it only from the first in combinations() order, the one keyed on the
        # first blocks - k blocks it agrees on, i.e. it differs in every block before
        # chosen[-1] that is not chosen.
        x = a ^ b
        first = np.ones(x.size, bool)
        for j in set(range(chosen[-1])) - set(chosen):
            first &= (x & np.uint64(masks[j])) != 0
        found_a.append(np.minimum(a, b)[first])
        found_b.append(np.maximum(a, b)[first])
    a = np.concatenate(found_a) if found_a else np.empty(0, np.uint64)
    b = np.concatenate(found_b) if found_b else np.empty(0, np.uint64)
    order = np.lexsort((b, a))
    return a[order], b[order]


def id_pairs(ids: np.ndarray, fps: np.ndarray, max_distance: int,
             blocks: int | None = None) -> list[tuple[int, int, int]]:
    """Every pair of rows (int64 ids, uint64 fingerprints) within max_distance
    bits, as (id1 < id2, distance): pairs of distinct values from near_pairs,
    every id of one value with every id of the other, and the ids sharing a
    value among themselves (distance 0).  blocks: near_pairs's (default
    max_distance + 2, measured fastest at k = 3).  The plain back end's
    find_all (pysimhash_sql/queries.py, the CLI)."""
    if blocks is None:
        blocks = min(max_distance + 2, MAX_BLOCKS)
    if not 0 <= max_distance < blocks <= MAX_BLOCKS:
        raise ValueError(f"blocks must be greater than max_distance and at most {MAX_BLOCKS}, "
                         f"got blocks {blocks} and max_distance {max_distance}")
    order = np.argsort(fps, kind="stable")
    fps, ids = fps[order], ids[order]
    values, starts, counts = np.unique(fps, return_index=True, return_counts=True)
    a, b = near_pairs(values, blocks, max_distance)
    ga, gb = np.searchsorted(values, a), np.searchsorted(values, b)
    distances = popcount(a ^ b).astype(np.int64)
    pairs = []
    single = (counts[ga] == 1) & (counts[gb] == 1)
    x, y = ids[starts[ga[single]]], ids[starts[gb[single]]]
    pairs += zip(np.minimum(x, y).tolist(), np.maximum(x, y).tolist(), distances[single].tolist())
    for i, j, d in zip(ga[~single].tolist(), gb[~single].tolist(), distances[~single].tolist()):
        for x in ids[starts[i]:starts[i] + counts[i]].tolist():
            for y in ids[starts[j]:starts[j] + counts[j]].tolist():
                pairs.append((min(x, y), max(x, y), d))
    for group in np.flatnonzero(counts > 1).tolist():
        same = sorted(ids[starts[group]:starts[group] + counts[group]].tolist())
        pairs += [(x, y, 0) for n, x in enumerate(same) for y in same[n + 1:]]
    return pairs


def id_clusters(pairs: list[tuple[int, int, int]], singletons: np.ndarray | None = None) -> list[tuple[int, int]]:
    """(id, cluster id) of the components the pairs link, the cluster id being
    its smallest id (as simhash_clusters's); with ``singletons`` (all the ids),
    the ids in no pair too, each its own cluster."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for id1, id2, _ in pairs:
        parent.setdefault(id1, id1)
        parent.setdefault(id2, id2)
        a, b = root(id1), root(id2)
        if a != b:
            parent[max(a, b)] = min(a, b)
    members = [(i, root(i)) for i in parent]
    if singletons is not None:
        members += [(i, i) for i in set(singletons.tolist()) - parent.keys()]
    return members
