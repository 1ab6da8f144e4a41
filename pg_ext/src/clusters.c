/*
 * clusters.c — connected components by union-find over the pairs that
 * simhash_find_pairs() reports (clusters.h).
 *
 * Each set's root is its lowest row: a union hangs the higher root under the
 * lower, and path halving only moves a row's parent lower.  So parent[i] <= i
 * always holds, which lets one ascending pass resolve every row's root.
 */
#include "clusters.h"

#include "find_all.h"
#include "utils/memutils.h"

static uint32
find_root(uint32 *parent, uint32 row)
{
	while (parent[row] != row)
	{
		parent[row] = parent[parent[row]];
		row = parent[row];
	}
	return row;
}

static void
join_pair(void *arg, uint32 row1, uint32 row2, int distance)
{
	SimhashClusters *clusters = arg;
	uint32		root1 = find_root(clusters->leader, row1);
	uint32		root2 = find_root(clusters->leader, row2);

	clusters->has_pair[row1] = clusters->has_pair[row2] = true;
	if (root1 < root2)
		clusters->leader[root2] = root1;
	else
		clusters->leader[root1] = root2;
}

void
simhash_find_clusters(const uint64 *hashes, uint32 n, int k, int blocks,
					  SimhashClusters *clusters)
{
	clusters->leader = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * (Size) Max(n, 1));
	clusters->has_pair = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * (Size) Max(n, 1));
	for (uint32 i = 0; i < n; i++)
	{
		clusters->leader[i] = i;
		clusters->has_pair[i] = false;
	}
	simhash_find_pairs(hashes, n, k, blocks, join_pair, clusters);
	/* parent[i] < i for every non-root, so its root is already resolved. */
	for (uint32 i = 0; i < n; i++)
		clusters->leader[i] = clusters->leader[clusters->leader[i]];
}
