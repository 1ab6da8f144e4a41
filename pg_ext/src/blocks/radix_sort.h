/*
 * radix_sort.h — sorting 64-bit keys in O(n), for the ids and fingerprints
 * of find_all and clusters.
 */
#ifndef SIMHASH_RADIX_SORT_H
#define SIMHASH_RADIX_SORT_H

#include "simhash.h"

/*
 * Sorts keys[0..n) as unsigned numbers, stably, moving values[] (when not
 * NULL) along.  Allocates 8 bytes per row of scratch per array in
 * CurrentMemoryContext, freed before returning.
 */
extern void simhash_radix_sort(uint64 *keys, uint64 *values, uint32 n);
extern void simhash_radix_sort_with(uint64 *keys, uint64 *values, uint32 n, uint64 *key_buf,
									uint64 *value_buf);

#endif							/* SIMHASH_RADIX_SORT_H */
