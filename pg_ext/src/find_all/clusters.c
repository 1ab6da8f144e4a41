/*
 * clusters.c — connected components by union-find over the pairs that
 * simhash_find_pairs() reports (clusters.h).
 *
 * Each set's root is its lowest row: a union hangs the higher root under the
 * lower, and path halving only moves a row's parent lower.  So parent[i] <= i
 * always holds, which lets one ascending pass resolve every row's root.
 *
 * Rows with equal fingerprints are in one cluster whatever k is, so they are
 * joined directly (simhash_distinct) and pairs are searched for among the
 * distinct fingerprints only: a group of g exact duplicates costs O(g), not
 * g^2/2 comparisons per table.
 */
#include "find_all/clusters.h"

#include "find_all/find_all.h"
#include "utils/memutils.h"

/* For joining pairs of distinct fingerprints: the row of each. */
typedef struct DistinctRows
{
	SimhashClusters *clusters;
	const uint32 *rows;
} DistinctRows;

uint32
simhash_find_root(uint32 *parent, uint32 row)
{
	while (parent[row] != row)
	{
		parent[row] = parent[parent[row]];
		row = parent[row];
	}
	return row;
}

void
simhash_union(uint32 *parent, uint32 row1, uint32 row2)
{
	uint32		root1 = simhash_find_root(parent, row1);
	uint32		root2 = simhash_find_root(parent, row2);

	if (root1 < root2)
		parent[root2] = root1;
	else
		parent[root1] = root2;
}

void
simhash_resolve_roots(uint32 *parent, uint32 n)
{
	/* parent[i] < i for every non-root, so its root is already resolved. */
	for (uint32 i = 0; i < n; i++)
		parent[i] = parent[parent[i]];
}

static void
join_rows(void *arg, uint32 row1, uint32 row2, int distance)
{
	SimhashClusters *clusters = arg;

	clusters->has_pair[row1] = clusters->has_pair[row2] = true;
	simhash_union(clusters->leader, row1, row2);
}

static void
join_distinct(void *arg, uint32 distinct1, uint32 distinct2, int distance)
{
	DistinctRows *distinct = arg;

	join_rows(distinct->clusters, distinct->rows[distinct1], distinct->rows[distinct2], distance);
}

void
simhash_find_clusters(const uint64 *hashes, uint32 n, int k, int blocks,
					  SimhashClusters *clusters)
{
	Size		slots = Max(n, 1);
	uint64	   *distinct_hashes = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * slots);
	uint32	   *distinct_rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * slots);
	DistinctRows distinct = {.clusters = clusters, .rows = distinct_rows};
	uint32		ndistinct;

	clusters->leader = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * slots);
	clusters->has_pair = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * slots);
	for (uint32 i = 0; i < n; i++)
	{
		clusters->leader[i] = i;
		clusters->has_pair[i] = false;
	}
	ndistinct = simhash_distinct(hashes, n, distinct_hashes, distinct_rows, join_rows, clusters);
	simhash_find_pairs(distinct_hashes, ndistinct, k, blocks, join_distinct, &distinct);
	pfree(distinct_hashes);
	pfree(distinct_rows);
	simhash_resolve_roots(clusters->leader, n);
}
