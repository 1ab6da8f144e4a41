/*
 * find_all_distributed.c — the parts of simhash_find_all_distributed() and
 * simhash_clusters_distributed() (docs/citus.md) that run in C: the key that
 * routes a row to its partitions, the pairs of one partition (run on the
 * workers, one call per shard and part), and the connected components of the
 * edges the workers found (run on the coordinator).
 *
 * The partitioning: the 64 bits are cut into k + 1 contiguous blocks.  Two
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
#include "find_all/find_all.h"
#include "find_all/find_all_row_buffer.h"
#include "find_all/find_all_sql.h"
#include "blocks/permute.h"
#include "blocks/radix_sort.h"

#define SIGN_BIT (UINT64CONST(1) << 63)

/* Which pairs of one partition to report, and where. */
typedef struct PartFilter
{
	SimhashResultSink *sink;
	const uint64 *hashes;
	SimhashBlocks coarse;		/* the k + 1 blocks that route rows */
	uint32		part_bit;		/* 1 << part: the coarse table of this partition */
	int			k;
} PartFilter;

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

/* splitmix64's finalizer: spreads any set of keys over the shards. */
static uint64
mix64(uint64 x)
{
	x ^= x >> 30;
	x *= UINT64CONST(0xBF58476D1CE4E5B9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94D049BB133111EB);
	return x ^ (x >> 31);
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
	PG_RETURN_INT64((int64) mix64((fp & coarse.mask[part]) ^ mix64(((uint64) k << 8) | part)));
}

/* The set bits of bits, in order, cut into nblocks blocks of nearly equal width. */
static void
blocks_over(SimhashBlocks *layout, int nblocks, uint64 bits)
{
	int			total = pg_popcount64(bits);
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
put_if_first_part(void *arg, uint32 row1, uint32 row2, int distance)
{
	PartFilter *filter = arg;
	uint32		agreeing = simhash_blocks_agreeing(&filter->coarse, filter->hashes[row1],
												   filter->hashes[row2]);

	if (simhash_first_table(agreeing, filter->k + 1, filter->k) != filter->part_bit)
		return;
	simhash_result_put(filter->sink, filter->sink->keys[row1], filter->sink->keys[row2], distance);
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
	PartFilter	filter = {.sink = &sink};
	SimhashBlocks fine;
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
	simhash_blocks_init(&filter.coarse, k + 1);
	filter.k = k;
	filter.part_bit = UINT32_C(1) << part;
	required = filter.coarse.mask[part];
	free_bits = SIMHASH64_BITS - pg_popcount64(required);

	work = AllocSetContextCreate(CurrentMemoryContext, "simhash find_all part", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	simhash_rows_init(&rows, "simhash_find_all_distributed", true, 0);
	simhash_read_query(PG_GETARG_TEXT_PP(0), simhash_type_oid(fcinfo), &rows);
	simhash_rows_sort_by_id(&rows);
	sink.keys = rows.ids;
	filter.hashes = rows.hashes;
	blocks_over(&fine, simhash_choose_blocks_within(k, rows.count, free_bits, SIMHASH64_BITS - free_bits),
				~required);
	simhash_find_pairs_within(rows.hashes, rows.count, k, &fine, required, put_if_first_part, &filter);
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

/* Every id of the edges, once each, in increasing order; returns how many. */
static uint32
distinct_nodes(const SimhashRows *edges, int64 *nodes)
{
	uint64	   *keys = (uint64 *) nodes;
	uint32		n = 0;

	/* Flipping the sign bit makes unsigned order the signed order. */
	for (uint32 i = 0; i < edges->count; i++)
	{
		keys[2 * i] = (uint64) edges->ids[i] ^ SIGN_BIT;
		keys[2 * i + 1] = edges->hashes[i] ^ SIGN_BIT;
	}
	simhash_radix_sort(keys, NULL, 2 * edges->count);
	for (uint32 i = 0; i < 2 * edges->count; i++)
		if (n == 0 || keys[n - 1] != keys[i])
			keys[n++] = keys[i];
	for (uint32 i = 0; i < n; i++)
		keys[i] ^= SIGN_BIT;
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
	SimhashRows edges;
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
	 * radix sort's buffer (40 bytes), in place of the pair search's buffers
	 * that simhash_rows_init() counts (24) and that this does not use.
	 */
	simhash_rows_init(&edges, "simhash_clusters_distributed", true,
					  2 * (sizeof(int64) + sizeof(uint64) + sizeof(uint32)) - SIMHASH_FIND_PAIRS_BYTES_PER_ROW);
	simhash_read_query(PG_GETARG_TEXT_PP(0), InvalidOid, &edges);
	nodes = MemoryContextAllocHuge(work, sizeof(int64) * 2 * (Size) Max(edges.count, 1));
	n = distinct_nodes(&edges, nodes);
	parent = MemoryContextAllocHuge(work, sizeof(uint32) * (Size) Max(n, 1));
	for (uint32 i = 0; i < n; i++)
		parent[i] = i;
	for (uint32 i = 0; i < edges.count; i++)
	{
		simhash_union(parent, node_index(nodes, n, edges.ids[i]),
					  node_index(nodes, n, (int64) edges.hashes[i]));
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
	}
	simhash_resolve_roots(parent, n);
	for (uint32 i = 0; i < n; i++)
		simhash_result_put(&sink, nodes[i], nodes[parent[i]], 0);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}
