/*
 * find_all_sql.c — simhash_find_all() and simhash_clusters() as SQL
 * functions: reading the rows (from a query, find_all_query.c, or from an
 * array), choosing the blocks, in memory or spilled, with or without
 * parallel workers, and returning the result in a tuplestore
 * (find_all_result.c).  Layer: SQL entry points, the top; nothing calls
 * into it.
 *
 * Each row's key is its id (sign bit flipped), or for the array variants
 * the fingerprint itself, so a pair (key1 < key2) comes out as (smaller,
 * larger) with no further work.
 */
#include "simhash.h"

#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "find_all/clusters.h"
#include "find_all/find_all.h"
#include "find_all/find_all_parallel.h"
#include "find_all/find_all_query.h"
#include "find_all/find_all_result.h"
#include "find_all/find_all_row_buffer.h"
#include "find_all/progress.h"
#include "type/simhash64.h"

typedef enum FindAllInput
{
	FROM_QUERY,					/* rows (id, fingerprint) from SQL text */
	FROM_ARRAY					/* a simhash64[]: distinct fingerprints */
} FindAllInput;

typedef enum FindAllOutput
{
	PAIRS,						/* (id1, id2, distance) */
	CLUSTERS					/* (id, cluster_id) */
} FindAllOutput;

static void
put_pair(void *arg, uint64 key1, uint64 key2, int distance)
{
	SimhashResultSink *sink = arg;

	simhash_result_put(sink, simhash_result_value(sink, key1), simhash_result_value(sink, key2),
					   distance);
}

static void
read_array(ArrayType *array, SimhashRows *rows)
{
	ArrayIterator iterator = array_create_iterator(array, 0, NULL);
	Datum		value;
	bool		isnull;

	while (array_iterate(iterator, &value, &isnull))
		if (!isnull)
			simhash_rows_add(rows, DatumGetSimhash64(value), DatumGetSimhash64(value));
	array_free_iterator(iterator);
}

/*
 * The clusters' rows: each row in a cluster of two or more (or every row,
 * with include_singletons) with the smallest key of its cluster.  keys holds
 * each row's key, in row order; two passes over it: the smallest key of
 * each cluster, then the rows.
 */
static void
put_clusters(SimhashResultSink *sink, SimhashClusters *clusters, SimhashKeyFile *keys,
			 bool include_singletons)
{
	uint64	   *smallest = MemoryContextAllocHuge(CurrentMemoryContext,
												  sizeof(uint64) * Max(clusters->nclusters, 1));

	simhash_progress_at(SIMHASH_STAGE_OUTPUT, 0, 2 * clusters->n);
	for (uint32 c = 0; c < clusters->nclusters; c++)
		smallest[c] = PG_UINT64_MAX;
	simhash_key_file_rewind(keys);
	for (Size row = 0; row < clusters->n; row++)
	{
		uint64		key = simhash_key_file_get(keys);
		uint32		cluster = clusters->leader[row];

		if (cluster != SIMHASH_CLUSTER_NONE)
			smallest[cluster] = Min(smallest[cluster], key);
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(row);
	}
	simhash_key_file_rewind(keys);
	for (Size row = 0; row < clusters->n; row++)
	{
		uint64		key = simhash_key_file_get(keys);
		uint32		cluster = clusters->leader[row];

		if (cluster != SIMHASH_CLUSTER_NONE)
			simhash_result_put(sink, simhash_result_value(sink, key),
							   simhash_result_value(sink, smallest[cluster]), 0);
		else if (include_singletons)
			simhash_result_put(sink, simhash_result_value(sink, key), simhash_result_value(sink, key), 0);
		if ((row & SIMHASH_INTERRUPT_EVERY_MASK) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			simhash_progress_at(SIMHASH_STAGE_OUTPUT, clusters->n + row, 2 * clusters->n);
		}
	}
	simhash_key_file_close(keys);
	pfree(smallest);
}

