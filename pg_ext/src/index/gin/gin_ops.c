/*
 * gin_ops.c — the GIN operator class simhash64_ops: an exact index for
 * "fingerprints within k bits of q" on the permutation-table scheme of
 * Manku et al. (2007), see permute.h.
 *
 * The 64 bits are split into `blocks` blocks; each row is keyed once per
 * table, a table being a choice of blocks - max_distance blocks.  A key is an
 * int8: the table's number in the high bits and the fingerprint's bits under
 * the table's blocks packed below it, so keys are exact (no hashing): two
 * keys are equal iff the two fingerprints agree on all the blocks of the same
 * table.  A query within k <= max_distance bits looks up the query's keys in
 * every table: every match shares at least one of them, and the tables a row
 * shares tell on how many blocks it agrees with the query, so the index drops
 * the rows that agree on fewer than blocks - k blocks before they reach the
 * heap; the heap recheck computes the real distance.
 *
 * When every table is a single block (max_distance = blocks - 1, as in the
 * default layout), any radius is answered by lookups: multi-index hashing
 * probes each block with the values near the query's (probe_plan.h), and the
 * probes a row matches bound its distance from below.  Only a radius no plan
 * reaches within simhash.index_max_probes lookups, and a radius beyond
 * max_distance on the other layouts, scans the whole index
 * (GIN_SEARCH_MODE_ALL), so results stay exact, just slower.
 *
 * The default layout, 5 blocks and max_distance 4, is 5 keys per row, each a
 * single 12- or 13-bit block, and so shared by many rows (a small index);
 * a radius-3 query keeps only the rows agreeing on 2 blocks (26 bits).
 *
 * GIN provides WAL, crash safety, concurrency and VACUUM.
 */
#include "index/gin/gin_ops.h"
#include "index/hamming_ball.h"
#include "blocks/permute.h"
#include "index/probe_plan.h"

#include "access/gin.h"
#include "access/reloptions.h"

#define SIMHASH_GIN_DEFAULT_BLOCKS 5
#define SIMHASH_GIN_DEFAULT_MAX_DISTANCE 4
#define SIMHASH_GIN_MAX_BLOCKS 16

/* The opclass options, as PostgreSQL stores them (a varlena). */
typedef struct SimhashGinOptions
{
	int32		vl_len_;
	int32		blocks;
	int32		max_distance;
} SimhashGinOptions;

/* How an index turns fingerprints into keys; derived from the options. */
typedef struct SimhashKeyLayout
{
	int			max_distance;
	SimhashBlocks blocks;
	int			ntables;
	uint32	   *tables;			/* block bitmaps, increasing (simhash_tables) */
	int			table_shift;	/* key = table number << table_shift | bits */
	bool		single_block;	/* table i is block i: any radius by probes */
} SimhashKeyLayout;

/*
 * Fills *layout for the given options, or ERRORs when they cannot make an
 * index: the tables are enumerated once here, whatever the caller.
 */
static void
key_layout_init(SimhashKeyLayout *layout, int nblocks, int max_distance)
{
	int			number_bits;

	simhash_check_blocks_exceed_distance(nblocks, max_distance, NULL);
	simhash_blocks_init(&layout->blocks, nblocks);
	layout->max_distance = max_distance;
	layout->ntables = simhash_tables(nblocks, max_distance, &layout->tables);
	/* Tables are enumerated in increasing bitmap order: 1 << 0, 1 << 1, ... */
	layout->single_block = max_distance == nblocks - 1;

	/* The widest table's bits, then room for the table number above them. */
	layout->table_shift = 0;
	for (int i = 0; i < layout->ntables; i++)
		layout->table_shift = Max(layout->table_shift,
								  simhash_popcount64(simhash_table_mask(&layout->blocks, layout->tables[i])));
	number_bits = layout->ntables > 1 ? pg_leftmost_one_pos32(layout->ntables - 1) + 1 : 0;
	if (layout->table_shift + number_bits > 64)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blocks = %d with max_distance = %d needs keys wider than 64 bits",
					   nblocks, max_distance),
				errhint("Use fewer blocks."));
}

static uint64
key_of(const SimhashKeyLayout *layout, int table_number, simhash64 fp)
{
	uint64		bits = simhash_table_bits(&layout->blocks, layout->tables[table_number], fp);

	/* With a single table the key is the whole fingerprint: no room, no need. */
	if (layout->ntables == 1)
		return bits;
	return ((uint64) table_number << layout->table_shift) | bits;
}

