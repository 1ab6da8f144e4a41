/*
 * find_all_row_buffer.h — the input of find_all and clusters held in memory: one
 * fingerprint per row, and the row's id for the query variants.
 *
 * Every byte a run will need per row is counted up front against
 * maintenance_work_mem, so an input too big fails with a clear ERROR while
 * it is being read rather than with an out-of-memory kill later.
 */
#ifndef SIMHASH_FIND_ALL_ROW_BUFFER_H
#define SIMHASH_FIND_ALL_ROW_BUFFER_H

#include "simhash.h"

typedef struct SimhashRows
{
	const char *caller;			/* the SQL function, for error messages */
	MemoryContext context;		/* where the arrays live */
	uint64	   *hashes;
	int64	   *ids;			/* when with_ids */
	bool		with_ids;		/* false for bare fingerprints */
	uint32		count;
	uint32		capacity;
	Size		bytes_per_row;	/* the peak a row costs, for the budget */
} SimhashRows;

/*
 * Empty rows in CurrentMemoryContext.  extra_bytes_per_row is what the
 * caller will allocate per row beyond the arrays and simhash_find_pairs().
 */
extern void simhash_rows_init(SimhashRows *rows, const char *caller, bool with_ids,
							  Size extra_bytes_per_row);

/* Makes room for one more row (the slow path of simhash_rows_add). */
extern void simhash_rows_grow(SimhashRows *rows);

static inline void
simhash_rows_add(SimhashRows *rows, int64 id, uint64 hash)
{
	if (rows->count == rows->capacity)
		simhash_rows_grow(rows);
	rows->hashes[rows->count] = hash;
	if (rows->with_ids)
		rows->ids[rows->count] = id;
	rows->count++;
}

/* Orders the rows by id; ERROR if two rows share an id. */
extern void simhash_rows_sort_by_id(SimhashRows *rows);

/* Orders bare fingerprints as unsigned numbers and drops repeats. */
extern void simhash_rows_sort_unique(SimhashRows *rows);

#endif							/* SIMHASH_FIND_ALL_ROW_BUFFER_H */
