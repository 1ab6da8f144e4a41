/*
 * entry_sort.h — the rows of find_all and clusters as 16-byte entries, and
 * their in-place sort.
 *
 * An entry is a fingerprint and a key: the row's id (sign bit flipped, so
 * that unsigned order is the ids' order), the fingerprint itself (the array
 * variants), or a row number (clusters).  Entries are sorted in place, so a
 * run needs no second buffer: 16 bytes per row in all.
 */
#ifndef SIMHASH_ENTRY_SORT_H
#define SIMHASH_ENTRY_SORT_H

#include "simhash.h"

typedef struct SimhashEntry
{
	uint64		hash;
	uint64		key;
} SimhashEntry;

/* Odd multiplier of Fibonacci hashing: spreads any set of keys over the top bits. */
#define SIMHASH_GOLDEN_RATIO_64 UINT64CONST(0x9E3779B97F4A7C15)

/*
 * What entries are ordered by: the key, or (hash & mask) times an odd
 * constant.  The product is a bijection of the masked bits, so entries with
 * equal values agree exactly on the mask, and its top bits spread any set of
 * fingerprints evenly, whatever bits the mask picks.
 */
typedef struct SimhashSortBy
{
	uint64		mask;
	bool		by_key;
	bool		key_hashed;		/* by_key, spread like the masked bits (partitions only) */
	int			skip;			/* leading bits partitions ignore (equal within a unit) */
} SimhashSortBy;

static inline uint64
simhash_sort_value(const SimhashSortBy *by, const SimhashEntry *entry)
{
	if (by->by_key)
		return by->key_hashed ? entry->key * SIMHASH_GOLDEN_RATIO_64 : entry->key;
	return (entry->hash & by->mask) * SIMHASH_GOLDEN_RATIO_64;
}

/*
 * Sorts entries[0..n) in place by the top `bits` bits of their sort
 * value (64: completely), not stably.  An MSD radix sort (American flag
 * sort): no scratch memory, and after the first digit or two each range
 * fits in the CPU's caches.  Cancellable.
 */
extern void simhash_sort_entries(SimhashEntry *entries, Size n, const SimhashSortBy *by, int bits);

/* The widest partition simhash_partition_entries() makes: 64k buckets. */
#define SIMHASH_PARTITION_MAX_BITS 16

/*
 * Partitions entries[0..n) in place by the top `bits` bits of their sort
 * value after its first by->skip bits (1 to SIMHASH_PARTITION_MAX_BITS): bucket d is then
 * entries[start[d] .. start[d + 1]).  start has 2^bits + 1 elements, next
 * (scratch) 2^bits.  One level of the radix sort, for grouping when the
 * order inside a bucket does not matter.
 */
extern void simhash_partition_entries(SimhashEntry *entries, Size n, const SimhashSortBy *by,
									  int bits, Size *start, Size *next);

/*
 * The same into out[0..n), leaving entries as they are: for units that fit
 * a scratch buffer, where it is much faster than moving entries in place.
 */
extern void simhash_scatter_entries(const SimhashEntry *entries, Size n, const SimhashSortBy *by,
									int bits, SimhashEntry *out, Size *start, Size *next);

/*
 * The same from several pieces, entries[start[p] .. end[p]) for p <
 * npieces, into one out[] (the pieces of a unit across stripes).
 */
extern void simhash_scatter_pieces(const SimhashEntry *entries, const Size *start, const Size *end,
								   int npieces, const SimhashSortBy *by, int bits,
								   SimhashEntry *out, Size *out_start, Size *next);

#endif							/* SIMHASH_ENTRY_SORT_H */
