/*
 * find_all_spill.c — find_all and clusters past maintenance_work_mem
 * (find_all_spill.h): entry files, and the search partition by partition.
 * Layer: the engine, on find_all.c.
 */
#include "find_all/find_all_spill.h"

#include <limits.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "find_all/progress.h"

/* Entries read from a file at a time while partitioning it (256 kB). */
#define READ_ROWS 16384

/* At most 2^6 partitions per level: 64 files' buffers, under 1 MB. */
#define MAX_FANOUT_BITS 6

/*
 * Fixed memory of a spilled run beside its partition in memory: the
 * search's own, the partition files' buffers, the read buffer.
 */
#define SPILL_FIXED_BYTES \
	(((Size) 1 << MAX_FANOUT_BITS) * (sizeof(SimhashEntryFile) + BLCKSZ) + \
	 sizeof(SimhashEntry) * READ_ROWS)

/*
 * simhash.debug_spill_rows: when set, runs keep at most this many rows in
 * memory whatever maintenance_work_mem says, so that tests reach every path
 * of the spilled search (several levels of partitions, skew) with small inputs.
 */
static int	debug_spill_rows = 0;

/* The partitions of one level: their files, and whether each holds one value only. */
typedef struct Partitions
{
	int			count;
	SimhashEntryFile *files;
	uint64	   *first_value;
	bool	   *several_values;
} Partitions;

/* A spilled search: the search, the memory a partition is loaded into. */
struct SimhashSpill
{
	SimhashSearch search;
	Size		rows_in_memory;
	SimhashEntry *memory;
	Size	   *piece_start;
	uint64		done;			/* rows of the current pass searched, for progress */
	uint64		total;
	int			pass;
	bool		report;			/* progress: the backend's own run */
};

typedef struct SimhashSpill SpillSearch;

/* ---------- entry files ---------- */

static void
rewind_file(BufFile *file)
{
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR, errcode_for_file_access(), errmsg("could not rewind a temporary file: %m"));
}

static void
close_file(BufFile **file)
{
	if (*file != NULL)
		BufFileClose(*file);
	*file = NULL;
}

void
simhash_entry_file_create(SimhashEntryFile *file)
{
	file->file = BufFileCreateTemp(false);
	file->count = 0;
	file->position = 0;
	file->used = 0;
}

static void
flush_batch(SimhashEntryFile *file)
{
	if (file->used > 0)
		BufFileWrite(file->file, file->batch, sizeof(SimhashEntry) * file->used);
	file->used = 0;
}

static inline void
put_entry(SimhashEntryFile *file, const SimhashEntry *entry)
{
	if (file->used == lengthof(file->batch))
		flush_batch(file);
	file->batch[file->used++] = *entry;
	file->count++;
}

void
simhash_entry_file_write(SimhashEntryFile *file, const SimhashEntry *entries, Size n)
{
	flush_batch(file);
	if (n > 0)
		BufFileWrite(file->file, unconstify(SimhashEntry *, entries), sizeof(SimhashEntry) * n);
	file->count += n;
}

void
simhash_entry_file_rewind(SimhashEntryFile *file)
{
	flush_batch(file);
	rewind_file(file->file);
	file->position = 0;
}

Size
simhash_entry_file_read(SimhashEntryFile *file, SimhashEntry *entries, Size max)
{
	Size		n = Min(max, file->count - file->position);

	if (n > 0)
		simhash_buffile_read(file->file, entries, sizeof(SimhashEntry) * n);
	file->position += n;
	return n;
}

void
simhash_entry_file_close(SimhashEntryFile *file)
{
	close_file(&file->file);
}

void
simhash_entry_file_create_shared(SimhashEntryFile *file, SharedFileSet *fileset, const char *name)
{
	file->file = simhash_shared_file_create(fileset, name);
	file->count = 0;
	file->position = 0;
	file->used = 0;
}

void
simhash_entry_file_export(SimhashEntryFile *file)
{
	flush_batch(file);
	simhash_shared_file_export(file->file);
	close_file(&file->file);
}

