/*
 * clusters.h — connected components of the match graph (rows joined when
 * their fingerprints are within k bits, transitively: single link, as
 * simhash-cpp's find_clusters).
 */
#ifndef SIMHASH_CLUSTERS_H
#define SIMHASH_CLUSTERS_H

#include "simhash.h"

#include "find_all/entry_sort.h"
#include "find_all/find_all_parallel.h"

/*
 * What simhash_find_clusters() allocates per row beyond the entries, for the
 * memory budget: a parent, and a bit for "has a pair" (rounded up to a byte).
 */
#define SIMHASH_CLUSTERS_BYTES_PER_ROW (sizeof(uint32) + 1)

/* Row numbers are uint32: a run has at most this many rows. */
#define SIMHASH_CLUSTERS_MAX_ROWS ((Size) PG_UINT32_MAX)

/* The rank of a row in no cluster of two or more (simhash_clusters_rank). */
#define SIMHASH_CLUSTER_NONE PG_UINT32_MAX

typedef struct SimhashClusters
{
	Size		n;
	uint32	   *leader;			/* union-find parents; after simhash_clusters_rank,
								 * each row's cluster number, or
								 * SIMHASH_CLUSTER_NONE */
	uint8	   *has_pair;		/* bit i: row i is within k bits of another */
	uint32		nclusters;		/* clusters of two or more, once ranked */
} SimhashClusters;

static inline bool
simhash_clusters_has_pair(const SimhashClusters *clusters, Size row)
{
	return (clusters->has_pair[row / 8] >> (row % 8)) & 1;
}

/*
 * Union-find over rows 0..n-1 whose roots are the lowest rows: parent[i] = i
 * to start; simhash_union() joins two sets, and once every union is done,
 * simhash_resolve_roots() sets each parent[i] to its set's lowest row.
 */
extern uint32 simhash_find_root(uint32 *parent, uint32 row);
extern void simhash_union(uint32 *parent, uint32 row1, uint32 row2);
extern void simhash_resolve_roots(uint32 *parent, Size n);

/* n rows, each alone (palloc'd arrays); ERROR beyond SIMHASH_CLUSTERS_MAX_ROWS. */
extern void simhash_clusters_init(SimhashClusters *clusters, Size n);

/* Joins two rows (keys: row numbers): a SimhashPairFn, arg the clusters. */
extern void simhash_clusters_join(void *arg, uint64 row1, uint64 row2, int distance);

/*
 * Once every pair is joined: numbers the clusters of two or more rows 0, 1,
 * ... (by their lowest row) and sets each row's leader to its cluster's
 * number (SIMHASH_CLUSTER_NONE for a row alone), in one ascending pass.
 */
extern void simhash_clusters_rank(SimhashClusters *clusters);

/*
 * The clusters of entries[0..n), whose keys must be their row numbers
 * 0..n-1 (in any order), ranked; the entries are reordered.  With a
 * parallel run (whose entries these are), its workers search too.
 */
extern void simhash_find_clusters(SimhashEntry *entries, Size n, int k, int blocks,
								  SimhashParallelRun *run, SimhashClusters *clusters);

#endif							/* SIMHASH_CLUSTERS_H */
