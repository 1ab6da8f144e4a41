"""All pairs of near-equal 64-bit hashes: simhash-cpp's block-table search in numpy.

The Python twin of the extension's find_all (pg_ext/src/find_all/find_all.c, pg_ext/src/blocks/permute.c):
the same rule (blocks_exceed_distance), the same pairs.  One difference, on
purpose: blocks are cut as simhash-cpp cuts them (block_masks: the last
blocks are the wider ones), so the hashing.find_all drop-in keys its tables
exactly as simhash-cpp does; the C code widens the first blocks
(simhash_blocks_init).  The results do not depend on the cut."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from itertools import combinations
from typing import TypeVar

import numpy as np

from ._cpus import usable_cpus

T = TypeVar("T")
U = TypeVar("U")

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


def _block_dtype(mask: int) -> tuple[int, type]:
    """A block's shift (its lowest bit) and the narrowest unsigned type that holds its bits."""
    shift = (mask & -mask).bit_length() - 1
    width = mask.bit_length() - shift
    return shift, next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= width)


def _block_of(h: np.ndarray, mask: int) -> np.ndarray:
    """A block's bits of every hash, shifted down, in the narrowest unsigned
    type that holds them (8 or 16 bits: numpy's stable argsort is a radix sort)."""
    shift, dtype = _block_dtype(mask)
    return ((h >> np.uint64(shift)) & np.uint64(mask >> shift)).astype(dtype)


def index_dtype(rows: int) -> np.dtype:
    """The positions of ``rows`` rows: uint32 (4 bytes) up to 2**32 rows, int64
    past that (the search's sorted positions and pairs, dedupe's labels)."""
    return np.dtype(np.uint32) if rows <= 1 << 32 else np.dtype(np.int64)


SLICE_ROWS = 65_536
"""pair_batches's slices: about this many rows sorted by a group's last
block, cut where its value changes.  A pair agrees on the last block, so it
lies in one slice, and each slice's sorts and gathers stay in the CPU's
caches: at 10M rows the search takes half the time of whole-array passes
(1M: the same), 16K and 256K rows measured slower."""

SORT_CHUNK_ROWS = 1 << 18
"""The rows a group's order is sorted by at a time (_group_order's counting
sort): its temporaries are a chunk's (about 10 MiB a thread), never an int64
a row."""

COUNTING_SORT_BITS = 16
"""Blocks of at most this many bits are sorted by counting (2**bits counts a
chunk); wider ones (fewer than 4 blocks) by numpy's argsort of the whole column."""


