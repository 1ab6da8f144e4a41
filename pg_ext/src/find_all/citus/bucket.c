/*
 * bucket.c — the SQL functions each bucket's node runs for
 * simhash_find_all_distributed() and simhash_clusters_distributed()
 * (docs/citus.md): every pass of the bucket's rows searched, its pairs (or
 * its clusters' edges) packed back (simhash_find_all_batches,
 * simhash_clusters_batches).  Layer: SQL entry points, the top of citus/.
 */
#include "simhash.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "find_all/citus/batches.h"
#include "find_all/citus/results.h"
#include "find_all/clusters.h"
#include "find_all/find_all_spill.h"
#include "find_all/progress.h"

/* A pair, or an edge of clusters, between the ids of two keys: a SimhashPairFn. */
static void
put_edge(void *arg, uint64 key1, uint64 key2, int distance)
{
	simhash_pairs_put(arg, SIMHASH_ID_OF_KEY(key1), SIMHASH_ID_OF_KEY(key2), distance);
}

/* Joins nothing: equal fingerprints are joined by pass 0 alone. */
static void
join_nothing(void *arg, uint64 key1, uint64 key2, int distance)
{
}

/*
 * Clusters of one pass in memory: each row of a component of two or more
 * among this pass's pairs (but the component's first row), with the id of
 * the first row: the coordinator joins the components of every pass and
 * bucket.
 */
static void
pass_clusters(SimhashPairBatches *out, SimhashEntry *entries, Size n, int k, int64 total, int pass)
{
	SimhashClusters clusters;
	SimhashSearch search;
	SimhashStripes stripes;
	int64	   *ids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(n, 1));
	Size		ndistinct;
	uint64		done = 0;

	for (Size row = 0; row < n; row++)
	{
		ids[row] = SIMHASH_ID_OF_KEY(entries[row].key);
		entries[row].key = row;
	}
	simhash_clusters_init(&clusters, n);
	/* Equal fingerprints share every block: pass 0 of their bucket joins them. */
	ndistinct = simhash_distinct(entries, n, pass == 0 ? simhash_clusters_join : join_nothing, &clusters);
	simhash_citus_passes(k, total, &search, &stripes, entries, ndistinct, simhash_clusters_join, &clusters);
	simhash_search_pass(&search, pass, &stripes, &done, 0);
	simhash_resolve_roots(clusters.leader, n);
	/* Each member to its component's root: the root is in the edges of its members. */
	for (Size row = 0; row < n; row++)
		if (clusters.leader[row] != row)
			simhash_pairs_put(out, ids[row], ids[clusters.leader[row]], 0);
}

/* The pairs, or the clusters' edges, of one pass whose entries are in memory. */
static void
search_entries(SimhashPairBatches *out, SimhashEntry *entries, Size n, int k, int64 total, int pass,
			   bool clusters)
{
	if (clusters)
		pass_clusters(out, entries, n, k, total, pass);
	else
	{
		SimhashSearch search;
		SimhashStripes stripes;
		uint64		done = 0;

		simhash_citus_passes(k, total, &search, &stripes, entries, n, put_edge, out);
		simhash_search_pass(&search, pass, &stripes, &done, 0);
		simhash_search_free(&search);
		pfree(stripes.piece_start);
	}
}

/*
 * One pass of a bucket: its pairs, or its clusters' edges.  Rows past
 * maintenance_work_mem are searched through temporary files; for clusters
 * every pair between their distinct fingerprints is then an edge, and equal
 * fingerprints are joined to one of them.
 */
static void
search_pass(SimhashPairBatches *out, SimhashRows *rows, int k, int64 total, int blocks, int pass,
			bool clusters)
{
	if (rows->spill != NULL)
	{
		Size		rows_in_memory = simhash_spill_rows_in_memory((Size) maintenance_work_mem * 1024,
																  rows->caller);
		SimhashEntryFile *input = rows->spill;
		SimhashEntryFile distinct;

		simhash_rows_finish_spill(rows);
		if (clusters)
		{
			simhash_spill_distinct(input, rows_in_memory, pass == 0 ? put_edge : join_nothing, out,
								   &distinct);
			input = &distinct;
		}
		simhash_spill_find_pass_pairs(input, k, blocks, pass, rows_in_memory, put_edge, out);
	}
	else
	{
		Size		n = rows->count;

		search_entries(out, simhash_rows_to_array(rows), n, k, total, pass, clusters);
	}
}