/* Clusters of entries in memory: their keys to a file, row numbers in their place. */
static void
clusters_in_memory(SimhashResultSink *sink, SimhashEntry *entries, Size n, int k, int blocks,
				   SimhashParallelRun *run, bool include_singletons)
{
	SimhashClusters clusters;
	SimhashKeyFile keys;

	simhash_key_file_create(&keys);
	for (Size row = 0; row < n; row++)
	{
		simhash_key_file_put(&keys, entries[row].key);
		entries[row].key = row;
	}
	simhash_find_clusters(entries, n, k, blocks, run, &clusters);
	put_clusters(sink, &clusters, &keys, include_singletons);
}

/*
 * The memory of each process of a spilled run of `processes` processes,
 * in rows, once `used` bytes of the budget are taken.
 */
static Size
spill_rows_per_process(Size used, int processes, const char *caller)
{
	Size		budget = (Size) maintenance_work_mem * 1024;

	return simhash_spill_rows_in_memory((budget > used ? budget - used : 0) / processes, caller);
}

/*
 * The pairs of spilled rows (a rewound file, closed here), by the backend
 * alone or with workers.
 */
static void
spilled_pairs(SimhashEntryFile *input, int k, int blocks, int workers, Size used, bool distinct_first,
			  SimhashPairFn emit, void *arg, const char *caller)
{
	SimhashParallelRun *run;
	Size		budget = (Size) maintenance_work_mem * 1024;

	/* Each process needs its own share of the budget: fewer workers if it is short. */
	while (workers > 0 && !simhash_spill_budget_enough((budget > used ? budget - used : 0) / (workers + 1)))
		workers--;
	if (workers == 0)
	{
		Size		rows_in_memory = spill_rows_per_process(used, 1, caller);

		if (distinct_first)
		{
			SimhashEntryFile distinct;

			simhash_spill_distinct(input, rows_in_memory, emit, arg, &distinct);
			simhash_progress_at(SIMHASH_STAGE_SEARCH, 0, 0);
			simhash_spill_find_pairs(&distinct, k, blocks, rows_in_memory, emit, arg);
		}
		else
			simhash_spill_find_pairs(input, k, blocks, rows_in_memory, emit, arg);
		return;
	}
	run = simhash_parallel_begin_spilled(workers, spill_rows_per_process(used, workers + 1, caller));
	simhash_parallel_spill_find_pairs(run, input, k, blocks, distinct_first, emit, arg);
	simhash_parallel_end(run);
}

/*
 * Clusters of spilled rows: row numbers in read order (the keys to a file),
 * the union-find arrays in memory, the distinct fingerprints and the search
 * through temporary files.
 */
static void
clusters_spilled(SimhashResultSink *sink, SimhashRows *rows, int k, int blocks, int workers,
				 bool include_singletons)
{
	SimhashClusters clusters;
	SimhashKeyFile keys;
	SimhashEntryFile numbered;
	SimhashEntry *buffer = palloc(sizeof(SimhashEntry) * SIMHASH_ROWS_CHUNK);
	Size		row = 0;
	Size		got;

	simhash_clusters_init(&clusters, rows->count);
	simhash_key_file_create(&keys);
	simhash_entry_file_create(&numbered);
	while ((got = simhash_entry_file_read(rows->spill, buffer, SIMHASH_ROWS_CHUNK)) > 0)
	{
		for (Size i = 0; i < got; i++)
		{
			simhash_key_file_put(&keys, buffer[i].key);
			buffer[i].key = row++;
		}
		simhash_entry_file_write(&numbered, buffer, got);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buffer);
	simhash_entry_file_close(rows->spill);
	simhash_entry_file_rewind(&numbered);
	spilled_pairs(&numbered, k, blocks, workers, rows->count * SIMHASH_CLUSTERS_BYTES_PER_ROW, true,
				  simhash_clusters_join, &clusters, rows->caller);
	simhash_clusters_rank(&clusters);
	put_clusters(sink, &clusters, &keys, include_singletons);
}

