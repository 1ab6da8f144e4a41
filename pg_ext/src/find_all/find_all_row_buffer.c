/*
 * find_all_row_buffer.c — the row buffer of a find_all or clusters run
 * (find_all_row_buffer.h), and the errors of ids (NULL, repeated).  Layer:
 * reading, the bottom: on the engine (its memory budget, spill files).
 */
#include "find_all/find_all_row_buffer.h"

#include "find_all/find_all.h"

#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"

#define FIRST_MAX_CHUNKS 16

void
simhash_rows_init(SimhashRows *rows, const char *caller, Size extra_bytes_per_row, bool may_spill)
{
	rows->caller = caller;
	rows->context = CurrentMemoryContext;
	rows->chunks = NULL;
	rows->nchunks = 0;
	rows->maxchunks = 0;
	rows->count = 0;
	rows->keys_increasing = true;
	rows->last_key = 0;
	/* The entry, and its share of the stripes' buffers (find_all.c). */
	rows->bytes_per_row = sizeof(SimhashEntry) + sizeof(SimhashEntry) / 8 + extra_bytes_per_row;
	rows->may_spill = may_spill;
	rows->spill = NULL;
	rows->spilled = 0;
	rows->placed_run = NULL;
	rows->placed_entries = NULL;
}

/* Whether n rows fit the budget in memory, with the search's own buffers. */
static bool
within_budget(const SimhashRows *rows, uint64 n)
{
	return simhash_spill_fits(n, n * rows->bytes_per_row + simhash_search_fixed_bytes(n));
}

bool
simhash_rows_fit(const SimhashRows *rows, uint64 n)
{
	return within_budget(rows, n);
}

/* ERROR if n rows would need more than the budget. */
static void
check_budget(const SimhashRows *rows, uint64 n)
{
	if (!within_budget(rows, n))
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s: the input does not fit in maintenance_work_mem", rows->caller),
				errdetail("It has at least " UINT64_FORMAT " rows of %zu bytes each; maintenance_work_mem is %d kB.",
						  n, rows->bytes_per_row, maintenance_work_mem),
				errhint("Raise maintenance_work_mem; a million rows need %zu MB.",
						(rows->bytes_per_row * 1000000 + (1 << 20) - 1) >> 20));
}

/* Writes the chunks to the spill file and keeps the first as the one buffer. */
static void
spill_chunks(SimhashRows *rows)
{
	MemoryContext old = MemoryContextSwitchTo(rows->context);

	if (rows->spill == NULL)
	{
		rows->spill = palloc(sizeof(SimhashEntryFile));
		simhash_entry_file_create(rows->spill);
	}
	for (int c = 0; c < rows->nchunks; c++)
	{
		Size		first = rows->spilled + (Size) c * SIMHASH_ROWS_CHUNK;

		simhash_entry_file_write(rows->spill, rows->chunks[c],
								 Min(rows->count - first, SIMHASH_ROWS_CHUNK));
		if (c > 0)
			pfree(rows->chunks[c]);
	}
	rows->spilled = rows->count;
	rows->nchunks = 1;
	MemoryContextSwitchTo(old);
}

/* One more chunk of memory. */
static void
add_chunk(SimhashRows *rows)
{
	if (rows->nchunks == rows->maxchunks)
	{
		int			max = Max(rows->maxchunks * 2, FIRST_MAX_CHUNKS);

		rows->chunks = rows->chunks == NULL ?
			MemoryContextAlloc(rows->context, sizeof(SimhashEntry *) * max) :
			repalloc_huge(rows->chunks, sizeof(SimhashEntry *) * max);
		rows->maxchunks = max;
	}
	rows->chunks[rows->nchunks++] =
		MemoryContextAllocHuge(rows->context, sizeof(SimhashEntry) * SIMHASH_ROWS_CHUNK);
}

void
simhash_rows_grow(SimhashRows *rows)
{
	if (rows->spill != NULL || (rows->may_spill && !within_budget(rows, rows->count + 1)))
	{
		/* Spilling: the one chunk goes to the file whenever it is full. */
		if (rows->nchunks == 0)
			add_chunk(rows);
		spill_chunks(rows);
		return;
	}
	/* The rows of the new chunk count as soon as the first of them. */
	check_budget(rows, rows->count + 1);
	add_chunk(rows);
}