/*
 * Every pass of a bucket, read at once, searched one at a time: from its
 * files when they can be read directly (ARG_RESULTS), else from the query.
 */
static Datum
search_bucket(FunctionCallInfo fcinfo, const char *caller, bool clusters)
{
	SimhashPairBatches out;
	SimhashSearch passes;
	SimhashStripes none;
	SimhashRows *rows;
	SimhashPassArray *arrays;
	MemoryContext work;
	MemoryContext old;
	MemoryContext *pass_context;
	/* What a row of a pass costs in memory, searched (find_all_row_buffer.h, clusters.h). */
	Size		per_row = sizeof(SimhashEntry) + sizeof(SimhashEntry) / 8 +
		(clusters ? SIMHASH_CLUSTERS_BYTES_PER_ROW + sizeof(int64) : 0);
	uint64		read = 0;
	int			k;
	int64		total;

	simhash_pairs_init(fcinfo, &out);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		return (Datum) 0;
	k = PG_GETARG_INT32(1);
	total = PG_GETARG_INT64(2);
	simhash_progress_begin(caller);
	work = AllocSetContextCreate(CurrentMemoryContext, "simhash bucket", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	simhash_citus_passes(k, total, &passes, &none, NULL, 0, NULL, NULL);
	arrays = palloc0(sizeof(SimhashPassArray) * passes.npasses);
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
		simhash_require_citus(clusters ? "simhash_clusters_batches with results" : "simhash_find_all_batches with results");
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3) &&
		simhash_read_result_files(PG_GETARG_ARRAYTYPE_P(3), passes.npasses, per_row, arrays))
	{
		for (int pass = 0; pass < passes.npasses; pass++)
		{
			read += arrays[pass].n;
			search_entries(&out, arrays[pass].entries, arrays[pass].n, k, total, pass, clusters);
			pfree(arrays[pass].entries);
		}
		simhash_pairs_flush(&out);
		simhash_progress_end(read / passes.npasses, out.pairs);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(work);
		return (Datum) 0;
	}
	rows = palloc(sizeof(SimhashRows) * passes.npasses);
	pass_context = palloc(sizeof(MemoryContext) * passes.npasses);
	for (int pass = 0; pass < passes.npasses; pass++)
	{
		pass_context[pass] = AllocSetContextCreate(work, "simhash pass", ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(pass_context[pass]);
		/*
		 * The passes are in memory together: each counts the others' rows
		 * as its own (about as many), so that all fit the budget.
		 */
		simhash_rows_init(&rows[pass], caller, passes.npasses * per_row - sizeof(SimhashEntry) -
						  sizeof(SimhashEntry) / 8, true);
	}
	MemoryContextSwitchTo(work);
	simhash_read_batches(PG_GETARG_TEXT_PP(0), caller, passes.npasses, rows);
	for (int pass = 0; pass < passes.npasses; pass++)
	{
		read += rows[pass].count;
		MemoryContextSwitchTo(pass_context[pass]);
		search_pass(&out, &rows[pass], k, total, passes.layout.nblocks, pass, clusters);
		MemoryContextSwitchTo(work);
		MemoryContextDelete(pass_context[pass]);
	}
	simhash_pairs_flush(&out);
	simhash_progress_end(read / passes.npasses, out.pairs);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}

/*
 * simhash_find_all_batches(sql, max_distance, rows): the pairs among the
 * entries of the (part, batch) rows of a bucket that the query returns, each
 * pass's from its part (part mod passes).
 */
PG_FUNCTION_INFO_V1(simhash_find_all_batches);
Datum
simhash_find_all_batches(PG_FUNCTION_ARGS)
{
	return search_bucket(fcinfo, "simhash_find_all_distributed", false);
}

/* simhash_clusters_batches(sql, max_distance, rows): the same as edges (id, id of its component). */
PG_FUNCTION_INFO_V1(simhash_clusters_batches);
Datum
simhash_clusters_batches(PG_FUNCTION_ARGS)
{
	return search_bucket(fcinfo, "simhash_clusters_distributed", true);
}
