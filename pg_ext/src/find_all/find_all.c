/*
 * find_all.c — every pair of fingerprints within k bits (see find_all.h).
 * Layer: the engine, on entry_sort.c and progress.c.
 *
 * Manku's scheme, as simhash-cpp does it, with three differences:
 *   - entries are grouped by a table's blocks with radix partitions
 *     (entry_sort.c), not permuted and comparison-sorted;
 *   - tables are searched pass by pass, stripe and unit (find_all.h): the
 *     whole array is moved once per pass, a stripe at a time through a
 *     buffer of a stripe's size, and each table then scatters unit after
 *     unit inside the caches;
 *   - a pair is reported only from the first table both fingerprints agree
 *     on (simhash_first_table), so each pair comes out once with no set of
 *     pairs, whichever unit, pass or process finds it.
 * simhash_distinct(), for clusters, sorts by the whole fingerprint.
 *
 * Memory: the entries (16 bytes per row), and per process a stripe's
 * buffer (stripes are an eighth of the array per process: 2 bytes per row
 * in all), a unit's buffer and the bucket counts (about 2 MB).
 */
#include "find_all/find_all.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "find_all/progress.h"
#include "type/hamming.h"

/*
 * Units of about this many entries: enough that a unit's scatter is not
 * dominated by its bucket counts, few enough that it stays in L2.  At most
 * 2^SIMHASH_UNIT_MAX_BITS units: beyond 2^30 rows units grow instead.
 */
#define UNIT_ROWS 16384

/* Stripes per process: each one's buffer is then 1/8 of the array. */
#define STRIPES_PER_PARTICIPANT 8

/* Below this many rows one stripe: the array itself fits in the caches. */
#define STRIPES_MIN_ROWS 65536

/*
 * A unit's buffer holds at least this many entries and four times the
 * average unit; a bigger unit (skewed input) is partitioned in place.
 */
#define SCRATCH_MIN_ROWS 8192

/* Buckets of an oversized unit's pieces, partitioned in place. */
#define IN_PLACE_BUCKET_BITS 12

/*
 * A bucket of a unit with more entries than this and several keys is sorted
 * before its pairs are compared.
 */
#define SMALL_BUCKET 64

/*
 * The cost model of simhash_choose_blocks(), in nanoseconds of backend CPU
 * time measured with bench/bench_find_all.py's table (1M rows, distance 3,
 * blocks 4 to 7: 0.24, 0.20, 0.27, 0.44 s): scattering and scanning one row
 * for one table (with its share of the pass that cuts the units), and
 * comparing one pair of rows that share a key.
 */
#define COST_ROW_PER_TABLE 15.0
#define COST_PAIR 5.0

void
simhash_check_distance(int k)
{
	simhash_check_radius(k);
	if (k >= SIMHASH_MAX_BLOCKS)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_distance %d is too large", k),
				errdetail("Pairs can be searched for within at most %d bits.",
						  SIMHASH_MAX_BLOCKS - 1));
}

void
simhash_check_blocks(int k, int blocks)
{
	uint32	   *tables;

	simhash_check_distance(k);
	simhash_check_blocks_exceed_distance(blocks, k, "Leave blocks NULL to let the function choose.");
	/* The remaining limits (at most 32 blocks, not too many tables) live there. */
	simhash_tables(blocks, k, &tables);
	pfree(tables);
}

int
simhash_choose_blocks(int k, Size n)
{
	return simhash_choose_blocks_within(k, n, SIMHASH64_BITS, 0);
}

int
simhash_choose_blocks_within(int k, Size n, int free_bits, int required_bits)
{
	int			best = k + 1;
	double		best_cost = INFINITY;

	for (int blocks = k + 1; blocks <= Min(SIMHASH_MAX_BLOCKS, Max(free_bits, k + 1)); blocks++)
	{
		int64		tables = simhash_table_count(blocks, k);
		double		key_bits = required_bits + (double) free_bits * (blocks - k) / blocks;
		/* Random fingerprints share a key of b bits with chance 2^-b. */
		double		pairs = (double) n * n / 2 * pow(2.0, -key_bits);
		double		cost;

		/* C(blocks, k) only grows with blocks. */
		if (tables > SIMHASH_MAX_TABLES)
			break;
		cost = tables * (n * COST_ROW_PER_TABLE + pairs * COST_PAIR);
		if (cost < best_cost)
		{
			best = blocks;
			best_cost = cost;
		}
	}
	return best;
}