/* The layout of the index this support function serves, built on first use. */
static const SimhashKeyLayout *
index_key_layout(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;

	if (flinfo->fn_extra == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);
		SimhashKeyLayout *layout = palloc(sizeof(SimhashKeyLayout));
		int			nblocks = SIMHASH_GIN_DEFAULT_BLOCKS;
		int			max_distance = SIMHASH_GIN_DEFAULT_MAX_DISTANCE;

		if (PG_HAS_OPCLASS_OPTIONS())
		{
			SimhashGinOptions *options = (SimhashGinOptions *) PG_GET_OPCLASS_OPTIONS();

			nblocks = options->blocks;
			max_distance = options->max_distance;
		}
		key_layout_init(layout, nblocks, max_distance);
		flinfo->fn_extra = layout;
		MemoryContextSwitchTo(old);
	}
	return flinfo->fn_extra;
}

bool
simhash_gin_looks_up(const bytea *options, int radius)
{
	int			nblocks = SIMHASH_GIN_DEFAULT_BLOCKS;
	int			max_distance = SIMHASH_GIN_DEFAULT_MAX_DISTANCE;
	SimhashBlocks blocks;
	SimhashProbePlan plan;

	if (options != NULL)
	{
		nblocks = ((const SimhashGinOptions *) options)->blocks;
		max_distance = ((const SimhashGinOptions *) options)->max_distance;
	}
	if (radius < 0 || radius > SIMHASH64_BITS)
		return true;			/* the scan reports the error */
	if (radius <= max_distance)
		return true;
	if (max_distance != nblocks - 1)
		return false;
	simhash_blocks_init(&blocks, nblocks);
	return simhash_probe_plan(&blocks, radius, &plan);
}

/* Rejects option combinations that cannot make an index, at CREATE INDEX. */
static void
validate_options(void *parsed, relopt_value *values, int nvalues)
{
	SimhashGinOptions *options = parsed;
	SimhashKeyLayout layout;

	key_layout_init(&layout, options->blocks, options->max_distance);
	pfree(layout.tables);
}

PG_FUNCTION_INFO_V1(simhash64_gin_options);
Datum
simhash64_gin_options(PG_FUNCTION_ARGS)
{
	local_relopts *relopts = (local_relopts *) PG_GETARG_POINTER(0);

	init_local_reloptions(relopts, sizeof(SimhashGinOptions));
	add_local_int_reloption(relopts, "blocks",
							"number of blocks the 64 bits are split into",
							SIMHASH_GIN_DEFAULT_BLOCKS, 1, SIMHASH_GIN_MAX_BLOCKS,
							offsetof(SimhashGinOptions, blocks));
	add_local_int_reloption(relopts, "max_distance",
							"largest Hamming distance the index answers by lookup",
							SIMHASH_GIN_DEFAULT_MAX_DISTANCE, 0, SIMHASH_GIN_MAX_BLOCKS - 1,
							offsetof(SimhashGinOptions, max_distance));
	register_reloptions_validator(relopts, validate_options);
	PG_RETURN_VOID();
}

/* One key per table. */
PG_FUNCTION_INFO_V1(simhash64_gin_extract_value);
Datum
simhash64_gin_extract_value(PG_FUNCTION_ARGS)
{
	simhash64	fp = PG_GETARG_SIMHASH64(0);
	int32	   *nkeys = (int32 *) PG_GETARG_POINTER(1);
	const SimhashKeyLayout *layout = index_key_layout(fcinfo);
	Datum	   *keys = palloc(sizeof(Datum) * layout->ntables);

	for (int i = 0; i < layout->ntables; i++)
		keys[i] = Int64GetDatum((int64) key_of(layout, i, fp));
	*nkeys = layout->ntables;
	PG_RETURN_POINTER(keys);
}

/*
 * What consistent needs to filter candidates inside the index, shared by all
 * the query's keys via extra_data.  Key i is either table i's key (layouts of
 * multi-block tables) or a probe of one block (single-block layouts).
 */
typedef struct SimhashQueryKey
{
	uint32		table;			/* tables: block bitmap of the key's table */
	uint8		block;			/* probes: the block probed */
	uint8		distance;		/* probes: its distance from the query's block */
} SimhashQueryKey;