def row_pairs(h: np.ndarray, masks: list[int], k: int, threads: int | None = 1,
              slice_rows: int = SLICE_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of rows (a < b, indices into the uint64 array ``h``) within k
    bits, each once, in no order (pair_batches's, in two arrays)."""
    found = list(pair_batches(h, masks, k, threads, slice_rows))
    if not found:
        return (np.empty(0, np.intp),) * 2
    return (np.concatenate([a for a, _ in found]).astype(np.intp, copy=False),
            np.concatenate([b for _, b in found]).astype(np.intp, copy=False))


def pair_batches(h: np.ndarray, masks: list[int], k: int, threads: int | None = 1,
                 slice_rows: int = SLICE_ROWS,
                 sort_chunk_rows: int = SORT_CHUNK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every pair of rows (a < b, indices into the uint64 array ``h``, of
    index_dtype) within k bits, each once, a slice's pairs at a time, in no
    order; ``masks``: the blocks (0 <= k < len(masks)).

    Each table is a choice of len(masks) - k blocks; its rows are sorted by
    those blocks' values, least significant first, each pass numpy's stable
    argsort (a radix sort for blocks of up to 16 bits), so rows with equal
    keys end up side by side and only they are compared.  A pair agreeing on
    more blocks than a table needs is kept only in the first table of
    combinations() order it agrees on (it differs in every block before the
    table's last one that the table does not hold), whatever order the
    tables are searched in.  The tables are searched grouped by their last
    block, one group after another: the group's rows are sorted by that block
    once (_group_order: a row's position in 4 bytes, the only array of the
    group as long as ``h``), and searched in slices of that order
    (``slice_rows``, a pair agrees on the last block), the slices in
    ``threads`` threads (None: one per CPU, usable_cpus), numpy's sorts
    and gathers releasing the GIL.  What the search holds beside ``h`` is the
    one order and the slices in flight: the memory does not grow with the
    threads nor with the pairs, which the caller takes as they come."""
    per_table = len(masks) - k
    threads = usable_cpus() if threads is None else threads
    with ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as pool:
        for last in range(len(masks) - 1, per_table - 2, -1):  # the groups of most tables first
            order, bounds = _group_order(h, masks[last], slice_rows, sort_chunk_rows, pool)
            tables = list(combinations(range(last), per_table - 1))

            def search(lo_hi: tuple[int, int], last: int = last, tables: list = tables,
                       order: np.ndarray = order) -> tuple[np.ndarray, np.ndarray]:
                return _slice_pairs(h, masks, k, last, tables, order[lo_hi[0]:lo_hi[1]])

            yield from _in_order(pool, search, zip(bounds, bounds[1:]), 2 * threads)
            del order, search


def _in_order(pool: ThreadPoolExecutor | None, function: Callable[[T], U], items: Iterable[T],
              window: int) -> Iterator[U]:
    """function(item) of each item, in order, at most ``window`` in flight in
    the pool (None: here, one at a time): the results are not all held."""
    if pool is None:
        yield from map(function, items)
        return
    pending: deque = deque()
    for item in items:
        pending.append(pool.submit(function, item))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _group_order(h: np.ndarray, mask: int, slice_rows: int, chunk_rows: int,
                 pool: ThreadPoolExecutor | None) -> tuple[np.ndarray, list[int]]:
    """The rows of ``h`` in the order of one block's value (stable), as
    index_dtype positions, and the bounds cutting that order into slices of
    about ``slice_rows`` rows where the value changes (a run never spans two).

    A block of up to COUNTING_SORT_BITS bits is sorted by counting, a chunk of
    ``chunk_rows`` rows at a time (in the pool's threads): every chunk's values
    counted, then a window of chunks (one a thread) counted again and their
    rows, argsorted within the chunk, put at their places; nothing as long as
    ``h`` but the order itself."""
    rows = h.size
    shift, _ = _block_dtype(mask)
    if (mask >> shift).bit_length() > COUNTING_SORT_BITS:
        values = _block_of(h, mask)
        order = np.argsort(values, kind="stable").astype(index_dtype(rows))
        values = values[order]
        return order, _slice_bounds(np.flatnonzero(values[1:] != values[:-1]) + 1, rows, slice_rows)
    buckets = (mask >> shift) + 1
    starts = range(0, rows, chunk_rows)
    run = pool.map if pool is not None else map

    def count(s: int) -> np.ndarray:
        return np.bincount(_block_of(h[s:s + chunk_rows], mask), minlength=buckets)

    totals = np.zeros(buckets + 1, np.int64)
    for c in run(count, starts):
        totals[1:] += c
    np.cumsum(totals, out=totals)  # totals[v]: where the run of value v starts
    order = np.empty(rows, index_dtype(rows))

    def place(chunk: tuple[int, np.ndarray, np.ndarray]) -> None:
        s, cursor, counts = chunk  # cursor[v]: where the chunk's run of value v goes
        values = _block_of(h[s:s + chunk_rows], mask)
        local = np.argsort(values, kind="stable")
        ranked = values[local]
        cursor -= np.cumsum(counts) - counts  # less where each value's run starts in the chunk
        where = cursor[ranked]
        where += np.arange(ranked.size)
        local += s
        order[where] = local

    cursor = totals[:-1].copy()
    window = getattr(pool, "_max_workers", 1)
    for first in range(0, len(starts), window):  # a window of chunks placed at once, each where the ones before end
        chunks = starts[first:first + window]
        placing = []
        for s, counts in zip(chunks, run(count, chunks)):
            placing.append((s, cursor.copy(), counts))
            cursor += counts
        list(run(place, placing))
    changes = np.unique(totals[(totals > 0) & (totals < rows)])
    return order, _slice_bounds(changes, rows, slice_rows)


def _slice_bounds(changes: np.ndarray, size: int, rows: int) -> list[int]:
    """Positions cutting a sorted array of ``size`` entries whose key changes
    at the positions ``changes`` (increasing) into slices of about ``rows``
    entries, each cut where the key changes (a run never spans two)."""
    wanted = np.arange(rows, size, rows)
    at = np.searchsorted(changes, wanted)
    cuts = np.unique(changes[at[at < changes.size]])
    return [0, *cuts.tolist(), size]


def _slice_pairs(h: np.ndarray, masks: list[int], k: int, last: int, tables: list[tuple[int, ...]],
                 rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pair_batches's pairs (a < b, positions in ``h``) of the tables whose
    last block is ``last`` among a slice's ``rows`` (positions sorted by that
    block): the slice's hashes and blocks gathered once, searched by local
    positions."""
    hs = h[rows]
    values = {j: _block_of(hs, masks[j]) for j in {last, *(j for rest in tables for j in rest)}}
    found_a, found_b = [], []
    for rest in tables:
        a, b = _table_slice_pairs(hs, values, k, rest, np.arange(hs.size), values[last])
        # the first table the pair agrees on: every block before `last` the table does not hold differs
        x = hs[a] ^ hs[b]
        keep = np.ones(x.size, bool)
        for j in set(range(last)) - set(rest):
            keep &= (x & np.uint64(masks[j])) != 0
        a, b = rows[a[keep]], rows[b[keep]]
        found_a.append(np.minimum(a, b))
        found_b.append(np.maximum(a, b))
    return np.concatenate(found_a), np.concatenate(found_b)


def _table_slice_pairs(h: np.ndarray, values: dict[int, np.ndarray], k: int, rest: tuple[int, ...],
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
