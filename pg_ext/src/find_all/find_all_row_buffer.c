/*
 * find_all_row_buffer.c — the row buffer of a find_all or clusters run
 * (find_all_row_buffer.h).
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
	rows->nruns = 1;
	rows->run_start[0] = 0;
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
simhash_rows_new_run(SimhashRows *rows)
{
	rows->keys_increasing = false;
	if (rows->nruns < SIMHASH_ROWS_MAX_RUNS)
		rows->run_start[rows->nruns] = rows->count;
	if (rows->nruns <= SIMHASH_ROWS_MAX_RUNS)
		rows->nruns++;
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

/* A run's place in the merge: its next entry, and the stretches after. */
typedef struct RunCursor
{
	const SimhashEntry *pos;
	const SimhashEntry *end;
	int64		stretch;		/* -1: the run is done */
} RunCursor;

static void
cursor_at(RunCursor *cursor, const SimhashEntry *entries, const SimhashStretch *stretches,
		  int64 stretch)
{
	/* Skip empty stretches. */
	while (stretch >= 0 && stretches[stretch].count == 0)
		stretch = stretches[stretch].next;
	cursor->stretch = stretch;
	cursor->pos = cursor->end = NULL;
	if (stretch >= 0)
	{
		cursor->pos = entries + stretches[stretch].start;
		cursor->end = cursor->pos + stretches[stretch].count;
	}
}

bool
simhash_runs_repeat_a_key(const SimhashEntry *entries, const SimhashStretch *stretches,
						  const int64 *first, int nruns, uint64 *key)
{
	RunCursor  *cursor = palloc(sizeof(RunCursor) * Max(nruns, 1));
	uint64		rounds = 0;
	bool		repeated = false;

	for (int r = 0; r < nruns; r++)
		cursor_at(&cursor[r], entries, stretches, first[r]);
	for (;;)
	{
		int			smallest = -1;
		bool		have_second = false;
		uint64		second = 0;

		/* The run with the smallest next key, and the next smallest key of the others. */
		for (int r = 0; r < nruns; r++)
		{
			uint64		head;

			if (cursor[r].stretch < 0)
				continue;
			head = cursor[r].pos->key;
			if (smallest < 0 || head < cursor[smallest].pos->key)
			{
				if (smallest >= 0)
				{
					second = cursor[smallest].pos->key;
					have_second = true;
				}
				smallest = r;
			}
			else if (!have_second || head < second)
			{
				second = head;
				have_second = true;
			}
		}
		if (!have_second)
			break;				/* one run left: increasing */
		if (cursor[smallest].pos->key == second)
		{
			*key = second;
			repeated = true;
			break;
		}
		/* The smallest run's entries below the others' next ones, stretch after stretch. */
		for (RunCursor *run = &cursor[smallest]; run->stretch >= 0;)
		{
			while (run->pos < run->end && run->pos->key < second)
				run->pos++;
			if (run->pos < run->end)
				break;
			cursor_at(run, entries, stretches, stretches[run->stretch].next);
		}
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(++rounds);
	}
	pfree(cursor);
	return repeated;
}

void
simhash_rows_unique_ids(const SimhashRows *rows, SimhashEntry *entries, Size n)
{
	uint64		key;

	Assert(rows->spill == NULL);
	if (rows->nruns > SIMHASH_ROWS_MAX_RUNS)
		simhash_entries_unique_ids(entries, n, false, rows->caller);
	else if (rows->nruns > 1)
	{
		SimhashStretch stretches[SIMHASH_ROWS_MAX_RUNS];
		int64		first[SIMHASH_ROWS_MAX_RUNS];

		/* Each run one stretch of the entries. */
		for (int r = 0; r < rows->nruns; r++)
		{
			stretches[r].start = rows->run_start[r];
			stretches[r].count = (r + 1 < rows->nruns ? rows->run_start[r + 1] : n) - rows->run_start[r];
			stretches[r].next = -1;
			first[r] = r;
		}
		if (simhash_runs_repeat_a_key(entries, stretches, first, rows->nruns, &key))
			simhash_duplicate_id_error(rows->caller, SIMHASH_ID_OF_KEY(key));
	}
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