typedef struct SimhashQueryFilter
{
	bool		by_probes;
	int			radius;
	int			min_agreeing;	/* tables: blocks - radius */
	int			nblocks;
	int8		unmatched[SIMHASH_MAX_BLOCKS];	/* probes: the least distance on
												 * a block no probe matched */
	SimhashQueryKey keys[FLEXIBLE_ARRAY_MEMBER];
} SimhashQueryFilter;

static SimhashQueryFilter *
query_filter_alloc(int nkeys)
{
	return palloc0(offsetof(SimhashQueryFilter, keys) + sizeof(SimhashQueryKey) * nkeys);
}

/* The query's key in every table (radius <= max_distance). */
static Datum *
table_keys(const SimhashKeyLayout *layout, const SimhashBall *ball, SimhashQueryFilter **filter)
{
	Datum	   *keys = palloc(sizeof(Datum) * layout->ntables);

	*filter = query_filter_alloc(layout->ntables);
	(*filter)->min_agreeing = layout->blocks.nblocks - ball->radius;
	for (int i = 0; i < layout->ntables; i++)
	{
		keys[i] = Int64GetDatum((int64) key_of(layout, i, ball->center));
		(*filter)->keys[i].table = layout->tables[i];
	}
	return keys;
}

/* Collects the probe keys of a plan (simhash_probe_plan_visit). */
typedef struct ProbeCollector
{
	const SimhashKeyLayout *layout;
	simhash64	center;
	Datum	   *keys;
	SimhashQueryFilter *filter;
	int			nkeys;
} ProbeCollector;

static void
collect_probe(int block, int distance, uint64 flip, void *arg)
{
	ProbeCollector *collector = arg;
	int			i = collector->nkeys++;

	collector->keys[i] = Int64GetDatum((int64) key_of(collector->layout, block,
													  collector->center ^ flip));
	collector->filter->keys[i].block = (uint8) block;
	collector->filter->keys[i].distance = (uint8) distance;
}

/* The probe keys of a single-block layout's plan for the radius. */
static Datum *
probe_keys(const SimhashKeyLayout *layout, const SimhashBall *ball,
		   const SimhashProbePlan *plan, SimhashQueryFilter **filter)
{
	ProbeCollector collector;

	collector.layout = layout;
	collector.center = ball->center;
	collector.keys = palloc(sizeof(Datum) * plan->nkeys);
	collector.filter = query_filter_alloc(plan->nkeys);
	collector.nkeys = 0;
	collector.filter->by_probes = true;
	collector.filter->nblocks = layout->blocks.nblocks;
	for (int i = 0; i < layout->blocks.nblocks; i++)
		collector.filter->unmatched[i] = (int8) (plan->radius[i] + 1);
	simhash_probe_plan_visit(&layout->blocks, plan, collect_probe, &collector);
	Assert(collector.nkeys == plan->nkeys);
	*filter = collector.filter;
	return collector.keys;
}

/*
 * The keys to look up for the query: probes on single-block layouts, else
 * the query's key in every table.  No keys (and so no rows) for a ball with a
 * NULL field; the whole index when no lookup answers the radius.
 *
 * Every table, not only enough of them to find each match: the tables a row
 * shares with the query tell which blocks the two agree on (below), so the
 * index itself drops the rows agreeing on too few blocks and only those that
 * may be within the radius are fetched from the heap.
 */
PG_FUNCTION_INFO_V1(simhash64_gin_extract_query);
Datum
simhash64_gin_extract_query(PG_FUNCTION_ARGS)
{
	int32	   *nkeys = (int32 *) PG_GETARG_POINTER(1);
	Pointer   **extra_data = (Pointer **) PG_GETARG_POINTER(4);
	int32	   *search_mode = (int32 *) PG_GETARG_POINTER(6);
	const SimhashKeyLayout *layout = index_key_layout(fcinfo);
	SimhashQueryFilter *filter;
	SimhashProbePlan plan;
	SimhashBall ball;
	Datum	   *keys;

	*nkeys = 0;
	if (!simhash_ball_read(PG_GETARG_DATUM(0), &ball))
		PG_RETURN_POINTER(NULL);
	if (layout->single_block && simhash_probe_plan(&layout->blocks, ball.radius, &plan))
	{
		keys = probe_keys(layout, &ball, &plan, &filter);
		*nkeys = plan.nkeys;
	}
	else if (!layout->single_block && ball.radius <= layout->max_distance)
	{
		keys = table_keys(layout, &ball, &filter);
		*nkeys = layout->ntables;
	}
	else
	{
		*search_mode = GIN_SEARCH_MODE_ALL;
		PG_RETURN_POINTER(NULL);
	}
	filter->radius = ball.radius;
	*extra_data = palloc(sizeof(Pointer) * *nkeys);
	for (int i = 0; i < *nkeys; i++)
		(*extra_data)[i] = (Pointer) filter;
	PG_RETURN_POINTER(keys);
}

