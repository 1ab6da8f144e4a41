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
 * heap; the heap recheck computes the real distance.  A query beyond
 * max_distance scans the whole index (GIN_SEARCH_MODE_ALL), so results stay
 * exact, just slower.
 *
 * The default layout, 5 blocks and max_distance 4, is 5 keys per row, each a
 * single 12- or 13-bit block, and so shared by many rows (a small index);
 * a radius-3 query keeps only the rows agreeing on 2 blocks (26 bits).
 *
 * GIN provides WAL, crash safety, concurrency and VACUUM.
 */
#include "gin_ops.h"
#include "hamming_ball.h"
#include "permute.h"

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
} SimhashKeyLayout;

/*
 * Fills *layout for the given options, or ERRORs when they cannot make an
 * index: the tables are enumerated once here, whatever the caller.
 */
static void
key_layout_init(SimhashKeyLayout *layout, int nblocks, int max_distance)
{
	int			number_bits;

	if (max_distance >= nblocks)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_distance must be less than blocks, got max_distance = %d and blocks = %d",
					   max_distance, nblocks),
				errdetail("Two fingerprints within k bits agree on at least blocks - k blocks; the index needs at least one."));
	simhash_blocks_init(&layout->blocks, nblocks);
	layout->max_distance = max_distance;
	layout->ntables = simhash_tables(nblocks, max_distance, &layout->tables);

	/* The widest table's bits, then room for the table number above them. */
	layout->table_shift = 0;
	for (int i = 0; i < layout->ntables; i++)
		layout->table_shift = Max(layout->table_shift,
								  pg_popcount64(simhash_table_mask(&layout->blocks,
																   layout->tables[i])));
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

int
simhash_gin_max_distance(const bytea *options)
{
	if (options == NULL)
		return SIMHASH_GIN_DEFAULT_MAX_DISTANCE;
	return ((const SimhashGinOptions *) options)->max_distance;
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
 * What consistent needs to filter candidates inside the index: the tables
 * the query's keys come from (key i is from table i) and how many blocks a
 * match agrees on at least.  Shared by all the query's keys via extra_data.
 */
typedef struct SimhashQueryFilter
{
	int			min_agreeing;	/* blocks - radius */
	uint32		tables[FLEXIBLE_ARRAY_MEMBER];	/* block bitmap of each key's table */
} SimhashQueryFilter;

/*
 * The query's keys in every table; no keys (and so no rows) for a ball with a
 * NULL field; the whole index beyond max_distance.
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
	SimhashBall ball;
	Datum	   *keys;

	*nkeys = 0;
	if (!simhash_ball_read(PG_GETARG_DATUM(0), &ball))
		PG_RETURN_POINTER(NULL);
	if (ball.radius > layout->max_distance)
	{
		*search_mode = GIN_SEARCH_MODE_ALL;
		PG_RETURN_POINTER(NULL);
	}
	*nkeys = layout->ntables;
	filter = palloc(offsetof(SimhashQueryFilter, tables) + sizeof(uint32) * *nkeys);
	filter->min_agreeing = layout->blocks.nblocks - ball.radius;
	memcpy(filter->tables, layout->tables, sizeof(uint32) * *nkeys);
	keys = palloc(sizeof(Datum) * *nkeys);
	*extra_data = palloc(sizeof(Pointer) * *nkeys);
	for (int i = 0; i < *nkeys; i++)
	{
		keys[i] = Int64GetDatum((int64) key_of(layout, i, ball.center));
		(*extra_data)[i] = (Pointer) filter;
	}
	PG_RETURN_POINTER(keys);
}

/*
 * Whether a row agreeing with the query on the blocks of `agreeing` (the
 * union of the tables whose keys it shares) may lie within the radius.
 *
 * A row shares a table's key iff it agrees with the query on every block of
 * the table, and the tables are all the choices of blocks - max_distance
 * blocks; so when the two agree on at least that many blocks, the shared
 * tables' blocks are exactly the blocks they agree on.  A match within
 * radius <= max_distance bits agrees on at least
 * blocks - radius >= blocks - max_distance blocks: the shared tables must
 * cover that many.
 */
static bool
may_be_within(const SimhashQueryFilter *filter, uint32 agreeing)
{
	return pg_popcount32(agreeing) >= filter->min_agreeing;
}

/*
 * A row may match when the keys it shares with the query cover enough
 * blocks; the heap recheck decides.  No keys means a whole-index scan: every
 * row may match.
 */
PG_FUNCTION_INFO_V1(simhash64_gin_consistent);
Datum
simhash64_gin_consistent(PG_FUNCTION_ARGS)
{
	bool	   *check = (bool *) PG_GETARG_POINTER(0);
	int32		nkeys = PG_GETARG_INT32(3);
	Pointer    *extra_data = (Pointer *) PG_GETARG_POINTER(4);
	bool	   *recheck = (bool *) PG_GETARG_POINTER(5);
	const SimhashQueryFilter *filter;
	uint32		agreeing = 0;

	*recheck = true;
	if (nkeys == 0)
		PG_RETURN_BOOL(true);
	filter = (const SimhashQueryFilter *) extra_data[0];
	for (int i = 0; i < nkeys; i++)
		if (check[i])
			agreeing |= filter->tables[i];
	PG_RETURN_BOOL(may_be_within(filter, agreeing));
}

/*
 * The same in three-valued logic, never more than "maybe" (always recheck):
 * false when even the keys that may be shared cover too few blocks.
 */
PG_FUNCTION_INFO_V1(simhash64_gin_triconsistent);
Datum
simhash64_gin_triconsistent(PG_FUNCTION_ARGS)
{
	GinTernaryValue *check = (GinTernaryValue *) PG_GETARG_POINTER(0);
	int32		nkeys = PG_GETARG_INT32(3);
	Pointer    *extra_data = (Pointer *) PG_GETARG_POINTER(4);
	const SimhashQueryFilter *filter;
	uint32		may_agree = 0;

	if (nkeys == 0)
		PG_RETURN_GIN_TERNARY_VALUE(GIN_MAYBE);
	filter = (const SimhashQueryFilter *) extra_data[0];
	for (int i = 0; i < nkeys; i++)
		if (check[i] != GIN_FALSE)
			may_agree |= filter->tables[i];
	if (may_be_within(filter, may_agree))
		PG_RETURN_GIN_TERNARY_VALUE(GIN_MAYBE);
	PG_RETURN_GIN_TERNARY_VALUE(GIN_FALSE);
}
