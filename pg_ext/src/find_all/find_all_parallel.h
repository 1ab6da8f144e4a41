/*
 * find_all_parallel.h — simhash_find_all() and simhash_clusters() on several
 * cores: the search of find_all.h run by the backend and parallel workers
 * together, with PostgreSQL's parallel machinery (a ParallelContext, a
 * dynamic shared memory segment, a Barrier, a SharedFileSet).
 */
#ifndef SIMHASH_FIND_ALL_PARALLEL_H
#define SIMHASH_FIND_ALL_PARALLEL_H

#include "simhash.h"

#include "storage/dsm.h"

#include "find_all/find_all.h"
#include "find_all/find_all_spill.h"

/* simhash.find_all_parallel_min_rows: smaller inputs run without workers. */
#define SIMHASH_PARALLEL_MIN_ROWS_DEFAULT 100000

/* A run in shared memory: the entries, and what the processes share. */
typedef struct SimhashParallelRun SimhashParallelRun;

/* Defines the settings (from _PG_init). */
extern void simhash_find_all_parallel_init(void);

/*
 * How many parallel workers a search of n rows gets: `requested` (negative:
 * max_parallel_maintenance_workers), capped by max_parallel_maintenance_workers,
 * and none for small inputs, inside parallel mode, or when the shared memory
 * the run needs is not to be had.
 */
extern int	simhash_parallel_workers(int requested, Size n);

/*
 * How many parallel workers run on n rows whose entries are not in shared
 * memory: a spilled run (its rows in files), or the reading of a table of
 * about n rows (its estimate, before it is read).  As
 * simhash_parallel_workers() without the room for the entries.
 */
extern int	simhash_parallel_allowed_workers(int requested, Size n);

/*
 * A dynamic shared memory segment with room for n entries, returned in
 * *entries, for a run by the backend and up to `workers` parallel workers.
 * An ERROR before simhash_parallel_end() cleans up as any ERROR does.
 */
extern SimhashParallelRun *simhash_parallel_begin(Size n, int workers, SimhashEntry **entries);

/*
 * The pairs of the run's first n entries within k bits, by every process:
 * as simhash_find_pairs(); with distinct_first, of the distinct
 * fingerprints only, the others joined first as simhash_distinct() does
 * (clusters).  emit is called in the backend only, for its own pairs as they
 * come and then for the workers'.  Returns the number of workers launched.
 */
extern int	simhash_parallel_find_pairs(SimhashParallelRun *run, Size n, int k, int blocks,
										bool distinct_first, SimhashPairFn emit, void *arg);

/*
 * Whether n rows are enough for workers (simhash.find_all_parallel_min_rows),
 * for a run begun before its rows were counted.
 */
extern bool simhash_parallel_enough_rows(Size n);

/*
 * Where a run's entries are in its segment, for the processes of another
 * ParallelContext to attach it (dsm_attach) and write them: the segment's
 * handle, and the entries' offset in it; DSM_HANDLE_INVALID if the run has
 * no segment (its entries in the backend's memory, no workers).
 */
extern dsm_handle simhash_parallel_entries_handle(SimhashParallelRun *run, Size *offset);

/*
 * A run past maintenance_work_mem: its rows in temporary files (each
 * process holds rows_in_memory entries at a time), the segment small.
 */
extern SimhashParallelRun *simhash_parallel_begin_spilled(int workers, Size rows_in_memory);

/*
 * simhash_parallel_find_pairs() of a spilled run's rows: the backend splits
 * them (input, rewound; closed) into partitions in the run's shared files,
 * and every process then searches partitions, pass after pass.
 */
extern int	simhash_parallel_spill_find_pairs(SimhashParallelRun *run, SimhashEntryFile *input,
											  int k, int blocks, bool distinct_first,
											  SimhashPairFn emit, void *arg);

/* Ends the run and frees the shared memory. */
extern void simhash_parallel_end(SimhashParallelRun *run);

#endif							/* SIMHASH_FIND_ALL_PARALLEL_H */