void
simhash_rows_finish_spill(SimhashRows *rows)
{
	Assert(rows->spill != NULL);
	spill_chunks(rows);
	pfree(rows->chunks[0]);
	pfree(rows->chunks);
	rows->chunks = NULL;
	rows->nchunks = rows->maxchunks = 0;
	simhash_entry_file_rewind(rows->spill);
}

void
simhash_rows_gather(SimhashRows *rows, SimhashEntry *entries)
{
	Assert(rows->spill == NULL);
	for (int c = 0; c < rows->nchunks; c++)
	{
		Size		first = (Size) c * SIMHASH_ROWS_CHUNK;

		memcpy(entries + first, rows->chunks[c],
			   sizeof(SimhashEntry) * Min(rows->count - first, SIMHASH_ROWS_CHUNK));
		pfree(rows->chunks[c]);
	}
	if (rows->chunks != NULL)
		pfree(rows->chunks);
	rows->chunks = NULL;
	rows->nchunks = rows->maxchunks = 0;
}

SimhashEntry *
simhash_rows_to_array(SimhashRows *rows)
{
	SimhashEntry *entries = MemoryContextAllocHuge(CurrentMemoryContext,
												   sizeof(SimhashEntry) * Max(rows->count, 1));

	simhash_rows_gather(rows, entries);
	return entries;
}

void
simhash_duplicate_id_error(const char *caller, int64 id)
{
	ereport(ERROR,
			errcode(ERRCODE_UNIQUE_VIOLATION),
			errmsg("%s: the query returned id " INT64_FORMAT " more than once", caller, id),
			errhint("Each row needs its own id; for several fingerprints per "
					"document, number the rows and map them back."));
}

void
simhash_null_id_error(const char *caller)
{
	ereport(ERROR,
			errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			errmsg("%s: the query returned a NULL id", caller));
}

void
simhash_spill_unique_ids(SimhashRows *rows)
{
	Tuplesortstate *sort;
	SimhashEntry *buffer;
	Size		got;
	Datum		value;
	bool		isnull;
	bool		first = true;
	int64		previous = 0;

	if (rows->keys_increasing)
		return;
	sort = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid, false,
								 maintenance_work_mem, NULL, 0);
	buffer = palloc(sizeof(SimhashEntry) * SIMHASH_ROWS_CHUNK);
	while ((got = simhash_entry_file_read(rows->spill, buffer, SIMHASH_ROWS_CHUNK)) > 0)
		for (Size i = 0; i < got; i++)
			tuplesort_putdatum(sort, Int64GetDatum(SIMHASH_ID_OF_KEY(buffer[i].key)), false);
	pfree(buffer);
	simhash_entry_file_rewind(rows->spill);
	tuplesort_performsort(sort);
	while (simhash_tuplesort_getdatum(sort, &value, &isnull))
	{
		int64		id = DatumGetInt64(value);

		if (!first && id == previous)
			simhash_duplicate_id_error(rows->caller, id);
		first = false;
		previous = id;
	}
	tuplesort_end(sort);
}

static void
order_by_key(SimhashEntry *entries, Size n, bool ordered)
{
	SimhashSortBy by = {.by_key = true};

	if (!ordered)
		simhash_sort_entries(entries, n, &by, SIMHASH64_BITS);
}

void
simhash_entries_unique_ids(SimhashEntry *entries, Size n, bool ordered, const char *caller)
{
	uint64		key;

	/* Ids in increasing order are unique; others are looked for repeats. */
	if (!ordered && simhash_repeated_key(entries, n, &key))
		simhash_duplicate_id_error(caller, SIMHASH_ID_OF_KEY(key));
}

Size
simhash_entries_unique_keys(SimhashEntry *entries, Size n, bool ordered)
{
	Size		kept = 0;

	order_by_key(entries, n, ordered);
	for (Size i = 0; i < n; i++)
		if (kept == 0 || entries[kept - 1].key != entries[i].key)
			entries[kept++] = entries[i];
	return kept;
}
