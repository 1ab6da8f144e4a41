/*
 * clusters.c — connected components by union-find over the pairs that
 * simhash_find_pairs() reports (clusters.h).  Layer: the engine's top, on
 * find_all.c and find_all_parallel.c.
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
#include "find_all/progress.h"
#include "utils/memutils.h"

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
simhash_resolve_roots(uint32 *parent, Size n)
{
	/* parent[i] < i for every non-root, so its root is already resolved. */
	for (Size i = 0; i < n; i++)
		parent[i] = parent[parent[i]];
}

void
simhash_clusters_init(SimhashClusters *clusters, Size n)
{
	if (n > SIMHASH_CLUSTERS_MAX_ROWS)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("simhash_clusters: more than %zu rows", SIMHASH_CLUSTERS_MAX_ROWS));
	clusters->n = n;
	clusters->nclusters = 0;
	clusters->leader = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * Max(n, 1));
	clusters->has_pair = MemoryContextAllocHuge(CurrentMemoryContext, n / 8 + 1);
	memset(clusters->has_pair, 0, n / 8 + 1);
	for (Size i = 0; i < n; i++)
		clusters->leader[i] = (uint32) i;
}

void
simhash_clusters_join(void *arg, uint64 key1, uint64 key2, int distance)
{
	SimhashClusters *clusters = arg;
	uint32		row1 = (uint32) key1;
	uint32		row2 = (uint32) key2;

	clusters->has_pair[row1 / 8] |= 1 << (row1 % 8);
	clusters->has_pair[row2 / 8] |= 1 << (row2 % 8);
	simhash_union(clusters->leader, row1, row2);
}

void
simhash_clusters_rank(SimhashClusters *clusters)
{
	uint32	   *leader = clusters->leader;

	simhash_resolve_roots(leader, clusters->n);
	/*
	 * Ascending, so a member's root (a lower row) already holds its
	 * cluster's number; a row is a root iff it is its own parent, which a
	 * member (parent < row) never is.
	 */
	for (Size row = 0; row < clusters->n; row++)
	{
		uint32		root = leader[row];

		if (root != row)
			leader[row] = leader[root];
		else if (simhash_clusters_has_pair(clusters, row))
			leader[row] = clusters->nclusters++;
		else
			leader[row] = SIMHASH_CLUSTER_NONE;
	}
}

void
simhash_find_clusters(SimhashEntry *entries, Size n, int k, int blocks, SimhashParallelRun *run,
					  SimhashClusters *clusters)
{
	Size		ndistinct;

	simhash_clusters_init(clusters, n);
	if (run != NULL)
		/* The workers find the distinct fingerprints too. */
		simhash_parallel_find_pairs(run, n, k, blocks, true, simhash_clusters_join, clusters);
	else
	{
		ndistinct = simhash_distinct(entries, n, simhash_clusters_join, clusters);
		simhash_progress_at(SIMHASH_STAGE_SEARCH, 0, 0);
		simhash_find_pairs(entries, ndistinct, k, blocks, simhash_clusters_join, clusters);
	}
	simhash_clusters_rank(clusters);
}
