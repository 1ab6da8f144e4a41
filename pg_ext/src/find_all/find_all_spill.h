/*
 * find_all_spill.h — find_all and clusters past maintenance_work_mem: the
 * rows in temporary files (PostgreSQL's BufFile, deleted at the end of the
 * transaction or on an ERROR), and the search done partition by partition.
 *
 * A pass (find_all.h) needs only the entries that share its block's bits
 * at once, so the spilled rows are split by those bits into as many files as
 * it takes for each to fit in memory, and each file is then searched as a
 * whole array would be.  A file still too big (skewed input) is split again
 * by more bits; one whose entries all share the pass's block is split by
 * each table's blocks in turn.
 */
#ifndef SIMHASH_FIND_ALL_SPILL_H
#define SIMHASH_FIND_ALL_SPILL_H

#include "simhash.h"

#include "storage/buffile.h"
#include "storage/sharedfileset.h"

#include "find_all/find_all.h"

/*
 * Entries in a temporary file: written (a batch at a time), rewound, read
 * in bulk into the caller's memory.
 */
typedef struct SimhashEntryFile
{
	BufFile    *file;
	Size		count;			/* entries written */
	Size		position;		/* entries read since the rewind */
	int			used;			/* entries waiting in batch to be written */
	SimhashEntry batch[256];
} SimhashEntryFile;

/*
 * Entry files shared by the processes of a parallel run, by name in its
 * SharedFileSet: created and written by one, exported (flushed and closed),
 * then opened for reading by any.
 */
extern void simhash_entry_file_create_shared(SimhashEntryFile *file, SharedFileSet *fileset,
											 const char *name);
extern void simhash_entry_file_export(SimhashEntryFile *file);
extern void simhash_entry_file_open_shared(SimhashEntryFile *file, SharedFileSet *fileset,
										   const char *name);

/* Keys (ids, for clusters' output) in a temporary file, written then read in order. */
typedef struct SimhashKeyFile
{
	BufFile    *file;
	Size		count;			/* keys written */
	Size		position;		/* keys read into batch since the rewind */
	bool		writing;
	int			used;			/* keys in batch */
	int			next;			/* the next to read from batch */
	uint64		batch[512];
} SimhashKeyFile;

/* A new, empty temporary file of entries. */
extern void simhash_entry_file_create(SimhashEntryFile *file);
extern void simhash_entry_file_write(SimhashEntryFile *file, const SimhashEntry *entries, Size n);

/* Flushes what was written and goes back to the start, for reading. */
extern void simhash_entry_file_rewind(SimhashEntryFile *file);

/* Up to max entries into entries; 0 at the end. */
extern Size simhash_entry_file_read(SimhashEntryFile *file, SimhashEntry *entries, Size max);
extern void simhash_entry_file_close(SimhashEntryFile *file);

extern void simhash_key_file_create(SimhashKeyFile *file);
extern void simhash_key_file_put(SimhashKeyFile *file, uint64 key);
extern void simhash_key_file_rewind(SimhashKeyFile *file);
extern uint64 simhash_key_file_get(SimhashKeyFile *file);
extern void simhash_key_file_close(SimhashKeyFile *file);

/* Defines simhash.debug_spill_rows (from _PG_init). */
extern void simhash_spill_init(void);

/* Whether n rows needing `bytes` fit in memory (maintenance_work_mem, or the debug setting). */
extern bool simhash_spill_fits(Size n, Size bytes);

/*
 * How many entries a spilled run may hold in memory at once, for a budget of
 * bytes: the entries and the search's buffers (simhash_search_fixed_bytes).
 */
extern Size simhash_spill_rows_in_memory(Size budget_bytes, const char *caller);

/* Whether a budget is enough for a spilled search at all (if not, the above is an ERROR). */
extern bool simhash_spill_budget_enough(Size budget_bytes);

/*
 * The pairs within k bits of the n entries of a rewound file, as
 * simhash_find_pairs() finds them, partition by partition in rows_in_memory
 * entries at a time.  Closes the file.
 */
extern void simhash_spill_find_pairs(SimhashEntryFile *input, int k, int blocks, Size rows_in_memory,
									 SimhashPairFn emit, void *arg);

/*
 * The same for one pass only (find_all.h): the pairs whose first table is
 * one of the pass's, for a run whose passes are searched apart
 * (citus/bucket.c).  Closes the file.
 */
extern void simhash_spill_find_pass_pairs(SimhashEntryFile *input, int k, int blocks, int pass,
										  Size rows_in_memory, SimhashPairFn emit, void *arg);

/*
 * simhash_distinct() on a rewound file: a new rewound file with one entry
 * of each fingerprint, the others joined to it.  Closes the input.
 */
extern void simhash_spill_distinct(SimhashEntryFile *input, Size rows_in_memory,
								   SimhashPairFn join, void *arg, SimhashEntryFile *output);

/*
 * One process's spilled search, for the parallel spilled run
 * (find_all_parallel.c) as for the serial one: a search of k bits with the
 * layout of `blocks`, its memory for rows_in_memory entries (total: the
 * rows a pass searches, for progress).
 */
typedef struct SimhashSpill SimhashSpill;

extern SimhashSpill *simhash_spill_begin(int k, int blocks, Size rows_in_memory, Size total,
										 SimhashPairFn emit, void *arg);
extern void simhash_spill_end(SimhashSpill *spill);

/* Whether the search reports its progress itself (the serial run's does). */
extern void simhash_spill_report(SimhashSpill *spill, bool report);
extern int	simhash_spill_passes(const SimhashSpill *spill);
extern SimhashSortBy simhash_spill_pass_order(const SimhashSpill *spill, int pass);

/* The memory a partition is loaded into, and how many entries it holds. */
extern SimhashEntry *simhash_spill_memory(SimhashSpill *spill, Size *capacity);

/* A pass over the n entries loaded into the memory (a whole partition). */
extern void simhash_spill_search_memory(SimhashSpill *spill, int pass, Size n);

/*
 * A pass over a file whose entries share their first bits_used bits of the
 * pass's order (a partition, split again if it does not fit).
 */
extern void simhash_spill_search_file(SimhashSpill *spill, int pass, SimhashEntryFile *file,
									  int bits_used);

/* simhash_distinct() of such a file (by the whole fingerprint), appended to output. */
extern void simhash_spill_distinct_file(SimhashSpill *spill, SimhashEntryFile *file, int bits_used,
										SimhashPairFn join, void *arg, SimhashEntryFile *output);

/*
 * Appends the entries of a file to 2^bits outputs by the leading bits of
 * an order (the partitions of a pass, files the caller made).
 */
extern void simhash_spill_split(SimhashEntryFile *input, const SimhashSortBy *by, int bits,
								SimhashEntryFile *outputs);

#endif							/* SIMHASH_FIND_ALL_SPILL_H */
