/*
 * find_all_row_buffer.h — the input of find_all and clusters as it is read:
 * entries (entry_sort.h) in chunks of a fixed size, so that growing never
 * copies, then gathered into the one array the search sorts in place.
 *
 * Every byte a run will need per row is counted against
 * maintenance_work_mem as rows arrive, so an input too big fails with a
 * clear ERROR while it is being read rather than with an out-of-memory kill
 * later.
 */
#ifndef SIMHASH_FIND_ALL_ROW_BUFFER_H
#define SIMHASH_FIND_ALL_ROW_BUFFER_H

#include "simhash.h"

#include "catalog/pg_type.h"

#include "find_all/entry_sort.h"
#include "find_all/find_all_spill.h"

/* Rows per chunk (1 MB). */
#define SIMHASH_ROWS_CHUNK 65536

/* Flips the sign bit: unsigned order of the result is the signed order of ids. */
#define SIMHASH_KEY_OF_ID(id) ((uint64) (id) ^ (UINT64CONST(1) << 63))
#define SIMHASH_ID_OF_KEY(key) ((int64) ((key) ^ (UINT64CONST(1) << 63)))

/* An id of type smallint, integer or bigint. */
static inline int64
simhash_id_datum(Datum value, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

struct SimhashParallelRun;

typedef struct SimhashRows
{
	const char *caller;			/* the SQL function, for error messages */
	MemoryContext context;		/* where the chunks live */
	SimhashEntry **chunks;
	int			nchunks;
	int			maxchunks;
	Size		count;
	Size		bytes_per_row;	/* the peak a row costs, for the budget */
	bool		keys_increasing;	/* every key so far above the one before */
	uint64		last_key;
	bool		may_spill;		/* past the budget: to a file, not an ERROR */
	SimhashEntryFile *spill;	/* once spilled: rows [0, spilled) are there */
	Size		spilled;

	/*
	 * Rows read by parallel workers straight into a parallel run's shared
	 * memory (find_all_read.c): count entries there, their ids checked, and
	 * no chunks.  The run is the caller's to search and end.
	 */
	struct SimhashParallelRun *placed_run;
	SimhashEntry *placed_entries;
} SimhashRows;

/*
 * Empty rows in CurrentMemoryContext.  extra_bytes_per_row is what the
 * caller will allocate per row beyond the entries (and the search's share,
 * counted here).  Past maintenance_work_mem, rows that may_spill go to a
 * temporary file (simhash_rows_finish_spill); others are an ERROR.
 */
extern void simhash_rows_init(SimhashRows *rows, const char *caller, Size extra_bytes_per_row,
							  bool may_spill);

/* Whether n rows fit the budget in memory, with the search's own buffers. */
extern bool simhash_rows_fit(const SimhashRows *rows, uint64 n);

/* Makes room for one more row (the slow path of simhash_rows_add). */
extern void simhash_rows_grow(SimhashRows *rows);

static inline void
simhash_rows_add(SimhashRows *rows, uint64 key, uint64 hash)
{
	SimhashEntry *entry;

	Size		in_memory = rows->count - rows->spilled;

	if (in_memory == (Size) rows->nchunks * SIMHASH_ROWS_CHUNK)
	{
		simhash_rows_grow(rows);
		in_memory = rows->count - rows->spilled;
	}
	entry = &rows->chunks[in_memory / SIMHASH_ROWS_CHUNK][in_memory % SIMHASH_ROWS_CHUNK];
	if (rows->count > 0 && rows->last_key >= key)
		rows->keys_increasing = false;
	rows->last_key = key;
	entry->hash = hash;
	entry->key = key;
	rows->count++;
}

/* Once spilled: the last rows to the file too, rewound for reading (all count rows). */
extern void simhash_rows_finish_spill(SimhashRows *rows);

/*
 * Moves the rows into entries[0..count), freeing the chunks as it goes, so
 * the peak is one chunk above the entries themselves.
 */
extern void simhash_rows_gather(SimhashRows *rows, SimhashEntry *entries);

/* A new array of count entries with the rows, in CurrentMemoryContext. */
extern SimhashEntry *simhash_rows_to_array(SimhashRows *rows);

/* ERROR if two rows of the spilled rows share a key (an id), with PostgreSQL's external sort. */
extern void simhash_spill_unique_ids(SimhashRows *rows);

/* The ERROR of an id that more than one row has. */
simhash_noreturn extern void simhash_duplicate_id_error(const char *caller, int64 id);

/* The ERROR of a NULL id among the rows. */
simhash_noreturn extern void simhash_null_id_error(const char *caller);

/* ERROR if two entries share a key (an id), unless ordered (keys increasing); reorders them. */
extern void simhash_entries_unique_ids(SimhashEntry *entries, Size n, bool ordered,
									   const char *caller);

/* Orders entries by key, unless already so, and drops repeated keys; returns how many are left. */
extern Size simhash_entries_unique_keys(SimhashEntry *entries, Size n, bool ordered);

#endif							/* SIMHASH_FIND_ALL_ROW_BUFFER_H */
