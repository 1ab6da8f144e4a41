/*
 * hamming.h — Hamming distance between fingerprints (hamming.c): the check
 * of a radius every radius-taking function shares, many fingerprints
 * against one centre, and the CPU check behind simhash_popcount64
 * (simhash.h).
 */
#ifndef SIMHASH_HAMMING_H
#define SIMHASH_HAMMING_H

#include "simhash.h"

/* ERROR unless k is a Hamming distance between simhash64 values (0..64). */
extern void simhash_check_radius(int32 k);

/*
 * The positions j in [0, n) of the fingerprints fps[j * stride] within k
 * bits of centre, in order, into hits (room for n); returns how many.
 * stride is 1 (an array of fingerprints) or 2 (pairs, the fingerprint
 * first: find_all's entries).  Vector code where the CPU has it (simd.h):
 * a simhash_mih query compares every pending row this way, find_all the
 * rows of a group.
 */
extern int	simhash_within_many(const uint64 *fps, int stride, int n, uint64 centre, int k, int *hits);

/*
 * The C functions behind hamming_distance and hamming_within, by which the
 * planner knows them (index/planner_support.c).
 */
extern PGDLLEXPORT Datum simhash64_hamming_distance(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum simhash64_hamming_within(PG_FUNCTION_ARGS);

/* Whether the CPU has POPCNT, for simhash_popcount64 (from _PG_init). */
extern void simhash_popcount_init(void);

#endif							/* SIMHASH_HAMMING_H */
