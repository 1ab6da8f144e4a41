"""All pairs of near-equal 64-bit hashes: simhash-cpp's block-table search in numpy.

The Python twin of the extension's find_all (pg_ext/src/find_all/find_all.c, pg_ext/src/blocks/permute.c):
the same rule (blocks_exceed_distance), the same pairs.  One difference, on
purpose: blocks are cut as simhash-cpp cuts them (block_masks: the last
blocks are the wider ones), so the hashing.find_all drop-in keys its tables
exactly as simhash-cpp does; the C code widens the first blocks
(simhash_blocks_init).  The results do not depend on the cut."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations

import numpy as np

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


def _block_values(h: np.ndarray, masks: list[int]) -> list[np.ndarray]:
    """Each block's bits of every hash, shifted down, in the narrowest unsigned
    type that holds them (8 or 16 bits: numpy's stable argsort is a radix sort)."""
    values = []
    for mask in masks:
        shift = (mask & -mask).bit_length() - 1
        width = mask.bit_length() - shift
        dtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= width)
        values.append(((h >> np.uint64(shift)) & np.uint64(mask >> shift)).astype(dtype))
    return values


SLICE_ROWS = 65_536
"""_tables_ending_at's slices: about this many rows sorted by a group's last
block, cut where its value changes.  A pair agrees on the last block, so it
lies in one slice, and each slice's sorts and gathers stay in the CPU's
caches: at 10M rows the search takes half the time of whole-array passes
(1M: the same), 16K and 256K rows measured slower."""


