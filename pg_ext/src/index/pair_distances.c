/*
 * pair_distances.c — ANALYZE of a simhash64 column (the type's typanalyze,
 * simhash64_analyze) and the estimates read from it.
 *
 * The standard statistics (NULL share, most common values, a histogram of
 * the unsigned order) say nothing of Hamming distance: clusters of near
 * copies look random in any order.  So after the standard statistics,
 * ANALYZE counts the distances between every pair of its sample's non-NULL
 * rows (at most SIMHASH_PAIR_SAMPLE_ROWS of them, the default sample; a
 * larger one is thinned evenly) and stores, for d = 0..64, the share of the
 * pairs within d bits.  That share, plus the row itself, is an unbiased
 * estimate of the share of the table's rows within d bits of a row of it
 * (the estimators read it so: simhash_pair_share), which is what
 * hamming_within(fp, q, k) selects when q is a row or a near copy of one:
 * on clustered data the near copies (for small d), on random data the
 * ball's volume (for large d), with no model of either.  At the default
 * sample the counting takes about 0.25 s of CPU (ANALYZE of a bigint column
 * of 1M rows: 0.06 s).
 *
 * Layer: beside planner_support.c, which reads the share; below it only the
 * type (simhash.h).
 */
#include "index/pair_distances.h"

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

/*
 * The most sample rows whose pairs are counted: ANALYZE's sample at the
 * default statistics target (300 × 100 rows), 4.5e8 pairs.
 */
#define SIMHASH_PAIR_SAMPLE_ROWS 30000

/* What the standard typanalyze set up, restored before its compute runs. */
typedef struct PairDistancesAnalyze
{
	AnalyzeAttrComputeStatsFunc standard_compute;
	void	   *standard_extra_data;
} PairDistancesAnalyze;

/*
 * The sample's non-NULL fingerprints, thinned evenly to at most
 * SIMHASH_PAIR_SAMPLE_ROWS; returns how many.
 */
static int
sample_fingerprints(VacAttrStats *stats, AnalyzeAttrFetchFunc fetchfunc, int samplerows,
					uint64 **out)
{
	uint64	   *all = palloc(sizeof(uint64) * Max(samplerows, 1));
	int			n = 0;

	for (int i = 0; i < samplerows; i++)
	{
		bool		isnull;
		Datum		value = fetchfunc(stats, i, &isnull);

		if (!isnull)
			all[n++] = (uint64) DatumGetSimhash64(value);
	}
	if (n > SIMHASH_PAIR_SAMPLE_ROWS)
	{
		for (int i = 0; i < SIMHASH_PAIR_SAMPLE_ROWS; i++)
			all[i] = all[(int64) i * n / SIMHASH_PAIR_SAMPLE_ROWS];
		n = SIMHASH_PAIR_SAMPLE_ROWS;
	}
	*out = all;
	return n;
}

/* counts[d]: the pairs of fps[0..n) at exactly d bits. */
static void
count_pair_distances(const uint64 *fps, int n, uint64 counts[SIMHASH64_BITS + 1])
{
	/* Four sets of counters, so that consecutive pairs do not wait on one. */
	uint64		lanes[4][SIMHASH64_BITS + 1] = {{0}};

	for (int i = 0; i < n; i++)
	{
		uint64		x = fps[i];
		int			j = i + 1;

		CHECK_FOR_INTERRUPTS();
		simhash_vacuum_delay_point();
		for (; j + 4 <= n; j += 4)
		{
			lanes[0][simhash64_distance(x, fps[j])]++;
			lanes[1][simhash64_distance(x, fps[j + 1])]++;
			lanes[2][simhash64_distance(x, fps[j + 2])]++;
			lanes[3][simhash64_distance(x, fps[j + 3])]++;
		}
		for (; j < n; j++)
			lanes[0][simhash64_distance(x, fps[j])]++;
	}
	for (int d = 0; d <= SIMHASH64_BITS; d++)
		counts[d] = lanes[0][d] + lanes[1][d] + lanes[2][d] + lanes[3][d];
}

/*
 * The standard statistics, then the pair distances in the first free slot
 * (the standard ones take at most three of five).
 */
