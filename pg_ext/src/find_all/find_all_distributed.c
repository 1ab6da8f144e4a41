/*
 * find_all_distributed.c — C parts of simhash_find_all_distributed() and
 * simhash_clusters_distributed() (docs/citus.md): the connected components
 * of the edges the workers found (run on the coordinator), and 1.1's
 * per-shard functions, which 1.2's design (find_all_shuffle.c) no longer
 * calls but which stay for SQL that does.
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

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "find_all/clusters.h"
#include "find_all/find_all_distributed.h"
#include "find_all/find_all.h"
#include "find_all/find_all_row_buffer.h"
#include "find_all/find_all_query.h"
#include "find_all/find_all_result.h"
#include "find_all/progress.h"
#include "type/simhash64.h"
#include "blocks/permute.h"
#include "blocks/radix_sort.h"


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

/* The index of id among the sorted, distinct nodes[0..n). */
static uint32
node_index(const int64 *nodes, uint32 n, int64 id)
{
	uint32		low = 0;
	uint32		high = n;

	while (low < high)
	{
		uint32		mid = low + (high - low) / 2;

		if (nodes[mid] < id)
			low = mid + 1;
		else
			high = mid;
	}
	return low;
}

/*
 * Every id of the edges (entries: the first id's key, the second id in the
 * hash), once each, in increasing order; returns how many.
 */
static uint32
distinct_nodes(const SimhashEntry *edges, uint32 nedges, int64 *nodes)
{
	uint64	   *keys = (uint64 *) nodes;
	uint32		n = 0;

	/* Keys of ids: unsigned order is the ids' order. */
	for (uint32 i = 0; i < nedges; i++)
	{
		keys[2 * i] = edges[i].key;
		keys[2 * i + 1] = SIMHASH_KEY_OF_ID(edges[i].hash);
	}
	simhash_radix_sort(keys, NULL, 2 * nedges);
	for (uint32 i = 0; i < 2 * nedges; i++)
		if (n == 0 || keys[n - 1] != keys[i])
			keys[n++] = keys[i];
	for (uint32 i = 0; i < n; i++)
		nodes[i] = SIMHASH_ID_OF_KEY(keys[i]);
	return n;
}

/*
 * simhash_components(sql): the connected components of the graph whose edges
 * are the query's (id, id) rows (a row (id, id) puts a lone id in): every id
 * with the smallest id of its component.
 */
PG_FUNCTION_INFO_V1(simhash_components);
Datum
simhash_components(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;
	SimhashRows rows;
	SimhashEntry *edges;
	uint32		nedges;
	MemoryContext work;
	MemoryContext old;
	int64	   *nodes;
	uint32	   *parent;
	uint32		n;

	simhash_result_init(fcinfo, &sink);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	work = AllocSetContextCreate(CurrentMemoryContext, "simhash components", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	/*
	 * Per edge, beyond the edge itself: its two nodes, their parents and the
	 * radix sort's buffer (40 bytes).
	 */
	simhash_rows_init(&rows, "simhash_clusters_distributed",
					  2 * (sizeof(int64) + sizeof(uint64) + sizeof(uint32)), false);
	simhash_read_query(PG_GETARG_TEXT_PP(0), InvalidOid, &rows);
	if (rows.count > PG_UINT32_MAX / 2)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s: more than %u edges", rows.caller, PG_UINT32_MAX / 2));
	nedges = (uint32) rows.count;
	edges = simhash_rows_to_array(&rows);
	nodes = MemoryContextAllocHuge(work, sizeof(int64) * 2 * (Size) Max(nedges, 1));
	n = distinct_nodes(edges, nedges, nodes);
	parent = MemoryContextAllocHuge(work, sizeof(uint32) * (Size) Max(n, 1));
	for (uint32 i = 0; i < n; i++)
		parent[i] = i;
	for (uint32 i = 0; i < nedges; i++)
	{
		simhash_union(parent, node_index(nodes, n, SIMHASH_ID_OF_KEY(edges[i].key)),
					  node_index(nodes, n, (int64) edges[i].hash));
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
	}
	simhash_resolve_roots(parent, n);
	for (uint32 i = 0; i < n; i++)
		simhash_result_put(&sink, nodes[i], nodes[parent[i]], 0);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}