def row_pairs(h: np.ndarray, masks: list[int], k: int, threads: int | None = 1,
              slice_rows: int = SLICE_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of rows (a < b, indices into the uint64 array ``h``) within k
    bits, each once, in no order; ``masks``: the blocks (0 <= k < len(masks)).

    Each table is a choice of len(masks) - k blocks; its rows are sorted by
    those blocks' values, least significant first, each pass numpy's stable
    argsort (a radix sort for blocks of up to 16 bits), so rows with equal
    keys end up side by side and only they are compared.  A pair agreeing on
    more blocks than a table needs is kept only in the first table of
    combinations() order it agrees on (it differs in every block before the
    table's last one that the table does not hold), whatever order the
    tables are searched in.  The tables are searched grouped by their last
    block, so each block's first pass is sorted once, and in slices of
    that order (``slice_rows``, a pair agrees on the last block); the groups run in
    ``threads`` threads (None: one per CPU, search_threads), numpy's sorts
    and gathers releasing the GIL."""
    values = _block_values(h, masks)
    per_table = len(masks) - k
    lasts = range(len(masks) - 1, per_table - 2, -1)  # the groups of most tables first
    threads = min(search_threads() if threads is None else threads, len(lasts))
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            groups = list(pool.map(lambda last: _tables_ending_at(h, values, masks, k, last, slice_rows), lasts))
    else:
        groups = [_tables_ending_at(h, values, masks, k, last, slice_rows) for last in lasts]
    found = [pairs for group in groups for pairs in group]
    if not found:
        return (np.empty(0, np.intp),) * 2
    return np.concatenate([a for a, _ in found]), np.concatenate([b for _, b in found])


def search_threads() -> int:
    """The threads row_pairs uses by default: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _slice_bounds(sorted_keys: np.ndarray, rows: int) -> list[int]:
    """Positions cutting the sorted array ``sorted_keys`` into slices of about
    ``rows`` entries, each cut where the key changes (a run never spans two)."""
    changes = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    wanted = np.arange(rows, sorted_keys.size, rows)
    at = np.searchsorted(changes, wanted)
    cuts = np.unique(changes[at[at < changes.size]])
    return [0, *cuts.tolist(), sorted_keys.size]


def _tables_ending_at(h: np.ndarray, values: list[np.ndarray], masks: list[int], k: int,
                      last: int, slice_rows: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """row_pairs's pairs (a < b) of the tables whose last block is ``last``, a
    pair of arrays per table and slice of about ``slice_rows`` rows."""
    found = []
    first_order = np.argsort(values[last], kind="stable")
    last_sorted = values[last][first_order]
    bounds = _slice_bounds(last_sorted, slice_rows)
    tables = list(combinations(range(last), len(masks) - k - 1))
    for lo, hi in zip(bounds, bounds[1:]):
        for rest in tables:
            a, b = _table_slice_pairs(h, values, k, rest, first_order[lo:hi], last_sorted[lo:hi])
            # the first table the pair agrees on: every block before `last` the table does not hold differs
            x = h[a] ^ h[b]
            keep = np.ones(x.size, bool)
            for j in set(range(last)) - set(rest):
                keep &= (x & np.uint64(masks[j])) != 0
            found.append((np.minimum(a, b)[keep], np.maximum(a, b)[keep]))
    return found


def _table_slice_pairs(h: np.ndarray, values: list[np.ndarray], k: int, rest: tuple[int, ...],
                       first_order: np.ndarray, last_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs within k bits of a slice's rows (``first_order``, sorted by
    the last block, whose values are ``last_sorted``) that agree on the
    blocks ``rest`` too: sorted by each of them in turn, least significant
    first, each pass numpy's stable argsort."""
    order, outer, keys = first_order, None, [last_sorted]  # rows in key order: order[outer]
    for n, block in enumerate(reversed(rest)):
        if n:
            order = order[outer]
        block_sorted = values[block][order]
        outer = np.argsort(block_sorted, kind="stable")
        keys = [block_sorted[outer], *(key[outer] for key in keys)]
    if outer is None:  # a table of one block
        outer = np.arange(order.size)
    same = keys[0][1:] == keys[0][:-1]
    for key in keys[1:]:
        same &= key[1:] == key[:-1]
    return _runs_within(h, same, order, outer, k)


def _runs_within(h: np.ndarray, same: np.ndarray, order: np.ndarray, outer: np.ndarray,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of rows within k bits among rows sorted by a key, ``same[p]``
    telling whether positions p and p + 1 share it; position p holds row
    order[outer[p]] (two permutations, composed only where needed).  Positions p and p + step share the key when same[p .. p + step - 1]
    all hold: that set only shrinks as step grows, so the work is the number
    of same-key pairs."""
    found_a, found_b = [], []
    positions = np.flatnonzero(same)
    step = 1
    while positions.size:
        a, b = order[outer[positions]], order[outer[positions + step]]
        near = popcount(h[a] ^ h[b]) <= k
        found_a.append(a[near])
        found_b.append(b[near])
        step += 1
        positions = positions[positions + step - 1 < same.size]
        positions = positions[same[positions + step - 1]]
    return (np.concatenate(found_a), np.concatenate(found_b)) if found_a else (np.empty(0, np.intp),) * 2


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
    a, b = row_pairs(h, block_masks(blocks), k)
    # h is sorted and distinct: rows a < b are values h[a] < h[b]
    order = np.lexsort((b, a))
    return h[a[order]], h[b[order]]


def check_unique_ids(ids: np.ndarray) -> None:
    """ValueError if an id comes twice (as the extension's find_all refuses);
    ids already increasing (a table read in its key's order) cost no sort,
    and a few increasing runs (a parallel scan's) a merge (timsort)."""
    if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
        ordered = np.sort(ids, kind="stable")
        if (ordered[1:] == ordered[:-1]).any():
            raise ValueError("find_all/clusters need unique ids: the query returned an id twice")


def default_blocks(max_distance: int) -> int:
    """id_pairs's blocks for a radius: max_distance + 2 (measured fastest at
    k = 3), and at least 4, so that every block fits 16 bits (radix sorts)."""
    return min(max(max_distance + 2, 4), MAX_BLOCKS)


def id_pairs(ids: np.ndarray, fps: np.ndarray, max_distance: int, blocks: int | None = None,
             threads: int | None = None, ids_checked: bool = False) -> list[tuple[int, int, int]]:
    """Every pair of rows (unique int64 ids, uint64 fingerprints) within
    max_distance bits, as (id1 < id2, distance), in no order; rows sharing a
    fingerprint pair at distance 0.  blocks: row_pairs's (default_blocks);
    threads: row_pairs's (None: one per CPU); ids_checked: the ids are known
    unique (plain.rows_of_chunks checked them).  The plain back end's
    find_all (pysimhash_sql/queries.py, the CLI)."""
    if blocks is None:
        blocks = default_blocks(max_distance)
    if not blocks_exceed_distance(blocks, max_distance):
        raise ValueError(f"blocks must be greater than max_distance and at most {MAX_BLOCKS}, "
                         f"got blocks {blocks} and max_distance {max_distance}")
    if not ids_checked:
        check_unique_ids(ids)
    a, b = row_pairs(fps, block_masks(blocks), max_distance, threads)
    x, y = ids[a], ids[b]
    return list(zip(np.minimum(x, y).tolist(), np.maximum(x, y).tolist(), popcount(fps[a] ^ fps[b]).tolist()))


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
