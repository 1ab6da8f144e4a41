/*
 * find_all_row_buffer.c — the row buffer of a find_all or clusters run
 * (find_all_row_buffer.h).
 */
#include "find_all/find_all_row_buffer.h"

#include "find_all/find_all.h"
#include "miscadmin.h"
#include "blocks/radix_sort.h"
#include "utils/memutils.h"

#define FIRST_CAPACITY 1024

/* Row numbers are uint32, and half that keeps every row count an int. */
#define MAX_ROWS ((uint64) PG_INT32_MAX)

#define SIGN_BIT (UINT64CONST(1) << 63)

void
simhash_rows_init(SimhashRows *rows, const char *caller, bool with_ids,
				  Size extra_bytes_per_row)
{
	rows->caller = caller;
	rows->context = CurrentMemoryContext;
	rows->count = 0;
	rows->capacity = 0;
	rows->hashes = NULL;
	rows->ids = NULL;
	rows->with_ids = with_ids;
	rows->bytes_per_row = sizeof(uint64) + (with_ids ? sizeof(int64) : 0) +
		SIMHASH_FIND_PAIRS_BYTES_PER_ROW + extra_bytes_per_row;
}

/* ERROR if n rows would need more than the budget. */
static void
check_budget(const SimhashRows *rows, uint64 n)
{
	uint64		budget = (uint64) maintenance_work_mem * 1024;

	if (n > MAX_ROWS)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s: more than %u rows", rows->caller, (uint32) MAX_ROWS));
	if (n * rows->bytes_per_row > budget)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s: the input does not fit in maintenance_work_mem", rows->caller),
				errdetail("It has at least " UINT64_FORMAT " rows of %zu bytes each; maintenance_work_mem is %d kB.",
						  n, rows->bytes_per_row, maintenance_work_mem),
				errhint("Raise maintenance_work_mem; a million rows need %zu MB.",
						(rows->bytes_per_row * 1000000 + (1 << 20) - 1) >> 20));
}

static void *
resize(SimhashRows *rows, void *array, Size bytes)
{
	if (array == NULL)
		return MemoryContextAllocHuge(rows->context, bytes);
	return repalloc_huge(array, bytes);
}

void
simhash_rows_grow(SimhashRows *rows)
{
	uint64		capacity = Max((uint64) rows->capacity * 2, FIRST_CAPACITY);
	uint64		affordable = (uint64) maintenance_work_mem * 1024 / rows->bytes_per_row;

	/* Short of the budget, the last growth takes what is left of it ... */
	capacity = Min(capacity, Min(affordable, MAX_ROWS));
	/* ... and once full, asks for one row more, which the check refuses. */
	capacity = Max(capacity, (uint64) rows->count + 1);
	check_budget(rows, capacity);
	rows->hashes = resize(rows, rows->hashes, capacity * sizeof(uint64));
	if (rows->with_ids)
		rows->ids = resize(rows, rows->ids, capacity * sizeof(int64));
	rows->capacity = (uint32) capacity;
}

/* The ids already strictly increase (SELECT ... ORDER BY id, most heaps). */
static bool
ids_increasing(const SimhashRows *rows)
{
	for (uint32 i = 1; i < rows->count; i++)
		if (rows->ids[i - 1] >= rows->ids[i])
			return false;
	return true;
}

void
simhash_rows_sort_by_id(SimhashRows *rows)
{
	uint64	   *keys = (uint64 *) rows->ids;

	if (ids_increasing(rows))
		return;
	/* Flipping the sign bit makes unsigned order the signed order. */
	for (uint32 i = 0; i < rows->count; i++)
		keys[i] ^= SIGN_BIT;
	simhash_radix_sort(keys, rows->hashes, rows->count);
	for (uint32 i = 0; i < rows->count; i++)
		keys[i] ^= SIGN_BIT;

	for (uint32 i = 1; i < rows->count; i++)
		if (rows->ids[i - 1] == rows->ids[i])
			ereport(ERROR,
					errcode(ERRCODE_UNIQUE_VIOLATION),
					errmsg("%s: the query returned id " INT64_FORMAT " more than once",
						   rows->caller, rows->ids[i]),
					errhint("Each row needs its own id; for several fingerprints per "
							"document, number the rows and map them back."));
}

void
simhash_rows_sort_unique(SimhashRows *rows)
{
	uint32		kept = 0;

	simhash_radix_sort(rows->hashes, NULL, rows->count);
	for (uint32 i = 0; i < rows->count; i++)
		if (kept == 0 || rows->hashes[kept - 1] != rows->hashes[i])
			rows->hashes[kept++] = rows->hashes[i];
	rows->count = kept;
}
