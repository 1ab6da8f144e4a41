/*
 * coarse_parts.c — 1.1's per-shard functions of the distributed find_all
 * (simhash_partition_key, simhash_find_all_part), which 1.2's design
 * (batches.h) no longer calls but which stay for SQL that does.  Layer: SQL
 * entry points, the top of citus/.
 *
 * 1.1's partitioning: the 64 bits are cut into k + 1 contiguous blocks.  Two
 * fingerprints within k bits agree on at least one whole block (pigeonhole),
 * so each row is sent to k + 1 partitions, "part c" keyed by the bits of its
 * block c, and every pair within k bits meets in the partition of each block
 * it agrees on.  A pair is reported only from the lowest such block (the
 * first coarse table, simhash_first_table), so exactly once over the whole
 * cluster.  Within a partition the pairs agree on block c anyway, so they
 * are searched for with tables cut from the other bits only (plus block c in
 * every key): for k = 3, 4 tables of 12 + 16 bits.
 */
#include "simhash.h"

#include "utils/memutils.h"

#include "blocks/permute.h"
#include "find_all/citus/batches.h"
#include "find_all/find_all_query.h"
#include "find_all/progress.h"
#include "type/simhash64.h"

/* ERROR unless part names one of the k + 1 coarse blocks. */
static void
check_part(int k, int part)
{
	simhash_check_distance(k);
	if (part < 0 || part > k)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("part must be between 0 and max_distance (%d), got %d", k, part));
}

PG_FUNCTION_INFO_V1(simhash_partition_key);
Datum
simhash_partition_key(PG_FUNCTION_ARGS)
{
	uint64		fp = PG_GETARG_SIMHASH64(0);
	int			k = PG_GETARG_INT32(1);
	int			part = PG_GETARG_INT32(2);
	SimhashBlocks coarse;

	check_part(k, part);
	simhash_blocks_init(&coarse, k + 1);
	PG_RETURN_INT64((int64) simhash_mix64((fp & coarse.mask[part]) ^ simhash_mix64(((uint64) k << 8) | part)));
}

/* The set bits of bits, in order, cut into nblocks blocks of nearly equal width. */
static void
blocks_over(SimhashBlocks *layout, int nblocks, uint64 bits)
{
	int			total = simhash_popcount64(bits);
	int			bit = 0;

	layout->nblocks = nblocks;
	for (int i = 0; i < nblocks; i++)
	{
		int			width = total / nblocks + (i < total % nblocks ? 1 : 0);
		uint64		mask = 0;

		for (; width > 0; bit++)
			if (bits & (UINT64CONST(1) << bit))
			{
				mask |= UINT64CONST(1) << bit;
				width--;
			}
		layout->mask[i] = mask;
	}
}

static void
put_pair(void *arg, uint64 key1, uint64 key2, int distance)
{
	simhash_result_put(arg, SIMHASH_ID_OF_KEY(key1), SIMHASH_ID_OF_KEY(key2), distance);
}

/*
 * simhash_find_all_part(sql, max_distance, part): the pairs within
 * max_distance bits among the query's (id, fingerprint) rows that agree on
 * coarse block part and on no lower coarse block.
 */
PG_FUNCTION_INFO_V1(simhash_find_all_part);
Datum
simhash_find_all_part(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;
	SimhashRows rows;
	SimhashBlocks coarse;		/* the k + 1 blocks that route rows */
	SimhashBlocks fine;
	SimhashSearch search;
	SimhashStripes stripes;
	SimhashEntry *entries;
	MemoryContext work;
	MemoryContext old;
	uint64		required;
	int			free_bits;
	int			k;
	int			part;

	simhash_result_init(fcinfo, &sink);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		return (Datum) 0;
	k = PG_GETARG_INT32(1);
	part = PG_GETARG_INT32(2);
	check_part(k, part);
	simhash_blocks_init(&coarse, k + 1);
	required = coarse.mask[part];
	free_bits = SIMHASH64_BITS - simhash_popcount64(required);

	work = AllocSetContextCreate(CurrentMemoryContext, "simhash find_all part", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	sink.keys_are_ids = true;
	simhash_progress_begin("simhash_find_all_distributed");
	simhash_rows_init(&rows, "simhash_find_all_distributed", 0, false);
	simhash_read_query(PG_GETARG_TEXT_PP(0), simhash_type_oid(fcinfo), &rows);
	entries = simhash_rows_to_array(&rows);
	simhash_entries_unique_ids(entries, rows.count, rows.keys_increasing, rows.caller);
	blocks_over(&fine, simhash_choose_blocks_within(k, rows.count, free_bits, SIMHASH64_BITS - free_bits),
				~required);
	simhash_stripes_init(&stripes, entries, rows.count, 1, NULL);
	simhash_search_init(&search, k, &fine, required, &stripes, put_pair, &sink);
	/* Each pair from the lowest coarse block it agrees on: this part's. */
	simhash_search_filter(&search, &coarse, UINT32_C(1) << part);
	simhash_search_all(&search, &stripes);
	simhash_search_free(&search);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}