static void
compute_pair_distances(VacAttrStats *stats, AnalyzeAttrFetchFunc fetchfunc, int samplerows,
					   double totalrows)
{
	PairDistancesAnalyze *setup = (PairDistancesAnalyze *) stats->extra_data;
	uint64		counts[SIMHASH64_BITS + 1];
	uint64	   *fps;
	double		pairs;
	double		within = 0;
	float4	   *shares;
	int			slot = 0;
	int			n;
	MemoryContext old;

	stats->extra_data = setup->standard_extra_data;
	setup->standard_compute(stats, fetchfunc, samplerows, totalrows);
	if (!stats->stats_valid)
		return;
	while (slot < STATISTIC_NUM_SLOTS && stats->stakind[slot] != 0)
		slot++;
	n = sample_fingerprints(stats, fetchfunc, samplerows, &fps);
	if (slot == STATISTIC_NUM_SLOTS || n < 2)
		return;

	count_pair_distances(fps, n, counts);
	pfree(fps);
	pairs = (double) n * (n - 1) / 2;

	old = MemoryContextSwitchTo(stats->anl_context);
	shares = palloc(sizeof(float4) * (SIMHASH64_BITS + 1));
	for (int d = 0; d <= SIMHASH64_BITS; d++)
	{
		within += (double) counts[d];
		shares[d] = (float4) Min(within / pairs, 1.0);
	}
	MemoryContextSwitchTo(old);

	stats->stakind[slot] = SIMHASH_STATISTIC_KIND_PAIR_DISTANCES;
	stats->staop[slot] = InvalidOid;
	stats->stacoll[slot] = InvalidOid;
	stats->stanumbers[slot] = shares;
	stats->numnumbers[slot] = SIMHASH64_BITS + 1;
}

PG_FUNCTION_INFO_V1(simhash64_analyze);
Datum
simhash64_analyze(PG_FUNCTION_ARGS)
{
	VacAttrStats *stats = (VacAttrStats *) PG_GETARG_POINTER(0);
	PairDistancesAnalyze *setup;

	if (stats == NULL || !std_typanalyze(stats))
		PG_RETURN_BOOL(false);
	setup = palloc(sizeof(PairDistancesAnalyze));
	setup->standard_compute = stats->compute_stats;
	setup->standard_extra_data = stats->extra_data;
	stats->compute_stats = compute_pair_distances;
	stats->extra_data = setup;
	PG_RETURN_BOOL(true);
}

/*
 * The shares of a statistics tuple's slot, when they have the shape
 * compute_pair_distances gives them (ANALYZE wrote them; a superuser may
 * write anything): 65 numbers from 0 to 1, never decreasing.
 */
static bool
shares_valid(const AttStatsSlot *slot)
{
	if (slot->nnumbers != SIMHASH64_BITS + 1)
		return false;
	for (int d = 0; d <= SIMHASH64_BITS; d++)
		if (!(slot->numbers[d] >= 0 && slot->numbers[d] <= 1) ||
			(d > 0 && slot->numbers[d] < slot->numbers[d - 1]))
			return false;
	return true;
}

double
simhash_pair_share(VariableStatData *vardata, int radius)
{
	AttStatsSlot slot;
	double		share = -1;

	if (!HeapTupleIsValid(vardata->statsTuple))
		return -1;
	if (!get_attstatsslot(&slot, vardata->statsTuple, SIMHASH_STATISTIC_KIND_PAIR_DISTANCES,
						  InvalidOid, ATTSTATSSLOT_NUMBERS))
		return -1;
	if (shares_valid(&slot))
	{
		Form_pg_statistic stats = (Form_pg_statistic) GETSTRUCT(vardata->statsTuple);
		double		nonnull = 1.0 - stats->stanullfrac;

		double		rows = vardata->rel ? vardata->rel->tuples : 0;

		if (radius < 0)
			share = 0;
		else
			share = Min(slot.numbers[Min(radius, SIMHASH64_BITS)] * Max(Min(nonnull, 1.0), 0.0) +
						(rows >= 1 ? 1 / rows : 0), 1.0);
	}
	free_attstatsslot(&slot);
	return share;
}