/* The entries of the rows: in shared memory for a parallel run, else local. */
static SimhashEntry *
entries_for(SimhashRows *rows, int workers, SimhashParallelRun **run)
{
	SimhashEntry *entries;

	*run = NULL;
	if (workers > 0)
		*run = simhash_parallel_begin(rows->count, workers, &entries);
	else
		entries = MemoryContextAllocHuge(CurrentMemoryContext,
										 sizeof(SimhashEntry) * Max(rows->count, 1));
	simhash_rows_gather(rows, entries);
	return entries;
}

/* blocks as asked, or (0) as the cost model chooses for n rows. */
static int
blocks_for(int blocks, int k, Size n)
{
	return blocks > 0 ? blocks : simhash_choose_blocks(k, n);
}

/* find_all or clusters of rows past maintenance_work_mem. */
static void
run_spilled(SimhashResultSink *sink, SimhashRows *rows, int k, int blocks, int workers,
			FindAllOutput output, bool include_singletons)
{
	blocks = blocks_for(blocks, k, rows->count);
	workers = simhash_parallel_allowed_workers(workers, rows->count);
	simhash_rows_finish_spill(rows);
	simhash_spill_unique_ids(rows);
	if (output == CLUSTERS)
		clusters_spilled(sink, rows, k, blocks, workers, include_singletons);
	else
	{
		simhash_progress_at(SIMHASH_STAGE_SEARCH, 0, 0);
		spilled_pairs(rows->spill, k, blocks, workers, 0, false, put_pair, sink, rows->caller);
	}
}

/* find_all or clusters of rows in memory, with parallel workers if they pay. */
static void
run_in_memory(SimhashResultSink *sink, SimhashRows *rows, FindAllInput input, int k, int blocks,
			  int workers, FindAllOutput output, bool include_singletons)
{
	Size		n = rows->count;
	SimhashParallelRun *run;
	SimhashEntry *entries;

	if (rows->placed_run != NULL)
	{
		/* Read into a run's shared memory, the ids checked (find_all_read.c). */
		run = rows->placed_run;
		entries = rows->placed_entries;
		rows->placed_run = NULL;
		if (!simhash_parallel_enough_rows(n))
		{
			/* Fewer rows than the table's estimate, too few for workers. */
			SimhashEntry *local = MemoryContextAllocHuge(CurrentMemoryContext,
														 sizeof(SimhashEntry) * Max(n, 1));

			memcpy(local, entries, sizeof(SimhashEntry) * n);
			simhash_parallel_end(run);
			run = NULL;
			entries = local;
		}
	}
	else
	{
		/* The array variants are PARALLEL SAFE, so they may run in a worker themselves. */
		workers = input == FROM_QUERY ? simhash_parallel_workers(workers, n) : 0;
		entries = entries_for(rows, workers, &run);
		if (input == FROM_QUERY)
			simhash_entries_unique_ids(entries, n, rows->keys_increasing, rows->caller);
		else
			n = simhash_entries_unique_keys(entries, n, rows->keys_increasing);
	}
	blocks = blocks_for(blocks, k, n);
	if (output == CLUSTERS)
		clusters_in_memory(sink, entries, n, k, blocks, run, include_singletons);
	else
	{
		simhash_progress_at(SIMHASH_STAGE_SEARCH, 0, 0);
		if (run != NULL)
			simhash_parallel_find_pairs(run, n, k, blocks, false, put_pair, sink);
		else
			simhash_find_pairs(entries, n, k, blocks, put_pair, sink);
	}
	if (run != NULL)
		simhash_parallel_end(run);
}

/*
 * The body of all four functions.  Like a STRICT function a NULL argument
 * gives no rows, except blocks, where NULL asks for the fastest choice.
 */
