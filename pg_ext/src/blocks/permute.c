/*
 * permute.c — block layout and table enumeration for the permutation-table
 * scheme (see permute.h).  Its Python twin is pysimhash_sql/_find_all.py,
 * which cuts the blocks as simhash-cpp does (the last ones wider; here the
 * first): docs/find_all.md.
 */
#include "blocks/permute.h"

void
simhash_check_blocks_exceed_distance(int nblocks, int k, const char *hint)
{
	if (nblocks > k)
		return;
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("blocks must be greater than max_distance, got blocks %d and max_distance %d",
				   nblocks, k),
			errdetail("Fingerprints within k bits agree on at least blocks - k blocks; "
					  "the search needs at least one."),
			hint ? errhint("%s", hint) : 0);
}

void
simhash_blocks_init(SimhashBlocks *blocks, int nblocks)
{
	int			bit = 0;

	if (nblocks < 1 || nblocks > SIMHASH_MAX_BLOCKS)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("number of blocks must be between 1 and %d, got %d",
					   SIMHASH_MAX_BLOCKS, nblocks));
	blocks->nblocks = nblocks;
	for (int i = 0; i < nblocks; i++)
	{
		/* The first 64 % nblocks blocks are one bit wider. */
		int			width = SIMHASH64_BITS / nblocks + (i < SIMHASH64_BITS % nblocks);

		blocks->mask[i] = (width == 64 ? ~UINT64CONST(0) :
						   ((UINT64CONST(1) << width) - 1) << bit);
		bit += width;
	}
}

uint32
simhash_blocks_agreeing(const SimhashBlocks *blocks, uint64 a, uint64 b)
{
	uint64		diff = a ^ b;
	uint32		agreeing = 0;

	for (int i = 0; i < blocks->nblocks; i++)
		agreeing |= (uint32) ((diff & blocks->mask[i]) == 0) << i;
	return agreeing;
}

uint64
simhash_table_mask(const SimhashBlocks *blocks, uint32 table)
{
	uint64		mask = 0;

	for (int i = 0; i < blocks->nblocks; i++)
		if (table & ((uint32) 1 << i))
			mask |= blocks->mask[i];
	return mask;
}

uint64
simhash_table_bits(const SimhashBlocks *blocks, uint32 table, uint64 fp)
{
	uint64		packed = 0;
	int			width = 0;

	for (int i = 0; i < blocks->nblocks; i++)
	{
		uint64		mask = blocks->mask[i];

		if (!(table & ((uint32) 1 << i)))
			continue;
		packed |= ((fp & mask) >> pg_rightmost_one_pos64(mask)) << width;
		width += simhash_popcount64(mask);
	}
	return packed;
}

int64
simhash_binomial(int n, int r)
{
	int64		result = 1;

	for (int i = 1; i <= r; i++)
	{
		if (result > PG_INT64_MAX / (n - r + i))
			return PG_INT64_MAX;
		result = result * (n - r + i) / i;
	}
	return result;
}

int
simhash_tables(int nblocks, int k, uint32 **tables)
{
	int			choose = nblocks - k;
	int64		count;
	uint64		table;

	if (nblocks < 1 || nblocks > SIMHASH_MAX_BLOCKS || k < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%d blocks cannot find fingerprints within %d bits", nblocks, k),
				errhint("Use more blocks than the distance, and at most %d blocks.",
						SIMHASH_MAX_BLOCKS));
	simhash_check_blocks_exceed_distance(nblocks, k, NULL);
	count = simhash_binomial(nblocks, choose);
	if (count > SIMHASH_MAX_TABLES)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%d blocks at distance %d need " INT64_FORMAT " tables, more than %d",
					   nblocks, k, count, SIMHASH_MAX_TABLES));

	*tables = palloc(sizeof(uint32) * count);
	/* Gosper's hack: each table is the next larger number with choose bits set. */
	table = (UINT64CONST(1) << choose) - 1;
	for (int64 i = 0; i < count; i++)
	{
		uint64		lowest = table & (~table + 1);
		uint64		ripple = table + lowest;

		(*tables)[i] = (uint32) table;
		if (lowest != 0)
			table = ripple | (((table ^ ripple) >> 2) / lowest);
	}
	return (int) count;
}

int64
simhash_table_count(int nblocks, int k)
{
	return simhash_binomial(nblocks, nblocks - k);
}
