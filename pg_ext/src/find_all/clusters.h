/*
 * clusters.h — connected components of the match graph (rows joined when
 * their fingerprints are within k bits, transitively: single link, as
 * simhash-cpp's find_clusters).
 */
#ifndef SIMHASH_CLUSTERS_H
#define SIMHASH_CLUSTERS_H

#include "simhash.h"

/*
 * What simhash_find_clusters() allocates per row on top of
 * simhash_find_pairs(), for the memory budget: a parent and a flag, and a
 * distinct fingerprint with its row.
 */
#define SIMHASH_CLUSTERS_BYTES_PER_ROW \
	(sizeof(uint32) + sizeof(bool) + sizeof(uint64) + sizeof(uint32))

typedef struct SimhashClusters
{
	uint32	   *leader;			/* the lowest row of each row's cluster */
	bool	   *has_pair;		/* whether the row is within k bits of another */
} SimhashClusters;

/*
 * Union-find over rows 0..n-1 whose roots are the lowest rows: parent[i] = i
 * to start; simhash_union() joins two sets, and once every union is done,
 * simhash_resolve_roots() sets each parent[i] to its set's lowest row.
 */
extern uint32 simhash_find_root(uint32 *parent, uint32 row);
extern void simhash_union(uint32 *parent, uint32 row1, uint32 row2);
extern void simhash_resolve_roots(uint32 *parent, uint32 n);

/* The clusters of hashes[0..n), as palloc'd arrays of n entries. */
extern void simhash_find_clusters(const uint64 *hashes, uint32 n, int k, int blocks,
								  SimhashClusters *clusters);

#endif							/* SIMHASH_CLUSTERS_H */