/* The arguments of simhash_find_all and simhash_clusters, by position. */
#define ARG_INPUT 0				/* SQL text or simhash64[] */
#define ARG_MAX_DISTANCE 1
#define ARG_BLOCKS 2			/* NULL: the function chooses */
#define ARG_INCLUDE_SINGLETONS 3	/* simhash_clusters only */
/* workers: last, from 1.2 on (NULL: max_parallel_maintenance_workers) */

/* The workers argument, when the function's SQL declaration has one. */
static int
requested_workers(FunctionCallInfo fcinfo, int position)
{
	int			workers;

	if (PG_NARGS() <= position || PG_ARGISNULL(position))
		return -1;
	workers = PG_GETARG_INT32(position);
	if (workers < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("workers must be 0 or more, got %d", workers),
				errhint("Leave workers NULL to use max_parallel_maintenance_workers."));
	return workers;
}

static Datum
run_find_all(FunctionCallInfo fcinfo, const char *caller, FindAllInput input, FindAllOutput output)
{
	int			nargs = output == CLUSTERS ? ARG_INCLUDE_SINGLETONS + 1 : ARG_BLOCKS + 1;
	SimhashResultSink sink;
	SimhashRows rows;
	int			workers;
	bool		include_singletons;
	Size		rows_read;
	MemoryContext work;
	MemoryContext old;
	int			k;
	int			blocks;				/* 0: the cost model chooses */

	simhash_result_init(fcinfo, &sink);
	for (int i = 0; i < nargs; i++)
		if (i != ARG_BLOCKS && PG_ARGISNULL(i))
			return (Datum) 0;
	k = PG_GETARG_INT32(ARG_MAX_DISTANCE);
	blocks = PG_ARGISNULL(ARG_BLOCKS) ? 0 : PG_GETARG_INT32(ARG_BLOCKS);
	if (blocks == 0)
		simhash_check_distance(k);
	else
		simhash_check_blocks(k, blocks);
	workers = requested_workers(fcinfo, nargs);
	include_singletons = output == CLUSTERS && PG_GETARG_BOOL(ARG_INCLUDE_SINGLETONS);

	simhash_progress_begin(caller);
	/* The big arrays go as soon as the result is out. */
	work = AllocSetContextCreate(CurrentMemoryContext, "simhash find_all", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	/* Arrays are at most 1 GB, and immutable functions write no files: no spilling. */
	simhash_rows_init(&rows, caller, output == CLUSTERS ? SIMHASH_CLUSTERS_BYTES_PER_ROW : 0,
					  input == FROM_QUERY);
	sink.keys_are_ids = input == FROM_QUERY;
	if (input == FROM_QUERY)
		simhash_read_query_rows(PG_GETARG_TEXT_PP(ARG_INPUT), simhash_type_oid(fcinfo), workers, &rows);
	else
		read_array(PG_GETARG_ARRAYTYPE_P(ARG_INPUT), &rows);
	rows_read = rows.count;
	simhash_progress_at(SIMHASH_STAGE_PREPARE, 0, 0);
	if (rows.spill != NULL)
		run_spilled(&sink, &rows, k, blocks, workers, output, include_singletons);
	else
		run_in_memory(&sink, &rows, input, k, blocks, workers, output, include_singletons);
	simhash_progress_end(rows_read, sink.count);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_find_all_query);
Datum
simhash_find_all_query(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_find_all", FROM_QUERY, PAIRS);
}

PG_FUNCTION_INFO_V1(simhash_find_all_array);
Datum
simhash_find_all_array(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_find_all", FROM_ARRAY, PAIRS);
}

PG_FUNCTION_INFO_V1(simhash_clusters_query);
Datum
simhash_clusters_query(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_clusters", FROM_QUERY, CLUSTERS);
}

PG_FUNCTION_INFO_V1(simhash_clusters_array);
Datum
simhash_clusters_array(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_clusters", FROM_ARRAY, CLUSTERS);
}