/*
 * Tables: a row shares a table's key iff it agrees with the query on every
 * block of the table, and the tables are all the choices of
 * blocks - max_distance blocks; so when the two agree on at least that many
 * blocks, the union of the shared tables' blocks is exactly the blocks they
 * agree on.  A match within radius <= max_distance bits agrees on at least
 * blocks - radius >= blocks - max_distance blocks: the shared tables must
 * cover that many.
 */
static bool
tables_may_be_within(const SimhashQueryFilter *filter, const GinTernaryValue *matched, int nkeys)
{
	uint32		agreeing = 0;

	for (int i = 0; i < nkeys; i++)
		if (matched[i] != GIN_FALSE)
			agreeing |= filter->keys[i].table;
	return pg_popcount32(agreeing) >= filter->min_agreeing;
}

/*
 * Probes: a row matching a probe of block i differs there in exactly the
 * probe's distance (it has one value per block, so it matches at most one
 * probe of each); a probed block no probe matched differs in more than the
 * plan's radius for it.  The sum bounds the row's distance from below.
 */
static bool
probes_may_be_within(const SimhashQueryFilter *filter, const GinTernaryValue *matched, int nkeys)
{
	int8		block_distance[SIMHASH_MAX_BLOCKS];
	int			bound = 0;

	memcpy(block_distance, filter->unmatched, sizeof(block_distance));
	for (int i = 0; i < nkeys; i++)
		if (matched[i] != GIN_FALSE)
			block_distance[filter->keys[i].block] =
				Min(block_distance[filter->keys[i].block], filter->keys[i].distance);
	for (int b = 0; b < filter->nblocks; b++)
		bound += block_distance[b];
	return bound <= filter->radius;
}

/*
 * Whether a row matching the keys `matched` (GIN_TRUE or GIN_MAYBE: a
 * possible match) may lie within the radius.  The consistent function passes
 * its bool array: GinTernaryValue is bool-sized and GIN_TRUE is true.
 */
static bool
may_be_within(const SimhashQueryFilter *filter, const GinTernaryValue *matched, int nkeys)
{
	if (filter->by_probes)
		return probes_may_be_within(filter, matched, nkeys);
	return tables_may_be_within(filter, matched, nkeys);
}

/*
 * A row may match when the keys it shares with the query leave it possibly
 * within the radius; the heap recheck decides.  No keys means a whole-index
 * scan: every row may match.
 */
PG_FUNCTION_INFO_V1(simhash64_gin_consistent);
Datum
simhash64_gin_consistent(PG_FUNCTION_ARGS)
{
	bool	   *check = (bool *) PG_GETARG_POINTER(0);
	int32		nkeys = PG_GETARG_INT32(3);
	Pointer    *extra_data = (Pointer *) PG_GETARG_POINTER(4);
	bool	   *recheck = (bool *) PG_GETARG_POINTER(5);

	*recheck = true;
	if (nkeys == 0)
		PG_RETURN_BOOL(true);
	PG_RETURN_BOOL(may_be_within((const SimhashQueryFilter *) extra_data[0],
								 (const GinTernaryValue *) check, nkeys));
}

/*
 * The same in three-valued logic, never more than "maybe" (always recheck):
 * false when even every key that may match the row cannot bring it within
 * the radius.
 */
PG_FUNCTION_INFO_V1(simhash64_gin_triconsistent);
Datum
simhash64_gin_triconsistent(PG_FUNCTION_ARGS)
{
	GinTernaryValue *check = (GinTernaryValue *) PG_GETARG_POINTER(0);
	int32		nkeys = PG_GETARG_INT32(3);
	Pointer    *extra_data = (Pointer *) PG_GETARG_POINTER(4);

	if (nkeys == 0)
		PG_RETURN_GIN_TERNARY_VALUE(GIN_MAYBE);
	if (may_be_within((const SimhashQueryFilter *) extra_data[0], check, nkeys))
		PG_RETURN_GIN_TERNARY_VALUE(GIN_MAYBE);
	PG_RETURN_GIN_TERNARY_VALUE(GIN_FALSE);
}
