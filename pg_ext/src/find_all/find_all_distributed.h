/*
 * find_all_distributed.h — what the C parts of the distributed find_all and
 * clusters share: 1.1's (find_all_distributed.c) and 1.2's
 * (find_all_shuffle.c, docs/citus.md).
 */
#ifndef SIMHASH_FIND_ALL_DISTRIBUTED_H
#define SIMHASH_FIND_ALL_DISTRIBUTED_H

#include "simhash.h"

/* splitmix64's finalizer: spreads any set of keys over shards or buckets. */
static inline uint64
simhash_mix64(uint64 x)
{
	x ^= x >> 30;
	x *= UINT64CONST(0xBF58476D1CE4E5B9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94D049BB133111EB);
	return x ^ (x >> 31);
}

/* Defines simhash.debug_direct_results (find_all_shuffle.c; from _PG_init). */
extern void simhash_shuffle_init(void);

#endif							/* SIMHASH_FIND_ALL_DISTRIBUTED_H */