static int
unit_bits_for(Size n)
{
	int			bits = 0;

	while (bits < SIMHASH_UNIT_MAX_BITS && (n >> bits) > UNIT_ROWS)
		bits++;
	return bits;
}

static int
stripes_for(Size n, int participants)
{
	Size		stripes = (Size) STRIPES_PER_PARTICIPANT * Max(participants, 1);

	if (n < STRIPES_MIN_ROWS)
		return 1;
	return (int) Min(stripes, n / (STRIPES_MIN_ROWS / STRIPES_PER_PARTICIPANT));
}

Size
simhash_stripes_piece_bytes(Size n, int participants)
{
	return sizeof(Size) * stripes_for(n, participants) * (((Size) 1 << unit_bits_for(n)) + 1);
}

void
simhash_stripes_init(SimhashStripes *stripes, SimhashEntry *entries, Size n, int participants,
					 Size *piece_start)
{
	stripes->entries = entries;
	stripes->n = n;
	stripes->nstripes = stripes_for(n, participants);
	stripes->stripe_rows = (n + stripes->nstripes - 1) / stripes->nstripes;
	stripes->unit_bits = unit_bits_for(n);
	stripes->piece_start = piece_start != NULL ? piece_start :
		MemoryContextAllocHuge(CurrentMemoryContext, simhash_stripes_piece_bytes(n, participants));
}

/* The scratch a unit needs: four times the average unit, and at least the minimum. */
static Size
scratch_rows_for(Size n)
{
	return Max(SCRATCH_MIN_ROWS, 4 * (n >> unit_bits_for(n)));
}

/* Bits of bucket number for a unit of n entries: about two buckets per entry. */
static int
bucket_bits_for(Size n, int max_bits)
{
	int			bits = 1;

	while (bits < max_bits && ((Size) 1 << bits) < 2 * n)
		bits++;
	return bits;
}

/*
 * The bucket counts a search needs: for its scratch, an oversized unit's
 * pieces, and a stripe's units.
 */
static int
search_bucket_bits(Size n)
{
	int			bits = Max(bucket_bits_for(scratch_rows_for(n), SIMHASH_PARTITION_MAX_BITS),
						   IN_PLACE_BUCKET_BITS);

	return Max(bits, unit_bits_for(n));
}

Size
simhash_search_fixed_bytes(Size n)
{
	return sizeof(SimhashEntry) * scratch_rows_for(n) +
		sizeof(Size) * (2 * ((Size) 1 << search_bucket_bits(n)) + 1);
}


void
simhash_workspace_init(SimhashWorkspace *work, const SimhashStripes *stripes)
{
	Size		buckets;

	work->bucket_bits = search_bucket_bits(stripes->n);
	buckets = (Size) 1 << work->bucket_bits;
	work->bucket_start = palloc(sizeof(Size) * (buckets + 1));
	work->bucket_next = palloc(sizeof(Size) * buckets);
	work->scratch_rows = scratch_rows_for(stripes->n);
	work->scratch = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SimhashEntry) * work->scratch_rows);
	work->stripe_scratch_rows = stripes->nstripes > 1 ? stripes->stripe_rows : 0;
	work->stripe_scratch = work->stripe_scratch_rows == 0 ? NULL :
		MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SimhashEntry) * work->stripe_scratch_rows);
}

void
simhash_workspace_free(SimhashWorkspace *work)
{
	pfree(work->bucket_start);
	pfree(work->bucket_next);
	pfree(work->scratch);
	if (work->stripe_scratch != NULL)
		pfree(work->stripe_scratch);
}

