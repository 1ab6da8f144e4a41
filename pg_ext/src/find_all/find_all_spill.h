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
 * (find_all_distributed.c).  Closes the file.
 */
extern void simhash_spill_find_pass_pairs(SimhashEntryFile *input, int k, int blocks, int pass,
										  Size rows_in_memory, SimhashPairFn emit, void *arg);

/*
 * simhash_distinct() on a rewound file: a new rewound file with one entry
 * of each fingerprint, the others joined to it.  Closes the input.
 */
extern void simhash_spill_distinct(SimhashEntryFile *input, Size rows_in_memory,
								   SimhashPairFn join, void *arg, SimhashEntryFile *output);

#endif							/* SIMHASH_FIND_ALL_SPILL_H */
