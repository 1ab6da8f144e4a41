/*
 * clusters.c — connected components by union-find over the pairs that
 * simhash_find_pairs() reports (clusters.h).
 *
 * Each set's root is its lowest row: a union hangs the higher root under the
 * lower, and path halving only moves a row's parent lower.  So parent[i] <= i
 * always holds, which lets one ascending pass resolve every row's root.
 *
 * Rows with equal fingerprints are in one cluster whatever k is, so they are
 * joined directly and pairs are searched for among distinct fingerprints
 * only: a group of g exact duplicates costs O(g), not g^2/2 comparisons per
 * table.
 */
#include "clusters.h"

#include "find_all.h"
#include "radix_sort.h"
#include "utils/memutils.h"

/* The distinct fingerprints, each with the lowest row that has it. */
typedef struct DistinctHashes
{
	uint64	   *hashes;
	uint64	   *rows;
	uint32		count;
} DistinctHashes;

typedef struct JoinState
{
	SimhashClusters *clusters;
	const uint64 *rows;			/* row of each distinct fingerprint */
} JoinState;

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
join_rows(SimhashClusters *clusters, uint32 row1, uint32 row2)
{
	uint32		root1 = find_root(clusters->leader, row1);
	uint32		root2 = find_root(clusters->leader, row2);

	clusters->has_pair[row1] = clusters->has_pair[row2] = true;
	if (root1 < root2)
		clusters->leader[root2] = root1;
	else
		clusters->leader[root1] = root2;
}

static void
join_pair(void *arg, uint32 distinct1, uint32 distinct2, int distance)
{
	JoinState  *state = arg;

	join_rows(state->clusters, state->rows[distinct1], state->rows[distinct2]);
}

static bool
strictly_increasing(const uint64 *hashes, uint32 n)
{
	for (uint32 i = 1; i < n; i++)
		if (hashes[i - 1] >= hashes[i])
			return false;
	return true;
}

/*
 * Joins the rows of each group of equal fingerprints and returns one entry
 * per group.  The sort is stable and rows come in increasing order, so each
 * group's first row is its lowest.
 */
static void
join_duplicates(SimhashClusters *clusters, const uint64 *hashes, uint32 n,
				DistinctHashes *distinct)
{
	uint32		kept = 0;

	distinct->hashes = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * (Size) n);
	distinct->rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * (Size) n);
	for (uint32 i = 0; i < n; i++)
	{
		distinct->hashes[i] = hashes[i];
		distinct->rows[i] = i;
	}
	/* Bare fingerprints (the array variants) arrive distinct and sorted. */
	if (!strictly_increasing(hashes, n))
		simhash_radix_sort(distinct->hashes, distinct->rows, n);
	for (uint32 i = 0; i < n; i++)
	{
		if (kept > 0 && distinct->hashes[kept - 1] == distinct->hashes[i])
		{
			join_rows(clusters, (uint32) distinct->rows[kept - 1], (uint32) distinct->rows[i]);
			continue;
		}
		distinct->hashes[kept] = distinct->hashes[i];
		distinct->rows[kept++] = distinct->rows[i];
	}
	distinct->count = kept;
}

void
simhash_find_clusters(const uint64 *hashes, uint32 n, int k, int blocks,
					  SimhashClusters *clusters)
{
	DistinctHashes distinct;
	JoinState	state = {.clusters = clusters};

	clusters->leader = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint32) * (Size) Max(n, 1));
	clusters->has_pair = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * (Size) Max(n, 1));
	for (uint32 i = 0; i < n; i++)
	{
		clusters->leader[i] = i;
		clusters->has_pair[i] = false;
	}
	join_duplicates(clusters, hashes, n, &distinct);
	state.rows = distinct.rows;
	simhash_find_pairs(distinct.hashes, distinct.count, k, blocks, join_pair, &state);
	pfree(distinct.hashes);
	pfree(distinct.rows);
	/* parent[i] < i for every non-root, so its root is already resolved. */
	for (uint32 i = 0; i < n; i++)
		clusters->leader[i] = clusters->leader[clusters->leader[i]];
}