void
simhash_search_init(SimhashSearch *search, int k, const SimhashBlocks *layout, uint64 required,
					const SimhashStripes *stripes, SimhashPairFn emit, void *arg)
{
	uint32	   *tables;
	int			t = 0;

	search->k = k;
	search->layout = *layout;
	search->required = required;
	search->coarse_table = 0;
	search->emit = emit;
	search->arg = arg;
	search->ntables = simhash_tables(layout->nblocks, k, &tables);
	search->tables = palloc(sizeof(uint32) * search->ntables);
	search->npasses = 0;
	/* A table's pass is its lowest block; passes in block order. */
	for (int block = 0; block < layout->nblocks; block++)
	{
		int			start = t;

		for (int i = 0; i < search->ntables; i++)
			if (pg_rightmost_one_pos32(tables[i]) == block)
				search->tables[t++] = tables[i];
		if (t == start)
			continue;
		search->pass_start[search->npasses] = start;
		search->pass_mask[search->npasses] = layout->mask[block] | required;
		search->npasses++;
	}
	search->pass_start[search->npasses] = t;
	Assert(t == search->ntables);
	pfree(tables);

	simhash_workspace_init(&search->work, stripes);
}

int
simhash_search_passes(const SimhashBlocks *layout, int k)
{
	uint32	   *tables;
	int			ntables = simhash_tables(layout->nblocks, k, &tables);
	uint32		lowest_blocks = 0;

	for (int t = 0; t < ntables; t++)
		lowest_blocks |= tables[t] & (~tables[t] + 1);
	pfree(tables);
	return pg_popcount32(lowest_blocks);
}

void
simhash_search_filter(SimhashSearch *search, const SimhashBlocks *coarse, uint32 coarse_table)
{
	search->coarse = *coarse;
	search->coarse_table = coarse_table;
}

void
simhash_search_free(SimhashSearch *search)
{
	pfree(search->tables);
	simhash_workspace_free(&search->work);
}

/* Reports a pair within k bits if this table is the first it agrees on. */
static inline void
report_if_first(const SimhashSearch *search, uint32 table, const SimhashEntry *a,
				const SimhashEntry *b, int distance)
{
	uint32		agreeing = simhash_blocks_agreeing(&search->layout, a->hash, b->hash);

	if (simhash_first_table(agreeing, search->layout.nblocks, search->k) != table)
		return;
	if (search->coarse_table != 0)
	{
		agreeing = simhash_blocks_agreeing(&search->coarse, a->hash, b->hash);
		if (simhash_first_table(agreeing, search->coarse.nblocks, search->k) != search->coarse_table)
			return;
	}
	search->emit(search->arg, Min(a->key, b->key), Max(a->key, b->key), distance);
}

/*
 * Entries read as pairs of words, the fingerprint first (simhash_within_many's
 * stride 2), a step of at most COMPARE_STEP of them at a time.
 */
StaticAssertDecl(sizeof(SimhashEntry) == 2 * sizeof(uint64) && offsetof(SimhashEntry, hash) == 0,
				 "an entry is two words, the fingerprint first");
#define COMPARE_STEP 1024

/* Reports the pairs of `one` and entries[0..count) within k bits (each pair once: report_if_first). */
static void
compare_one(const SimhashSearch *search, uint32 table, const SimhashEntry *one,
			const SimhashEntry *entries, Size count)
{
	int			hits[COMPARE_STEP];

	for (Size from = 0; from < count; from += COMPARE_STEP)
	{
		const SimhashEntry *step = entries + from;
		int			found = simhash_within_many(&step->hash, 2, (int) Min(count - from, COMPARE_STEP),
												one->hash, search->k, hits);

		for (int h = 0; h < found; h++)
			report_if_first(search, table, one, &step[hits[h]], simhash64_distance(one->hash, step[hits[h]].hash));
	}
}