void
simhash_entry_file_open_shared(SimhashEntryFile *file, SharedFileSet *fileset, const char *name)
{
	file->file = simhash_shared_file_open(fileset, name);
	file->count = BufFileSize(file->file) / sizeof(SimhashEntry);
	file->position = 0;
	file->used = 0;
}

/* ---------- key files ---------- */

void
simhash_key_file_create(SimhashKeyFile *file)
{
	file->file = BufFileCreateTemp(false);
	file->count = 0;
	file->position = 0;
	file->writing = true;
	file->used = 0;
	file->next = 0;
}

void
simhash_key_file_put(SimhashKeyFile *file, uint64 key)
{
	Assert(file->writing);
	if (file->used == lengthof(file->batch))
	{
		BufFileWrite(file->file, file->batch, sizeof(uint64) * file->used);
		file->used = 0;
	}
	file->batch[file->used++] = key;
	file->count++;
}

void
simhash_key_file_rewind(SimhashKeyFile *file)
{
	if (file->writing && file->used > 0)
		BufFileWrite(file->file, file->batch, sizeof(uint64) * file->used);
	file->writing = false;
	rewind_file(file->file);
	file->used = file->next = 0;
	file->position = 0;
}

uint64
simhash_key_file_get(SimhashKeyFile *file)
{
	if (file->next == file->used)
	{
		Size		n = Min(lengthof(file->batch), file->count - file->position);

		if (n == 0)
			elog(ERROR, "simhash: read past the end of a key file");
		simhash_buffile_read(file->file, file->batch, sizeof(uint64) * n);
		file->position += n;
		file->used = (int) n;
		file->next = 0;
	}
	return file->batch[file->next++];
}

void
simhash_key_file_close(SimhashKeyFile *file)
{
	close_file(&file->file);
}

/* ---------- partitions ---------- */

