/*
 * find_all.h — every pair of fingerprints within k bits, the engine behind
 * simhash_find_all() and simhash_clusters().  It works on a plain array of
 * fingerprints and knows nothing of SQL, so the query and array variants
 * share it.
 */
#ifndef SIMHASH_FIND_ALL_H
#define SIMHASH_FIND_ALL_H

#include "blocks/permute.h"
#include "simhash.h"

/* Called once per pair of rows within k bits; row1 < row2. */
typedef void (*SimhashPairFn) (void *arg, uint32 row1, uint32 row2, int distance);

/*
 * Working memory simhash_find_pairs() allocates per row: two buffers of
 * 12-byte (fingerprint, row) entries for the radix sort.
 */
#define SIMHASH_FIND_PAIRS_BYTES_PER_ROW 24

/* ERROR unless pairs within k bits can be searched for (0 <= k < 32). */
extern void simhash_check_distance(int k);

/*
 * ERROR unless blocks can find pairs within k bits (k < blocks <= 32, and
 * not too many tables).
 */
extern void simhash_check_blocks(int k, int blocks);

/* The number of blocks the cost model expects to be fastest for n rows. */
extern int	simhash_choose_blocks(int k, uint32 n);

/*
 * The same for simhash_find_pairs_within(): blocks cut from free_bits bits,
 * with required_bits more bits that every pair shares anyway.
 */
extern int	simhash_choose_blocks_within(int k, uint32 n, int free_bits, int required_bits);

/*
 * Calls emit for every pair (row1, row2) of hashes[0..n) with
 * popcount(hashes[row1] ^ hashes[row2]) <= k, exactly once each, in no
 * particular order.  Allocates SIMHASH_FIND_PAIRS_BYTES_PER_ROW * n bytes in
 * CurrentMemoryContext (freed before returning).
 */
extern void simhash_find_pairs(const uint64 *hashes, uint32 n, int k, int blocks,
							   SimhashPairFn emit, void *arg);

/*
 * simhash_find_pairs() for pairs that also agree on every bit of required:
 * the layout's blocks may cover any bits (usually those outside required),
 * each table's key is its blocks plus required, and a pair is reported from
 * the first of the layout's tables it agrees on.  A pair within k bits that
 * agrees on required is within k bits on the layout's bits, so some table
 * finds it.  The layout must pass simhash_tables(layout->nblocks, k).
 */
extern void simhash_find_pairs_within(const uint64 *hashes, uint32 n, int k,
									  const SimhashBlocks *layout, uint64 required,
									  SimhashPairFn emit, void *arg);

/*
 * One row of each distinct fingerprint among hashes[0..n), in no particular
 * order, into distinct_hashes[] and distinct_rows[] (n entries each); returns
 * how many.  Every other row is joined by join(arg, row1, row2, 0) to a row
 * with the same fingerprint: a spanning tree of each group of equal
 * fingerprints, not all its pairs.  Allocates as simhash_find_pairs() does.
 */
extern uint32 simhash_distinct(const uint64 *hashes, uint32 n, uint64 *distinct_hashes,
							   uint32 *distinct_rows, SimhashPairFn join, void *arg);

#endif							/* SIMHASH_FIND_ALL_H */