void
simhash_compare_across(const SimhashSearch *search, int table, const SimhashEntry *group, Size n,
					   const SimhashEntry *others, Size m)
{
	for (Size i = 0; i < m; i++)
	{
		compare_one(search, search->tables[table], &others[i], group, n);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Compares every pair of entries[0..count), which share the table's key. */
static void
compare_group(const SimhashSearch *search, uint32 table, const SimhashEntry *entries, Size count)
{
	for (Size i = 0; i + 1 < count; i++)
	{
		compare_one(search, table, &entries[i], entries + i + 1, count - i - 1);
		/* Many equal keys make this loop quadratic: stay cancellable. */
		CHECK_FOR_INTERRUPTS();
	}
}

/* Compares the pairs of a small bucket that share the table's key. */
static void
compare_small_bucket(const SimhashSearch *search, uint32 table, const SimhashSortBy *by,
					 const SimhashEntry *entries, Size count)
{
	uint64		values[SMALL_BUCKET];

	if (count == 2)
	{
		int			distance = simhash_popcount64(entries[0].hash ^ entries[1].hash);

		if (distance <= search->k &&
			simhash_sort_value(by, &entries[0]) == simhash_sort_value(by, &entries[1]))
			report_if_first(search, table, &entries[0], &entries[1], distance);
		return;
	}
	for (Size i = 0; i < count; i++)
		values[i] = simhash_sort_value(by, &entries[i]);
	for (Size i = 0; i + 1 < count; i++)
		for (Size j = i + 1; j < count; j++)
		{
			int			distance;

			if (values[i] != values[j])
				continue;
			distance = simhash_popcount64(entries[i].hash ^ entries[j].hash);
			if (distance <= search->k)
				report_if_first(search, table, &entries[i], &entries[j], distance);
		}
}

/*
 * The pairs of one bucket of a unit.  A big bucket holding several keys
 * (many entries of one key are a real group; several keys, colliding
 * buckets or adversarial input) is sorted first and each key's run compared
 * on its own, so that it cannot turn quadratic.
 */
static void
scan_bucket(const SimhashSearch *search, uint32 table, const SimhashSortBy *by,
			SimhashEntry *entries, Size count)
{
	uint64		value = simhash_sort_value(by, &entries[0]);
	Size		start = 0;
	bool		one_key = true;

	if (count <= SMALL_BUCKET)
	{
		compare_small_bucket(search, table, by, entries, count);
		return;
	}
	for (Size i = 1; i < count && one_key; i++)
		one_key = simhash_sort_value(by, &entries[i]) == value;
	if (one_key)
	{
		compare_group(search, table, entries, count);
		return;
	}
	simhash_sort_entries(entries, count, by, SIMHASH64_BITS);
	value = simhash_sort_value(by, &entries[0]);
	for (Size i = 1; i <= count; i++)
	{
		uint64		next = i < count ? simhash_sort_value(by, &entries[i]) : ~value;

		if (next == value)
			continue;
		if (i - start > 1)
			compare_group(search, table, entries + start, i - start);
		start = i;
		value = next;
	}
}

SimhashSortBy
simhash_pass_order(const SimhashSearch *search, int pass)
{
	SimhashSortBy by = {.mask = search->pass_mask[pass]};

	return by;
}

SimhashSortBy
simhash_table_order(const SimhashSearch *search, uint32 table)
{
	SimhashSortBy by = {.mask = simhash_table_mask(&search->layout, table) | search->required};

	return by;
}

/* Orders one stripe into its pieces by the leading bits of an order. */
static void
partition_stripe_by(SimhashWorkspace *work, const SimhashSortBy *order, SimhashStripes *stripes,
					int stripe)
{
	Size		units = simhash_stripes_units(stripes);
	Size	   *starts = stripes->piece_start + stripe * (units + 1);
	Size		first = Min(stripes->n, stripe * stripes->stripe_rows);
	Size		n = Min(stripes->n, first + stripes->stripe_rows) - first;
	SimhashEntry *entries = stripes->entries + first;
	SimhashSortBy by = *order;

	if (stripes->unit_bits == 0)
	{
		/* One unit: the stripe is its piece. */
		starts[0] = first;
		starts[1] = first + n;
		return;
	}
	if (n <= work->stripe_scratch_rows)
	{
		/* Out of place and back: one sequential pass each way. */
		simhash_scatter_entries(entries, n, &by, stripes->unit_bits, work->stripe_scratch,
								starts, work->bucket_next);
		memcpy(entries, work->stripe_scratch, sizeof(SimhashEntry) * n);
	}
	else
		simhash_partition_entries(entries, n, &by, stripes->unit_bits, starts, work->bucket_next);
	for (Size u = 0; u <= units; u++)
		starts[u] += first;
}

void
simhash_partition_stripe(SimhashSearch *search, int pass, SimhashStripes *stripes, int stripe)
{
	SimhashSortBy by = simhash_pass_order(search, pass);

	partition_stripe_by(&search->work, &by, stripes, stripe);
}

/* The pieces of a unit: piece s is entries[start[s] .. end[s]). */
static Size
unit_pieces(const SimhashStripes *stripes, Size unit, Size *start, Size *end)
{
	Size		units = simhash_stripes_units(stripes);
	Size		total = 0;

	for (int s = 0; s < stripes->nstripes; s++)
	{
		const Size *starts = stripes->piece_start + s * (units + 1);

		start[s] = starts[unit];
		end[s] = starts[unit + 1];
		total += end[s] - start[s];
	}
	return total;
}

/* A unit that fits the scratch: each table scatters it there by bucket. */
static void
search_scattered(SimhashSearch *search, int first_table, int end_table, SimhashEntry *entries,
				 int npieces, const Size *start, const Size *end, Size n, int skip)
{
	int			bits = bucket_bits_for(n, search->work.bucket_bits);

	for (int t = first_table; t < end_table; t++)
	{
		uint32		table = search->tables[t];
		SimhashSortBy by = simhash_table_order(search, table);

		/* A table of the pass's block alone has its unit's leading bits equal. */
		by.skip = skip;
		/* Layouts of many tables spend long in one unit: stay cancellable. */
		CHECK_FOR_INTERRUPTS();
		simhash_scatter_pieces(entries, start, end, npieces, &by, bits,
							   search->work.scratch, search->work.bucket_start, search->work.bucket_next);
		for (Size d = 0; d < ((Size) 1 << bits); d++)
		{
			Size		count = search->work.bucket_start[d + 1] - search->work.bucket_start[d];

			if (count > 1)
				scan_bucket(search, table, &by, search->work.scratch + search->work.bucket_start[d], count);
		}
	}
}

/*
 * A unit too big for the scratch (skewed input: many entries share the
 * pass's block): each piece is partitioned in place, and each bucket, in
 * pieces across the stripes, is brought together in the scratch (or, if
 * bigger still, in memory of its own: its comparisons are quadratic anyway).
 */
static void
search_in_place(SimhashSearch *search, int first_table, int end_table, SimhashEntry *entries,
				int npieces, const Size *start, const Size *end, int skip)
{
	int			bits = IN_PLACE_BUCKET_BITS;
	Size		buckets = (Size) 1 << bits;
	Size	   *piece_buckets = palloc(sizeof(Size) * npieces * (buckets + 1));

	for (int t = first_table; t < end_table; t++)
	{
		uint32		table = search->tables[t];
		SimhashSortBy by = simhash_table_order(search, table);

		by.skip = skip;
		CHECK_FOR_INTERRUPTS();
		for (int s = 0; s < npieces; s++)
		{
			Size	   *starts = piece_buckets + s * (buckets + 1);

			simhash_partition_entries(entries + start[s], end[s] - start[s], &by, bits,
									  starts, search->work.bucket_next);
			for (Size d = 0; d <= buckets; d++)
				starts[d] += start[s];
		}
		for (Size d = 0; d < buckets; d++)
		{
			Size		count = 0;
			SimhashEntry *group;

			for (int s = 0; s < npieces; s++)
				count += piece_buckets[s * (buckets + 1) + d + 1] - piece_buckets[s * (buckets + 1) + d];
			if (count < 2)
				continue;
			group = count <= search->work.scratch_rows ? search->work.scratch :
				MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SimhashEntry) * count);
			count = 0;
			for (int s = 0; s < npieces; s++)
			{
				Size		from = piece_buckets[s * (buckets + 1) + d];
				Size		len = piece_buckets[s * (buckets + 1) + d + 1] - from;

				memcpy(group + count, entries + from, sizeof(SimhashEntry) * len);
				count += len;
			}
			scan_bucket(search, table, &by, group, count);
			if (group != search->work.scratch)
				pfree(group);
		}
	}
	pfree(piece_buckets);
}

