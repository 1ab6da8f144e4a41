/*
 * permute.h — the block tables of Manku et al. (2007), shared by the index
 * operator class and find_all.
 *
 * The 64 bits are split into m contiguous blocks.  Two fingerprints within k
 * bits of each other differ in at most k blocks, so they agree on every block
 * of at least one choice of m - k blocks.  Each such choice is a "table": key
 * every fingerprint by the bits of the table's blocks, and every pair within
 * k bits shares a key in some table.
 */
#ifndef SIMHASH_PERMUTE_H
#define SIMHASH_PERMUTE_H

#include "simhash.h"

#define SIMHASH_MAX_BLOCKS 32
#define SIMHASH_MAX_TABLES 10000

typedef struct SimhashBlocks
{
	int			nblocks;
	uint64		mask[SIMHASH_MAX_BLOCKS];	/* the bits of block i */
} SimhashBlocks;

/*
 * The one home of the rule every layout obeys: more blocks than the distance
 * (two fingerprints within k bits agree on at least blocks - k blocks, and a
 * search needs at least one).  ERROR otherwise, with the caller's hint if any.
 */
extern void simhash_check_blocks_exceed_distance(int nblocks, int k, const char *hint);

/* Splits 64 bits into nblocks contiguous blocks, widths differing by at most 1. */
extern void simhash_blocks_init(SimhashBlocks *blocks, int nblocks);

/* Bit i is set iff a and b are equal on block i. */
extern uint32 simhash_blocks_agreeing(const SimhashBlocks *blocks, uint64 a, uint64 b);

/* The union of the masks of the blocks named by the bits of a table. */
extern uint64 simhash_table_mask(const SimhashBlocks *blocks, uint32 table);

/*
 * The bits of fp under a table's blocks, packed into the low bits in block
 * order: two fingerprints get the same value iff they agree on those blocks.
 * Its width is simhash_popcount64(simhash_table_mask(blocks, table)).
 */
extern uint64 simhash_table_bits(const SimhashBlocks *blocks, uint32 table, uint64 fp);

/*
 * The tables for distance k: every choice of nblocks - k blocks, as block
 * bitmaps in increasing numeric order.  Returns the count and a palloc'd
 * array.  ERROR unless 0 <= k < nblocks and there are at most
 * SIMHASH_MAX_TABLES tables.
 */
extern int	simhash_tables(int nblocks, int k, uint32 **tables);

/* C(n, r) for 0 <= r <= n, saturating at PG_INT64_MAX. */
extern int64 simhash_binomial(int n, int r);

/* How many tables simhash_tables(nblocks, k) makes: C(nblocks, k), saturating. */
extern int64 simhash_table_count(int nblocks, int k);

/*
 * The first table (in simhash_tables order) on which two fingerprints that
 * agree on the blocks in `agreeing` collide: its lowest nblocks - k blocks.
 * A pair is reported only from this table, so no global set of pairs is
 * needed to report each exactly once.
 */
static inline uint32
simhash_first_table(uint32 agreeing, int nblocks, int k)
{
	uint32		table = 0;

	for (int need = nblocks - k; need > 0; need--)
	{
		uint32		lowest = agreeing & (~agreeing + 1);

		table |= lowest;
		agreeing ^= lowest;
	}
	return table;
}

#endif							/* SIMHASH_PERMUTE_H */
