/*
 * probe_plan.h — multi-index hashing (Norouzi, Punjani and Fleet, CVPR 2012)
 * on an index keyed by single blocks: which keys to look up for a radius.
 *
 * When every table is one block (max_distance = blocks - 1, the default
 * layout among them), a row has one key per block and the index can answer
 * any radius k from those keys alone: probe block i with every value within
 * r_i bits of the query's block.  A row whose block i matched no probe
 * differs there in more than r_i bits, so a row within k bits matches some
 * probe whenever sum(r_i + 1) > k (pigeonhole).  The probes a row matches
 * also bound its distance from below (a matched probe gives the block's exact
 * distance, an unmatched probed block at least r_i + 1), and the index drops
 * every row whose bound exceeds k before it reaches the heap.
 *
 * Wider radii cost more lookups but filter more: the plan is the radius
 * vector of least estimated cost (see probe_plan.c).
 */
#ifndef SIMHASH_PROBE_PLAN_H
#define SIMHASH_PROBE_PLAN_H

#include "blocks/permute.h"

/* The widest radius probed in one block. */
#define SIMHASH_PROBE_MAX_RADIUS 3

/*
 * The most keys one query looks up, the setting simhash.index_max_probes
 * (default and upper limit); a radius no plan reaches within it scans the
 * index whole.  Set to the number of blocks, it gives the 1.0 behaviour:
 * lookups of the query's own blocks up to max_distance, a whole-index scan
 * beyond.
 */
#define SIMHASH_PROBE_DEFAULT_MAX_KEYS 512
#define SIMHASH_PROBE_MAX_KEYS 8192

extern int	simhash_probe_max_keys;

/* Defines the setting; called from _PG_init. */
extern void simhash_probe_plan_define_setting(void);

typedef struct SimhashProbePlan
{
	int			nkeys;			/* total probes, sum of V(width_i, r_i) */
	int8		radius[SIMHASH_MAX_BLOCKS]; /* r_i; -1: block i not probed */
} SimhashProbePlan;

/*
 * The plan for finding every fingerprint within `radius` bits with the
 * single-block keys of `blocks`.  False when no plan stays within
 * simhash_probe_max_keys (the index must be scanned whole).
 */
extern bool simhash_probe_plan(const SimhashBlocks *blocks, int radius,
							   SimhashProbePlan *plan);

/*
 * Calls visit(block, distance, flip, arg) for every probe of the plan, block
 * by block, distance by distance: flip is the bits to flip in the query
 * (distance of them, all inside the block).  Probe number j is the j-th call.
 */
typedef void (*SimhashProbeVisitor) (int block, int distance, uint64 flip, void *arg);
extern void simhash_probe_plan_visit(const SimhashBlocks *blocks,
									 const SimhashProbePlan *plan,
									 SimhashProbeVisitor visit, void *arg);

#endif							/* SIMHASH_PROBE_PLAN_H */