/*
 * Tables [first_table, end_table) over the n entries of some pieces, whose
 * tables' sort values share their first `skip` bits at most (a unit's).
 */
static void
search_tables(SimhashSearch *search, int first_table, int end_table, SimhashEntry *entries,
			  int npieces, const Size *start, const Size *end, Size n, int skip)
{
	if (n > search->work.scratch_rows)
		search_in_place(search, first_table, end_table, entries, npieces, start, end, skip);
	else if (n > 1)
		search_scattered(search, first_table, end_table, entries, npieces, start, end, n, skip);
}

void
simhash_search_unit(SimhashSearch *search, int pass, const SimhashStripes *stripes, Size unit)
{
	Size	   *start = palloc(sizeof(Size) * stripes->nstripes * 2);
	Size	   *end = start + stripes->nstripes;
	Size		n = unit_pieces(stripes, unit, start, end);

	search_tables(search, search->pass_start[pass], search->pass_start[pass + 1], stripes->entries,
				  stripes->nstripes, start, end, n, stripes->unit_bits);
	pfree(start);
}

void
simhash_compare_group(const SimhashSearch *search, int table, const SimhashEntry *entries, Size n)
{
	compare_group(search, search->tables[table], entries, n);
}

void
simhash_search_table(SimhashSearch *search, int table, SimhashEntry *entries, Size n)
{
	Size		start = 0;

	search_tables(search, table, table + 1, entries, 1, &start, &n, n, 0);
}