void
simhash_spill_init(void)
{
	DefineCustomIntVariable("simhash.debug_spill_rows",
							"Keeps at most this many rows of a find_all or clusters run in memory, for tests.",
							"0 (the default): maintenance_work_mem decides.",
							&debug_spill_rows,
							0, 0, INT_MAX,
							PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

bool
simhash_spill_fits(Size n, Size bytes)
{
	if (debug_spill_rows > 0)
		return n <= (Size) debug_spill_rows;
	return bytes <= (Size) maintenance_work_mem * 1024;
}

/* Per row in memory: the entry, and its share of the stripes' buffer. */
#define SPILL_BYTES_PER_ROW (sizeof(SimhashEntry) + sizeof(SimhashEntry) / 8)

/* The fixed memory of a spilled search within a budget: at least half of it must be left. */
static Size
spill_fixed_bytes(Size budget_bytes)
{
	/* The search's own buffers, at most those of a partition the whole budget holds. */
	return SPILL_FIXED_BYTES + simhash_search_fixed_bytes(budget_bytes / SPILL_BYTES_PER_ROW);
}

bool
simhash_spill_budget_enough(Size budget_bytes)
{
	return debug_spill_rows > 0 || budget_bytes >= 2 * spill_fixed_bytes(budget_bytes);
}

Size
simhash_spill_rows_in_memory(Size budget_bytes, const char *caller)
{
	Size		per_row = SPILL_BYTES_PER_ROW;
	Size		fixed = spill_fixed_bytes(budget_bytes);

	if (debug_spill_rows > 0)
		return debug_spill_rows;
	if (!simhash_spill_budget_enough(budget_bytes))
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s: maintenance_work_mem is too small for an input this big", caller),
				errdetail("Past maintenance_work_mem a run works through temporary files, and needs %zu kB of memory to do so; it has %zu kB.",
						  (2 * fixed) >> 10, budget_bytes >> 10),
				errhint("Raise maintenance_work_mem."));
	return (budget_bytes - fixed) / per_row;
}

/* Bits of partition number that split n entries into parts of about half the memory. */
static int
fanout_bits(Size n, Size rows_in_memory, int bits_left)
{
	int			bits = 1;

	while (bits < Min(MAX_FANOUT_BITS, bits_left) && (n >> bits) > rows_in_memory / 2)
		bits++;
	return bits;
}

/*
 * Appends the entries of the file (from where it is) to the 2^bits files
 * of parts, by the bits [bits_used, bits_used + bits) of the sort value
 * (counted from the top), noting each part's values.
 */
static void
split_into(SimhashEntryFile *input, const SimhashSortBy *by, int bits_used, int bits,
		   Partitions *parts)
{
	SimhashEntry *buffer = palloc(sizeof(SimhashEntry) * READ_ROWS);
	Size		got;

	while ((got = simhash_entry_file_read(input, buffer, READ_ROWS)) > 0)
	{
		for (Size i = 0; i < got; i++)
		{
			uint64		value = simhash_sort_value(by, &buffer[i]);
			int			p = (int) ((value << bits_used) >> (SIMHASH64_BITS - bits));

			if (parts->files[p].count == 0)
				parts->first_value[p] = value;
			else if (value != parts->first_value[p])
				parts->several_values[p] = true;
			put_entry(&parts->files[p], &buffer[i]);
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buffer);
}

static void
partitions_alloc(Partitions *parts, int bits)
{
	parts->count = 1 << bits;
	parts->files = palloc(sizeof(SimhashEntryFile) * parts->count);
	parts->first_value = palloc0(sizeof(uint64) * parts->count);
	parts->several_values = palloc0(sizeof(bool) * parts->count);
}

/*
 * Splits the file (rewound) by the bits [bits_used, bits_used + bits) of
 * the sort value into 2^bits new rewound temporary files.
 */
static void
partition_file(SimhashEntryFile *input, const SimhashSortBy *by, int bits_used, int bits,
			   Partitions *parts)
{
	partitions_alloc(parts, bits);
	for (int p = 0; p < parts->count; p++)
		simhash_entry_file_create(&parts->files[p]);
	split_into(input, by, bits_used, bits, parts);
	for (int p = 0; p < parts->count; p++)
		simhash_entry_file_rewind(&parts->files[p]);
}

static void
free_partitions(Partitions *parts)
{
	for (int p = 0; p < parts->count; p++)
		simhash_entry_file_close(&parts->files[p]);
	pfree(parts->files);
	pfree(parts->first_value);
	pfree(parts->several_values);
}

/* Reads the whole (rewound) file into the memory. */
static Size
load(SpillSearch *spill, SimhashEntryFile *file)
{
	Assert(file->count <= spill->rows_in_memory);
	return simhash_entry_file_read(file, spill->memory, spill->rows_in_memory);
}

/* ---------- the search ---------- */

static void
report_rows(SpillSearch *spill, Size rows)
{
	spill->done += rows;
	if (spill->report)
		simhash_progress_at(SIMHASH_STAGE_SEARCH,
						(uint64) spill->pass * spill->total + spill->done,
						(uint64) spill->search.npasses * spill->total);
}

/*
 * A file too big for memory whose entries all share one table's key: every
 * pair of them is compared, a memory's worth against the rest at a time.
 */
static void
compare_all_pairs(SpillSearch *spill, SimhashEntryFile *file, int table)
{
	SimhashEntry *others = palloc(sizeof(SimhashEntry) * READ_ROWS);

	for (Size start = 0; start < file->count;)
	{
		Size		n;
		Size		got;

		/* Skip what was compared already, then load the next part. */
		simhash_entry_file_rewind(file);
		for (Size skipped = 0; skipped < start; skipped += got)
			got = simhash_entry_file_read(file, others, Min(READ_ROWS, start - skipped));
		n = simhash_entry_file_read(file, spill->memory, spill->rows_in_memory);
		simhash_compare_group(&spill->search, table, spill->memory, n);
		while ((got = simhash_entry_file_read(file, others, READ_ROWS)) > 0)
			simhash_compare_across(&spill->search, table, spill->memory, n, others, got);
		start += n;
	}
	pfree(others);
}

/*
 * The pass (table < 0) or one of its tables over a file, loaded whole if it
 * fits, else split by more bits; a file too big whose entries all share the
 * pass's block is searched table by table.
 */
static void
search_file(SpillSearch *spill, SimhashEntryFile *file, int table, int bits_used)
{
	SimhashSearch *search = &spill->search;
	SimhashSortBy by = table < 0 ? simhash_pass_order(search, spill->pass) :
		simhash_table_order(search, search->tables[table]);
	Partitions	parts;
	int			bits;

	if (file->count <= spill->rows_in_memory)
	{
		Size		n = load(spill, file);

		if (table < 0)
		{
			SimhashStripes stripes;

			simhash_stripes_init(&stripes, spill->memory, n, 1, spill->piece_start);
			simhash_search_pass(search, spill->pass, &stripes, NULL, 0);
		}
		else
				simhash_search_table(search, table, spill->memory, n);
		report_rows(spill, table < 0 ? n : 0);
		return;
	}
	bits = fanout_bits(file->count, spill->rows_in_memory, SIMHASH64_BITS - bits_used);
	partition_file(file, &by, bits_used, bits, &parts);
	for (int p = 0; p < parts.count; p++)
	{
		SimhashEntryFile *part = &parts.files[p];

		if (part->count <= spill->rows_in_memory || parts.several_values[p])
			search_file(spill, part, table, bits_used + bits);
		else if (table < 0)
		{
			/* One block value, too many entries: each table splits them by its own blocks. */
			for (int t = search->pass_start[spill->pass]; t < search->pass_start[spill->pass + 1]; t++)
			{
				simhash_entry_file_rewind(part);
				search_file(spill, part, t, 0);
			}
			report_rows(spill, part->count);
		}
		else
			compare_all_pairs(spill, part, table);
		simhash_entry_file_close(part);
	}
	free_partitions(&parts);
}

SimhashSpill *
simhash_spill_begin(int k, int blocks, Size rows_in_memory, Size total, SimhashPairFn emit, void *arg)
{
	SimhashSpill *spill = palloc0(sizeof(SimhashSpill));
	SimhashBlocks layout;
	SimhashStripes geometry;

	simhash_check_blocks(k, blocks);
	simhash_blocks_init(&layout, blocks);
	spill->rows_in_memory = rows_in_memory;
	spill->memory = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SimhashEntry) * rows_in_memory);
	spill->piece_start = MemoryContextAllocHuge(CurrentMemoryContext,
												simhash_stripes_piece_bytes(rows_in_memory, 1));
	/* The search's buffers, sized for the biggest partition. */
	simhash_stripes_init(&geometry, spill->memory, rows_in_memory, 1, spill->piece_start);
	simhash_search_init(&spill->search, k, &layout, 0, &geometry, emit, arg);
	spill->total = total;
	spill->report = !IsParallelWorker();
	return spill;
}

