/*
 * pair_distances.h — what ANALYZE learns of how near a fingerprint column's
 * rows lie to each other (pair_distances.c): the distances between the pairs
 * of its sample, kept in pg_statistic beside the standard statistics, and
 * the share within k bits that the planner's estimates of hamming_within,
 * <@ and `<~> <= k` read (planner_support.c).
 */
#ifndef SIMHASH_PAIR_DISTANCES_H
#define SIMHASH_PAIR_DISTANCES_H

#include "simhash.h"

#include "utils/selfuncs.h"

/*
 * The pg_statistic kind of the slot: stanumbers[d], d = 0..64, the share of
 * the sample's pairs of non-NULL rows that lie within d bits of each other.
 * A number of the range PostgreSQL leaves to private use (pg_statistic.h).
 */
#define SIMHASH_STATISTIC_KIND_PAIR_DISTANCES 17064

/*
 * The share of a column's rows (NULLs included, never matched) within
 * `radius` bits of a row of it, that row included, as ANALYZE measured it
 * for the column vardata describes; -1 where it has no such statistics (never analyzed, an
 * expression without them, statistics of another shape).
 */
extern double simhash_pair_share(VariableStatData *vardata, int radius);

#endif							/* SIMHASH_PAIR_DISTANCES_H */