uint64
simhash_search_steps(const SimhashSearch *search, const SimhashStripes *stripes)
{
	return (uint64) search->npasses * (stripes->nstripes + simhash_stripes_units(stripes));
}

void
simhash_search_pass(SimhashSearch *search, int pass, SimhashStripes *stripes, uint64 *done,
					uint64 total)
{
	for (int s = 0; s < stripes->nstripes; s++)
	{
		simhash_partition_stripe(search, pass, stripes, s);
		if (done != NULL)
			simhash_progress_at(SIMHASH_STAGE_SEARCH, ++*done, total);
	}
	for (Size u = 0; u < simhash_stripes_units(stripes); u++)
	{
		simhash_search_unit(search, pass, stripes, u);
		if (done != NULL)
			simhash_progress_at(SIMHASH_STAGE_SEARCH, ++*done, total);
	}
}

void
simhash_search_all(SimhashSearch *search, SimhashStripes *stripes)
{
	uint64		total = simhash_search_steps(search, stripes);
	uint64		done = 0;

	for (int pass = 0; pass < search->npasses; pass++)
		simhash_search_pass(search, pass, stripes, &done, total);
}

void
simhash_find_pairs(SimhashEntry *entries, Size n, int k, int blocks, SimhashPairFn emit, void *arg)
{
	SimhashBlocks layout;
	SimhashSearch search;
	SimhashStripes stripes;

	simhash_check_blocks(k, blocks);
	simhash_blocks_init(&layout, blocks);
	simhash_stripes_init(&stripes, entries, n, 1, NULL);
	simhash_search_init(&search, k, &layout, 0, &stripes, emit, arg);
	simhash_search_all(&search, &stripes);
	simhash_search_free(&search);
	pfree(stripes.piece_start);
}

/*
 * Keeps the first entry of each fingerprint in entries[0..count) (sorted by
 * fingerprint first, unless one fingerprint fills it) at the front, joining
 * the others to it; returns how many are kept.
 */
