/*
 * probe_plan.c — choosing the probe radii of a multi-index-hashing query
 * (see probe_plan.h) and enumerating its probes.
 *
 * The cost of a radius vector r, in microseconds of a warm-cache query
 * (calibrated with bench/bench_index.py at 1M rows):
 *   - each probe is an entry-tree lookup (SIMHASH_PROBE_LOOKUP_US);
 *   - each posting item under a probe is read and merged, and GIN's merge and
 *     the consistent function both walk every probe for it
 *     (SIMHASH_PROBE_ITEM_US + SIMHASH_PROBE_ITEM_PER_KEY_US per probe): this
 *     term dominates, and is what keeps plans from probing wide radii;
 *   - each row that survives the in-index bound is fetched from the heap and
 *     rechecked (SIMHASH_PROBE_HEAP_US).
 * Row counts assume uniformly random fingerprints and a table of
 * SIMHASH_PROBE_ROWS_PER_KEY rows per key of the widest block: a layout's
 * block width is chosen for its table size (docs/index.md), and GIN tells
 * the operator class nothing about the table.  Exactness never depends on
 * the estimate, only speed does.
 *
 * Plans are cached per (blocks, radius) for the life of the backend: the
 * search takes up to a few milliseconds for 16 blocks, and a scan's support
 * functions keep nothing from one scan to the next.
 */
#include "index/probe_plan.h"

#include <math.h>

#include "utils/guc.h"

#define SIMHASH_PROBE_LOOKUP_US 1.0
#define SIMHASH_PROBE_ITEM_US 0.02
#define SIMHASH_PROBE_ITEM_PER_KEY_US 0.006
#define SIMHASH_PROBE_HEAP_US 0.5
#define SIMHASH_PROBE_ROWS_PER_KEY 128.0

typedef enum PlanState
{
	PLAN_UNKNOWN = 0,
	PLAN_NONE,					/* no plan within simhash_probe_max_keys */
	PLAN_FOUND
} PlanState;

int			simhash_probe_max_keys = SIMHASH_PROBE_DEFAULT_MAX_KEYS;

/* Plans by (blocks, radius), each for the simhash_probe_max_keys it was made under. */
static SimhashProbePlan plan_cache[SIMHASH_MAX_BLOCKS + 1][SIMHASH64_BITS + 1];
static uint8 plan_state[SIMHASH_MAX_BLOCKS + 1][SIMHASH64_BITS + 1];
static int	plan_max_keys[SIMHASH_MAX_BLOCKS + 1][SIMHASH64_BITS + 1];

void
simhash_probe_plan_define_setting(void)
{
	DefineCustomIntVariable("simhash.index_max_probes",
							"Most keys a simhash64_ops index looks up for one radius query.",
							"A radius that needs more scans the whole index.",
							&simhash_probe_max_keys, SIMHASH_PROBE_DEFAULT_MAX_KEYS,
							1, SIMHASH_PROBE_MAX_KEYS, PGC_USERSET, 0, NULL, NULL, NULL);
}

/* The search's fixed inputs and its best vector so far. */
typedef struct PlanSearch
{
	int			nblocks;
	int			radius;
	int			width[SIMHASH_MAX_BLOCKS];
	double		rows;			/* assumed table size */
	int8		current[SIMHASH_MAX_BLOCKS];
	double		best_cost;
	SimhashProbePlan best;
} PlanSearch;

/* Values within r bits of a w-bit value: V(w, r) = sum C(w, d), d <= r. */
static int64
ball_volume(int width, int r)
{
	int64		volume = 0;

	for (int d = 0; d <= Min(r, width); d++)
		volume += simhash_binomial(width, d);
	return volume;
}

/*
 * Expected fraction of random rows whose in-index bound, sum of
 * min(d_i, r_i + 1) over the probed blocks, is at most the radius.
 */
static double
surviving_fraction(const PlanSearch *search)
{
	double		bound[SIMHASH64_BITS + 2] = {1.0};	/* P(partial sum = s) */
	double		within = 0;

	for (int i = 0; i < search->nblocks; i++)
	{
		int			r = search->current[i];
		double		next[SIMHASH64_BITS + 2] = {0};
		double		space = ldexp(1.0, search->width[i]);
		double		below = 0;

		if (r < 0)
			continue;
		for (int d = 0; d <= r + 1; d++)
		{
			/* d <= r: the block's exact distance; r + 1: any larger one. */
			double		p = d > r ? Max(1.0 - below, 0.0) :
				d > search->width[i] ? 0.0 : simhash_binomial(search->width[i], d) / space;

			below += p;
			/* Sums beyond radius + 1 are all "too far": keep them there. */
			for (int s = 0; s <= search->radius + 1; s++)
				next[Min(s + d, search->radius + 1)] += bound[s] * p;
		}
		memcpy(bound, next, sizeof(next));
	}
	for (int s = 0; s <= search->radius; s++)
		within += bound[s];
	return within;
}