void
simhash_spill_end(SimhashSpill *spill)
{
	simhash_search_free(&spill->search);
	pfree(spill->memory);
	pfree(spill->piece_start);
	pfree(spill);
}

void
simhash_spill_report(SimhashSpill *spill, bool report)
{
	spill->report = report;
}

int
simhash_spill_passes(const SimhashSpill *spill)
{
	return spill->search.npasses;
}

SimhashEntry *
simhash_spill_memory(SimhashSpill *spill, Size *capacity)
{
	*capacity = spill->rows_in_memory;
	return spill->memory;
}

SimhashSortBy
simhash_spill_pass_order(const SimhashSpill *spill, int pass)
{
	return simhash_pass_order(&spill->search, pass);
}

void
simhash_spill_search_memory(SimhashSpill *spill, int pass, Size n)
{
	SimhashStripes stripes;

	simhash_stripes_init(&stripes, spill->memory, n, 1, spill->piece_start);
	simhash_search_pass(&spill->search, pass, &stripes, NULL, 0);
	report_rows(spill, n);
}

void
simhash_spill_search_file(SimhashSpill *spill, int pass, SimhashEntryFile *file, int bits_used)
{
	if (spill->pass != pass)
		spill->done = 0;
	spill->pass = pass;
	simhash_entry_file_rewind(file);
	search_file(spill, file, -1, bits_used);
}