static Size
keep_distinct(SimhashEntry *entries, Size count, SimhashPairFn join, void *arg)
{
	SimhashSortBy by = {.mask = ~UINT64CONST(0)};
	Size		kept = 0;

	if (count > 2)
		simhash_sort_entries(entries, count, &by, SIMHASH64_BITS);
	for (Size i = 0; i < count; i++)
	{
		if (kept > 0 && entries[kept - 1].hash == entries[i].hash)
		{
			uint64		kept_key = entries[kept - 1].key;

			join(arg, Min(kept_key, entries[i].key), Max(kept_key, entries[i].key), 0);
			continue;
		}
		entries[kept++] = entries[i];
	}
	return kept;
}

/*
 * The distinct entries of a unit, written back over its pieces from the
 * first on; returns how many.  Through the scratch by bucket (equal
 * fingerprints share a bucket), or, for a unit too big, sorted in memory of
 * its own (skewed input).
 */
static Size
distinct_unit(SimhashWorkspace *work, const SimhashStripes *stripes, const Size *start,
			  const Size *end, SimhashPairFn join, void *arg)
{
	/* The unit's leading bits are equal throughout: buckets by the next ones. */
	SimhashSortBy by = {.mask = ~UINT64CONST(0), .skip = stripes->unit_bits};
	Size		n = 0;
	Size		kept = 0;
	SimhashEntry *all;

	for (int s = 0; s < stripes->nstripes; s++)
		n += end[s] - start[s];
	if (n <= work->scratch_rows)
	{
		int			bits = bucket_bits_for(n, work->bucket_bits);

		all = work->scratch;
		simhash_scatter_pieces(stripes->entries, start, end, stripes->nstripes, &by, bits,
							   all, work->bucket_start, work->bucket_next);
		for (Size d = 0; d < ((Size) 1 << bits); d++)
		{
			Size		first = work->bucket_start[d];
			Size		count = work->bucket_start[d + 1] - first;

			memmove(all + kept, all + first, sizeof(SimhashEntry) * count);
			kept += keep_distinct(all + kept, count, join, arg);
		}
	}
	else
	{
		all = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SimhashEntry) * n);
		for (int s = 0; s < stripes->nstripes; s++)
		{
			memcpy(all + kept, stripes->entries + start[s], sizeof(SimhashEntry) * (end[s] - start[s]));
			kept += end[s] - start[s];
		}
		kept = keep_distinct(all, n, join, arg);
	}
	/* Back over the unit's own pieces, which it no longer needs. */
	n = 0;
	for (int s = 0; s < stripes->nstripes && n < kept; s++)
	{
		Size		len = Min(end[s] - start[s], kept - n);

		memcpy(stripes->entries + start[s], all + n, sizeof(SimhashEntry) * len);
		n += len;
	}
	if (all != work->scratch)
		pfree(all);
	return kept;
}

/* Whether entries[0..count) has two entries of one key: which, in *key. */
static bool
repeated_key(SimhashEntry *entries, Size count, uint64 *key)
{
	SimhashSortBy by = {.by_key = true};

	if (count > SMALL_BUCKET)
		simhash_sort_entries(entries, count, &by, SIMHASH64_BITS);
	for (Size i = 0; i + 1 < count; i++)
		for (Size j = i + 1; j < (count > SMALL_BUCKET ? i + 2 : count); j++)
			if (entries[i].key == entries[j].key)
			{
				*key = entries[i].key;
				return true;
			}
	return false;
}