static void
consider_current(PlanSearch *search)
{
	int64		nkeys = 0;
	double		items = 0;
	double		cost;
	int			reach = 0;

	for (int i = 0; i < search->nblocks; i++)
	{
		int			r = search->current[i];

		if (r < 0)
			continue;
		reach += r + 1;
		nkeys += ball_volume(search->width[i], r);
		items += ball_volume(search->width[i], r) * search->rows / ldexp(1.0, search->width[i]);
	}
	if (reach <= search->radius || nkeys > simhash_probe_max_keys)
		return;
	cost = nkeys * SIMHASH_PROBE_LOOKUP_US +
		items * (SIMHASH_PROBE_ITEM_US + nkeys * SIMHASH_PROBE_ITEM_PER_KEY_US) +
		search->rows * surviving_fraction(search) * SIMHASH_PROBE_HEAP_US;
	if (cost < search->best_cost)
	{
		search->best_cost = cost;
		search->best.nkeys = (int) nkeys;
		memcpy(search->best.radius, search->current, sizeof(search->current));
	}
}

/*
 * Tries every non-increasing radius vector from block i on (blocks differ in
 * width by at most one bit, so the order of equal radii hardly matters, and
 * the wider first blocks get the wider radii).
 */
static void
search_from(PlanSearch *search, int i, int largest)
{
	if (i == search->nblocks)
	{
		consider_current(search);
		return;
	}
	for (int r = largest; r >= -1; r--)
	{
		search->current[i] = (int8) r;
		search_from(search, i + 1, r);
	}
}

static bool
find_plan(const SimhashBlocks *blocks, int radius, SimhashProbePlan *plan)
{
	PlanSearch	search;
	int			widest = 0;

	memset(&search, 0, sizeof(search));
	search.nblocks = blocks->nblocks;
	search.radius = radius;
	for (int i = 0; i < blocks->nblocks; i++)
	{
		search.width[i] = simhash_popcount64(blocks->mask[i]);
		widest = Max(widest, search.width[i]);
	}
	search.rows = ldexp(SIMHASH_PROBE_ROWS_PER_KEY, widest);
	search.best_cost = HUGE_VAL;
	search_from(&search, 0, SIMHASH_PROBE_MAX_RADIUS);
	if (search.best_cost == HUGE_VAL)
		return false;
	*plan = search.best;
	return true;
}

bool
simhash_probe_plan(const SimhashBlocks *blocks, int radius, SimhashProbePlan *plan)
{
	int			nblocks = blocks->nblocks;

	Assert(nblocks >= 1 && nblocks <= SIMHASH_MAX_BLOCKS);
	Assert(radius >= 0 && radius <= SIMHASH64_BITS);
	if (plan_state[nblocks][radius] == PLAN_UNKNOWN ||
		plan_max_keys[nblocks][radius] != simhash_probe_max_keys)
	{
		plan_state[nblocks][radius] =
			find_plan(blocks, radius, &plan_cache[nblocks][radius]) ? PLAN_FOUND : PLAN_NONE;
		plan_max_keys[nblocks][radius] = simhash_probe_max_keys;
	}
	if (plan_state[nblocks][radius] == PLAN_NONE)
		return false;
	*plan = plan_cache[nblocks][radius];
	return true;
}

/* Every w-bit value with d bits set, in increasing order (Gosper's hack). */
static void
visit_flips(int block, int distance, int width, int shift, SimhashProbeVisitor visit, void *arg)
{
	uint64		flips = distance == 0 ? 0 : (distance == 64 ? ~UINT64CONST(0) :
											 (UINT64CONST(1) << distance) - 1);

	for (;;)
	{
		uint64		lowest = flips & (~flips + 1);
		uint64		ripple = flips + lowest;

		visit(block, distance, flips << shift, arg);
		if (distance == 0 || ripple == 0)
			return;
		flips = ripple | (((flips ^ ripple) >> 2) / lowest);
		if (width < 64 && (flips >> width) != 0)
			return;
	}
}

void
simhash_probe_plan_visit(const SimhashBlocks *blocks, const SimhashProbePlan *plan,
						 SimhashProbeVisitor visit, void *arg)
{
	for (int i = 0; i < blocks->nblocks; i++)
	{
		int			width = simhash_popcount64(blocks->mask[i]);
		int			shift = pg_rightmost_one_pos64(blocks->mask[i]);

		for (int d = 0; d <= Min(plan->radius[i], width); d++)
			visit_flips(i, d, width, shift, visit, arg);
	}
}