void
simhash_spill_find_pairs(SimhashEntryFile *input, int k, int blocks, Size rows_in_memory,
						 SimhashPairFn emit, void *arg)
{
	SimhashSpill *spill = simhash_spill_begin(k, blocks, rows_in_memory, input->count, emit, arg);

	for (int pass = 0; pass < spill->search.npasses; pass++)
		simhash_spill_search_file(spill, pass, input, 0);
	simhash_entry_file_close(input);
	simhash_spill_end(spill);
}

void
simhash_spill_find_pass_pairs(SimhashEntryFile *input, int k, int blocks, int pass,
							  Size rows_in_memory, SimhashPairFn emit, void *arg)
{
	SimhashSpill *spill = simhash_spill_begin(k, blocks, rows_in_memory, input->count, emit, arg);

	simhash_spill_search_file(spill, pass, input, 0);
	simhash_entry_file_close(input);
	simhash_spill_end(spill);
}

/* ---------- distinct fingerprints ---------- */

typedef struct SpillDistinct
{
	SpillSearch *spill;			/* its memory only */
	SimhashPairFn join;
	void	   *arg;
	SimhashEntryFile *output;
} SpillDistinct;

static void
distinct_file(SpillDistinct *distinct, SimhashEntryFile *file, int bits_used)
{
	SimhashSortBy by = {.mask = ~UINT64CONST(0)};
	Partitions	parts;
	int			bits;

	if (file->count <= distinct->spill->rows_in_memory)
	{
		Size		n = load(distinct->spill, file);

		n = simhash_distinct(distinct->spill->memory, n, distinct->join, distinct->arg);
		simhash_entry_file_write(distinct->output, distinct->spill->memory, n);
		return;
	}
	bits = fanout_bits(file->count, distinct->spill->rows_in_memory, SIMHASH64_BITS - bits_used);
	partition_file(file, &by, bits_used, bits, &parts);
	for (int p = 0; p < parts.count; p++)
	{
		SimhashEntryFile *part = &parts.files[p];

		if (part->count <= distinct->spill->rows_in_memory || parts.several_values[p])
			distinct_file(distinct, part, bits_used + bits);
		else
		{
			/* One fingerprint, too many rows: all joined to the first, streaming. */
			SimhashEntry first;
			SimhashEntry entry;

			simhash_entry_file_read(part, &first, 1);
			simhash_entry_file_write(distinct->output, &first, 1);
			while (simhash_entry_file_read(part, &entry, 1) > 0)
				distinct->join(distinct->arg, Min(first.key, entry.key), Max(first.key, entry.key), 0);
		}
		simhash_entry_file_close(part);
	}
	free_partitions(&parts);
}

void
simhash_spill_distinct_file(SimhashSpill *spill, SimhashEntryFile *file, int bits_used,
							SimhashPairFn join, void *arg, SimhashEntryFile *output)
{
	SpillDistinct distinct = {.spill = spill, .join = join, .arg = arg, .output = output};

	simhash_entry_file_rewind(file);
	distinct_file(&distinct, file, bits_used);
}

void
simhash_spill_distinct(SimhashEntryFile *input, Size rows_in_memory, SimhashPairFn join, void *arg,
					   SimhashEntryFile *output)
{
	/* The memory of a search; the search itself is not used. */
	SimhashSpill *spill = simhash_spill_begin(0, 1, rows_in_memory, input->count, join, arg);

	simhash_entry_file_create(output);
	simhash_spill_distinct_file(spill, input, 0, join, arg, output);
	simhash_entry_file_close(input);
	simhash_entry_file_rewind(output);
	simhash_spill_end(spill);
}

/* ---------- the partitions of a parallel spilled run ---------- */

void
simhash_spill_split(SimhashEntryFile *input, const SimhashSortBy *by, int bits,
					SimhashEntryFile *outputs)
{
	Partitions	parts;

	partitions_alloc(&parts, bits);
	pfree(parts.files);
	parts.files = outputs;
	simhash_entry_file_rewind(input);
	split_into(input, by, 0, bits, &parts);
	pfree(parts.first_value);
	pfree(parts.several_values);
}