bool
simhash_repeated_key(SimhashEntry *entries, Size n, uint64 *key)
{
	/* Units and buckets by the key spread as fingerprints are: ids in order spread too. */
	SimhashSortBy by = {.by_key = true, .key_hashed = true};
	SimhashStripes stripes;
	SimhashWorkspace work;
	Size	   *start;
	Size	   *end;
	bool		found = false;

	simhash_stripes_init(&stripes, entries, n, 1, NULL);
	simhash_workspace_init(&work, &stripes);
	start = palloc(sizeof(Size) * stripes.nstripes * 2);
	end = start + stripes.nstripes;
	for (int s = 0; s < stripes.nstripes; s++)
		partition_stripe_by(&work, &by, &stripes, s);
	by.skip = stripes.unit_bits;
	for (Size u = 0; u < simhash_stripes_units(&stripes) && !found; u++)
	{
		Size		count = unit_pieces(&stripes, u, start, end);
		SimhashEntry *all = work.scratch;

		if (count <= work.scratch_rows)
		{
			int			bits = bucket_bits_for(count, work.bucket_bits);

			simhash_scatter_pieces(entries, start, end, stripes.nstripes, &by, bits, all,
								   work.bucket_start, work.bucket_next);
			for (Size d = 0; d < ((Size) 1 << bits) && !found; d++)
				found = repeated_key(all + work.bucket_start[d],
									 work.bucket_start[d + 1] - work.bucket_start[d], key);
		}
		else
		{
			/* Many rows of one unit: many repeats of one id, or adversarial ids. */
			all = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SimhashEntry) * count);
			count = 0;
			for (int s = 0; s < stripes.nstripes; s++)
			{
				memcpy(all + count, entries + start[s], sizeof(SimhashEntry) * (end[s] - start[s]));
				count += end[s] - start[s];
			}
			found = repeated_key(all, count, key);
			pfree(all);
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(start);
	pfree(stripes.piece_start);
	simhash_workspace_free(&work);
	return found;
}

void
simhash_distinct_partition_stripe(SimhashWorkspace *work, SimhashStripes *stripes, int stripe)
{
	SimhashSortBy by = {.mask = ~UINT64CONST(0)};

	partition_stripe_by(work, &by, stripes, stripe);
}

Size
simhash_distinct_unit(SimhashWorkspace *work, const SimhashStripes *stripes, Size unit,
					  SimhashPairFn join, void *arg)
{
	Size	   *start = palloc(sizeof(Size) * stripes->nstripes * 2);
	Size	   *end = start + stripes->nstripes;
	Size		kept;

	unit_pieces(stripes, unit, start, end);
	kept = distinct_unit(work, stripes, start, end, join, arg);
	pfree(start);
	return kept;
}

Size
simhash_distinct_compact(const SimhashStripes *stripes, const Size *kept)
{
	Size		units = simhash_stripes_units(stripes);
	Size	   *placed = palloc0(sizeof(Size) * units);
	Size		out = 0;

	/*
	 * Each unit's kept entries fill its pieces in stripe order, and
	 * everything moves only towards the front.
	 */
	for (int s = 0; s < stripes->nstripes; s++)
	{
		const Size *starts = stripes->piece_start + s * (units + 1);

		for (Size u = 0; u < units; u++)
		{
			Size		len = Min(starts[u + 1] - starts[u], kept[u] - placed[u]);

			memmove(stripes->entries + out, stripes->entries + starts[u], sizeof(SimhashEntry) * len);
			placed[u] += len;
			out += len;
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(placed);
	return out;
}

Size
simhash_distinct(SimhashEntry *entries, Size n, SimhashPairFn join, void *arg)
{
	SimhashStripes stripes;
	SimhashWorkspace work;
	Size	   *kept;
	Size		out;

	simhash_stripes_init(&stripes, entries, n, 1, NULL);
	simhash_workspace_init(&work, &stripes);
	kept = palloc(sizeof(Size) * simhash_stripes_units(&stripes));
	for (int s = 0; s < stripes.nstripes; s++)
		simhash_distinct_partition_stripe(&work, &stripes, s);
	for (Size u = 0; u < simhash_stripes_units(&stripes); u++)
	{
		kept[u] = simhash_distinct_unit(&work, &stripes, u, join, arg);
		CHECK_FOR_INTERRUPTS();
	}
	out = simhash_distinct_compact(&stripes, kept);
	pfree(kept);
	pfree(stripes.piece_start);
	simhash_workspace_free(&work);
	return out;
}
