/*
 * mih_sort.c — rows sorted into a simhash_mih run set within a memory
 * budget (the design: mih_sort.h), and the rows of pending and first-run
 * pages collected into a sorter (flushes, merges).
 *
 * Why our own external sort rather than tuplesort: a run set is m sorts of
 * the same rows (one per run, each by another rotation of the fingerprint),
 * and 64-bit keys radix-sort in a few linear passes; tuplesort's comparison
 * sort of the same keys took several times as long per sort (docs/index.md,
 * "Build"), and a build would pay it m times.  What tuplesort gives beyond
 * the sort, we keep: memory bounded by the budget, chunks spilled to
 * temporary files (BufFiles, in the build's SharedFileSet when workers write
 * them), merged with a binary heap, in several passes when there are more
 * chunks than the budget has read buffers for.
 *
 * A spilled chunk is m files, one per run, each the run's keys in order; the
 * first run's with each key's heap TID (14 bytes an entry, 8 for a later
 * run).  Files are read and written MIH_SORT_IO_ROWS entries at a time.
 *
 * Layer (mih.h): above mih_utils.c, mih_page.c and mih_runs.c.
 */
#include "index/mih/mih_page.h"
#include "index/mih/mih_sort.h"

#include "commands/progress.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "blocks/radix_sort.h"

/* Entries a file is read or written in at once. */
#define MIH_SORT_IO_ROWS 4096

/* The smallest chunk, however small the budget (1,024 rows: 32 kB). */
#define MIH_SORT_MIN_ROWS 1024

/* A first-run entry in a file: the key, then the packed TID's 6 bytes. */
#define MIH_SPILL_TID_BYTES 6
#define MIH_SPILL_FIRST_BYTES (sizeof(uint64) + MIH_SPILL_TID_BYTES)

/* What a source being merged holds besides its file's own buffer: entries, their bytes. */
#define MIH_SOURCE_BYTES (MIH_SORT_IO_ROWS * (2 * sizeof(uint64) + MIH_SPILL_FIRST_BYTES) + BLCKSZ)

struct MihSorter
{
	SimhashBlocks blocks;
	MemoryContext context;		/* everything below */
	int64		cap;			/* rows of a chunk */
	/* The chunk in memory. */
	uint64	   *keys;			/* fingerprints, until sorted for a run: that run's keys */
	uint64	   *tids;			/* packed; in the first run's order once sorted for it */
	int64		room;			/* of keys and tids */
	int64		n;
	int64		expected;		/* rows the caller expects: the room first taken */
	int			sorted_for;		/* the run keys are sorted for; -1: none yet */
	uint64	   *key_buf;		/* the radix sort's copies */
	uint64	   *tid_buf;
	int64		buf_room;
	/* Chunks spilled: named files of a SharedFileSet, or this process's own. */
	SharedFileSet *fileset;		/* NULL: private temporary files */
	int			worker;			/* names a worker's files */
	int			nchunks;
	int			chunk_room;
	BufFile  ***files;			/* private: [chunk][run], kept open for the merge */
	uint8	   *bytes;			/* a file's entries on their way */
	MihSortStats stats;
	Size		held;			/* bytes of memory held now */
};

static void
held_change(MihSorter *s, int64 bytes)
{
	s->held += bytes;
	s->stats.peak_bytes = Max(s->stats.peak_bytes, s->held);
}

/* Frees a pair of arrays of `room` entries each (none if NULL). */
static void
free_pair(MihSorter *s, uint64 **a, uint64 **b, int64 *room)
{
	if (*a == NULL)
		return;
	pfree(*a);
	pfree(*b);
	held_change(s, -2 * *room * (int64) sizeof(uint64));
	*a = *b = NULL;
	*room = 0;
}

/*
 * A sorter for a run set of ntables runs, holding at most `budget` bytes of
 * rows.  fileset: where a worker of a parallel build spills, under names of
 * its number `worker`; NULL for private temporary files.  expected: the rows
 * it will likely be given (0: unknown), a hint for its first allocation.
 */
MihSorter *
mih_sorter_begin(int ntables, Size budget, SharedFileSet *fileset, int worker, double expected)
{
	MemoryContext context = AllocSetContextCreate(CurrentMemoryContext, "simhash_mih sort",
												  ALLOCSET_DEFAULT_SIZES);
	MihSorter  *s = MemoryContextAllocZero(context, sizeof(MihSorter));

	s->context = context;
	simhash_blocks_init(&s->blocks, ntables);
	/* What the file buffer leaves; the radix sort counts rows in 32 bits. */
	s->cap = ((int64) budget - MIH_SORT_IO_ROWS * (int64) MIH_SPILL_FIRST_BYTES) / MIH_SORT_BYTES_PER_ROW;
	s->cap = Min(Max(s->cap, MIH_SORT_MIN_ROWS), (int64) PG_UINT32_MAX);
	s->expected = expected > 0 ? (int64) Min(expected, (double) s->cap) : 0;
	s->sorted_for = -1;
	s->fileset = fileset;
	s->worker = worker;
	s->bytes = MemoryContextAlloc(context, MIH_SORT_IO_ROWS * MIH_SPILL_FIRST_BYTES);
	held_change(s, MIH_SORT_IO_ROWS * MIH_SPILL_FIRST_BYTES);
	return s;
}

/* The name of a worker's spilled file. */
static void
spill_name(char *name, int worker, int chunk, int run)
{
	snprintf(name, MAXPGPATH, "simhash_mih.%d.%d.%d", worker, chunk, run);
}

/* Sorts the chunk by run t's key (runs in order: a later run's sort leaves the TIDs behind). */
static void
chunk_sort(MihSorter *s, int t)
{
	uint64		to = s->blocks.mask[t];
	instr_time	start,
				end;

	Assert(t > s->sorted_for);
	if (s->sorted_for < 0)
		for (int64 i = 0; i < s->n; i++)
			s->keys[i] = lead_with(s->keys[i], to);
	else
	{
		uint64		from = s->blocks.mask[s->sorted_for];

		for (int64 i = 0; i < s->n; i++)
			s->keys[i] = lead_with(unlead(s->keys[i], from), to);
	}
	if (s->buf_room < s->n)
	{
		MemoryContext old = MemoryContextSwitchTo(s->context);

		free_pair(s, &s->key_buf, &s->tid_buf, &s->buf_room);
		s->buf_room = s->n;
		s->key_buf = MemoryContextAllocHuge(s->context, s->buf_room * sizeof(uint64));
		s->tid_buf = MemoryContextAllocHuge(s->context, s->buf_room * sizeof(uint64));
		held_change(s, 2 * s->buf_room * (int64) sizeof(uint64));
		MemoryContextSwitchTo(old);
	}
	INSTR_TIME_SET_CURRENT(start);
	simhash_radix_sort_with(s->keys, t == 0 ? s->tids : NULL, (uint32) s->n, s->key_buf, s->tid_buf);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	s->stats.sort_seconds += INSTR_TIME_GET_DOUBLE(end);
	s->sorted_for = t;
}

/* Writes n entries of run t to a file (TIDs in the first run only). */
static void
file_write(MihSorter *s, BufFile *file, int t, const uint64 *keys, const uint64 *tids, int64 n)
{
	for (int64 at = 0; at < n; at += MIH_SORT_IO_ROWS)
	{
		int			rows = (int) Min(n - at, MIH_SORT_IO_ROWS);
		uint8	   *p = s->bytes;

		if (t == 0)
			for (int i = 0; i < rows; i++)
			{
				memcpy(p, &keys[at + i], sizeof(uint64));
				/* The packed TID's low 6 bytes (host order, as the file is read back). */
#ifdef WORDS_BIGENDIAN
				memcpy(p + sizeof(uint64), (const uint8 *) &tids[at + i] + 2, MIH_SPILL_TID_BYTES);
#else
				memcpy(p + sizeof(uint64), &tids[at + i], MIH_SPILL_TID_BYTES);
#endif
				p += MIH_SPILL_FIRST_BYTES;
			}
		else
		{
			memcpy(p, keys + at, rows * sizeof(uint64));
			p += rows * sizeof(uint64);
		}
		BufFileWrite(file, s->bytes, p - s->bytes);
		s->stats.spilled_bytes += p - s->bytes;
	}
}

/* Spills the chunk in memory: its m orders, each to a file; the chunk starts over. */
static void
chunk_spill(MihSorter *s)
{
	MemoryContext old = MemoryContextSwitchTo(s->context);

	if (s->fileset == NULL && s->nchunks == s->chunk_room)
	{
		s->chunk_room = Max(8, 2 * s->chunk_room);
		s->files = s->files ? repalloc(s->files, s->chunk_room * sizeof(BufFile **)) :
			palloc(s->chunk_room * sizeof(BufFile **));
	}
	if (s->fileset == NULL)
		s->files[s->nchunks] = palloc(s->blocks.nblocks * sizeof(BufFile *));
	for (int t = 0; t < s->blocks.nblocks; t++)
	{
		BufFile    *file;

		chunk_sort(s, t);
		if (s->fileset)
		{
			char		name[MAXPGPATH];

			spill_name(name, s->worker, s->nchunks, t);
			file = simhash_shared_file_create(s->fileset, name);
		}
		else
			file = BufFileCreateTemp(false);
		file_write(s, file, t, s->keys, s->tids, s->n);
		if (s->fileset)
			BufFileClose(file); /* the leader opens it by name */
		else
			s->files[s->nchunks][t] = file;
	}
	MemoryContextSwitchTo(old);
	s->nchunks++;
	s->stats.chunks++;
	s->n = 0;
	s->sorted_for = -1;
}

/* Adds a row: its (folded) fingerprint and heap TID. */
void
mih_sorter_add(MihSorter *s, uint64 fp, ItemPointer tid)
{
	if (s->n == s->room)
	{
		if (s->n == s->cap)
			chunk_spill(s);
		else
		{
			/*
			 * Grown as rows come, so a small sort takes little: to the rows
			 * expected first, then by half (doubling would leave up to half
			 * the room unused, and the radix sort's copies match the rows).
			 */
			int64		room = Min(s->cap, Max(Max(s->room + s->room / 2, MIH_SORT_MIN_ROWS), s->expected));

			s->keys = s->keys ? repalloc_huge(s->keys, room * sizeof(uint64)) :
				MemoryContextAllocHuge(s->context, room * sizeof(uint64));
			s->tids = s->tids ? repalloc_huge(s->tids, room * sizeof(uint64)) :
				MemoryContextAllocHuge(s->context, room * sizeof(uint64));
			held_change(s, 2 * (room - s->room) * (int64) sizeof(uint64));
			s->room = room;
		}
	}
	s->keys[s->n] = fp;
	s->tids[s->n] = mih_tid_pack(tid);
	s->n++;
	s->stats.rows++;
}

/*
 * A parallel build's process at the end of its scan: its last rows spilled
 * too (every process merges runs from every process's chunks, by name).
 * Returns how many chunks it spilled.
 */
int32
mih_sorter_hand_over(MihSorter *s)
{
	Assert(s->fileset != NULL);
	if (s->n > 0)
		chunk_spill(s);
	return s->nchunks;
}

/*
 * One sorted input of a merge: a spilled file, read MIH_SORT_IO_ROWS entries
 * at a time, or the chunk in memory.
 */
typedef struct MihSource
{
	BufFile    *file;			/* NULL: the chunk in memory */
	bool		with_tids;
	const uint64 *keys;			/* entries at..n are next */
	const uint64 *tids;
	int64		at;
	int64		n;
	uint64	   *key_room;		/* a file's entries, read */
	uint64	   *tid_room;
	uint8	   *bytes;
} MihSource;

/* Reads a file source's next entries; false at its end. */
static bool
source_fill(MihSource *src)
{
	size_t		entry = src->with_tids ? MIH_SPILL_FIRST_BYTES : sizeof(uint64);
	size_t		got;
	int			rows;

	if (src->file == NULL)
		return false;
	got = BufFileRead(src->file, src->bytes, MIH_SORT_IO_ROWS * entry);
	if (got % entry != 0)
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("simhash_mih: a temporary file of the sort ends within an entry (%zu bytes)", got));
	rows = (int) (got / entry);
	if (src->with_tids)
		for (int i = 0; i < rows; i++)
		{
			const uint8 *p = src->bytes + i * entry;
			uint64		tid = 0;

			memcpy(&src->key_room[i], p, sizeof(uint64));
#ifdef WORDS_BIGENDIAN
			memcpy((uint8 *) &tid + 2, p + sizeof(uint64), MIH_SPILL_TID_BYTES);
#else
			memcpy(&tid, p + sizeof(uint64), MIH_SPILL_TID_BYTES);
#endif
			src->tid_room[i] = tid;
		}
	else
		memcpy(src->key_room, src->bytes, rows * sizeof(uint64));
	src->keys = src->key_room;
	src->tids = src->tid_room;
	src->at = 0;
	src->n = rows;
	return rows > 0;
}

/* A file as a source, from its start: its read buffers are what a merge's fan-in counts. */
static void
source_open(MihSorter *s, MihSource *src, BufFile *file, bool with_tids)
{
	memset(src, 0, sizeof(*src));
	src->file = file;
	src->with_tids = with_tids;
	src->key_room = palloc(MIH_SORT_IO_ROWS * sizeof(uint64));
	src->tid_room = palloc(MIH_SORT_IO_ROWS * sizeof(uint64));
	src->bytes = palloc(MIH_SORT_IO_ROWS * MIH_SPILL_FIRST_BYTES);
	held_change(s, MIH_SOURCE_BYTES);
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR, errcode_for_file_access(),
				errmsg("simhash_mih: could not rewind a temporary file of the sort: %m"));
}

/* Closes a file source: the file (a private one is deleted) and its buffers. */
static void
source_close(MihSorter *s, MihSource *src)
{
	if (src->file == NULL)
		return;
	BufFileClose(src->file);
	pfree(src->key_room);
	pfree(src->tid_room);
	pfree(src->bytes);
	held_change(s, -(int64) MIH_SOURCE_BYTES);
}

/* Where merged entries go: a run's pages, or a file for a later merge. */
typedef struct MihSink
{
	MihRunWriter *writer;
	BufFile    *file;
	int			run;
	int64		rows;
} MihSink;

static void
sink_put(MihSorter *s, MihSink *sink, const uint64 *keys, const uint64 *tids, int64 n)
{
	if (sink->writer)
		for (int64 at = 0; at < n; at += MIH_SORT_IO_ROWS)
			mih_run_writer_add(sink->writer, keys + at, tids ? tids + at : NULL,
							   (int) Min(n - at, MIH_SORT_IO_ROWS));
	else
		file_write(s, sink->file, sink->run, keys, tids, n);
	sink->rows += n;
	CHECK_FOR_INTERRUPTS();
}

/* A source in the merge's heap, with its next key beside it (no pointer to chase to compare). */
typedef struct MihHeapItem
{
	uint64		key;
	MihSource  *src;
} MihHeapItem;

/* Restores the heap order below heap[i] (the smallest next key on top). */
static inline void
sift_down(MihHeapItem *heap, int n, int i)
{
	MihHeapItem moving = heap[i];

	for (;;)
	{
		int			child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n && heap[child + 1].key < heap[child].key)
			child++;
		if (moving.key <= heap[child].key)
			break;
		heap[i] = heap[child];
		i = child;
	}
	heap[i] = moving;
}

/*
 * Merges the files (each sorted by run t's key) and the chunk in memory (if
 * `memory`, sorted for run t) into the sink, closing the files.  A binary
 * heap picks the smallest next key; the source on top goes on giving
 * entries while they stay at or below the next smallest (no heap work for
 * a stretch of one source); the last source left goes through as it is,
 * a buffer at a time.
 */
static void
merge(MihSorter *s, BufFile **files, int nfiles, bool memory, int t, MihSink *sink)
{
	int			nsources = nfiles + (memory ? 1 : 0);
	MihSource  *sources = palloc(Max(nsources, 1) * sizeof(MihSource));
	MihHeapItem *heap = palloc(Max(nsources, 1) * sizeof(MihHeapItem));
	uint64	   *out_keys = palloc(MIH_SORT_IO_ROWS * sizeof(uint64));
	uint64	   *out_tids = t == 0 ? palloc(MIH_SORT_IO_ROWS * sizeof(uint64)) : NULL;
	int			nheap = 0;
	int			nout = 0;

	for (int i = 0; i < nfiles; i++)
		source_open(s, &sources[i], files[i], t == 0);
	if (memory)
	{
		MihSource  *chunk = &sources[nfiles];

		memset(chunk, 0, sizeof(*chunk));
		chunk->with_tids = t == 0;
		chunk->keys = s->keys;
		chunk->tids = s->tids;
		chunk->n = s->n;
	}
	for (int i = 0; i < nsources; i++)
		if (sources[i].at < sources[i].n || source_fill(&sources[i]))
		{
			heap[nheap].key = sources[i].keys[sources[i].at];
			heap[nheap++].src = &sources[i];
		}
	for (int i = nheap / 2 - 1; i >= 0; i--)
		sift_down(heap, nheap, i);
	while (nheap > 1)
	{
		MihSource  *top = heap[0].src;
		/* The next smallest key of the other sources: a child of the top. */
		uint64		bound = nheap == 2 || heap[1].key <= heap[2].key ? heap[1].key : heap[2].key;
		int64		at = top->at;

		do
		{
			out_keys[nout] = top->keys[at];
			if (out_tids)
				out_tids[nout] = top->tids[at];
			at++;
			if (++nout == MIH_SORT_IO_ROWS)
			{
				sink_put(s, sink, out_keys, out_tids, nout);
				nout = 0;
			}
		} while (at < top->n && top->keys[at] <= bound);
		top->at = at;
		if (at == top->n && !source_fill(top))
			heap[0] = heap[--nheap];
		else
			heap[0].key = top->keys[top->at];
		sift_down(heap, nheap, 0);
	}
	if (nout > 0)
		sink_put(s, sink, out_keys, out_tids, nout);
	if (nheap == 1)
	{
		MihSource  *last = heap[0].src;

		do
			sink_put(s, sink, last->keys + last->at, out_tids ? last->tids + last->at : NULL,
					 last->n - last->at);
		while (source_fill(last));
	}
	for (int i = 0; i < nfiles; i++)
		source_close(s, &sources[i]);
	pfree(sources);
	pfree(heap);
	pfree(out_keys);
	if (out_tids)
		pfree(out_tids);
}

/* Frees the chunk's memory once nothing is left in it: the room goes to read buffers. */
static void
chunk_free(MihSorter *s)
{
	free_pair(s, &s->keys, &s->tids, &s->room);
	free_pair(s, &s->key_buf, &s->tid_buf, &s->buf_room);
}

/* The spilled files of run t in `spilled`, opened by name (deleted once merged). */
static int
open_spilled(const MihSpilled *spilled, int t, BufFile **files)
{
	int			nfiles = 0;

	for (int w = 0; spilled && w < spilled->nworkers; w++)
		for (int c = 0; c < spilled->nchunks[w]; c++)
		{
			char		name[MAXPGPATH];

			spill_name(name, w, c, t);
			files[nfiles++] = simhash_shared_file_open(spilled->fileset, name);
		}
	return nfiles;
}

/* Deletes the spilled files of run t, merged: their disk space back now, not at the build's end. */
static void
delete_spilled(const MihSpilled *spilled, int t)
{
	for (int w = 0; spilled && w < spilled->nworkers; w++)
		for (int c = 0; c < spilled->nchunks[w]; c++)
		{
			char		name[MAXPGPATH];

			spill_name(name, w, c, t);
			simhash_shared_file_delete(spilled->fileset, name);
		}
}

/*
 * Merges run t's files (and the chunk in memory, if any, sorted for run t
 * here) into the writer; returns the entries written.  Each file being
 * merged takes a read buffer (MIH_SOURCE_BYTES); with more files than
 * `fan_in` buffers, groups of them are first merged into one file, in as
 * many passes as needed.
 */
static int64
merge_run(MihSorter *s, int t, BufFile **files, int nfiles, int fan_in, MihRunWriter *writer)
{
	MihSink		sink = {writer, NULL, t, 0};

	while (nfiles > fan_in)
	{
		MihSink		pass = {NULL, BufFileCreateTemp(false), t, 0};
		int			group = Min(fan_in, nfiles - fan_in + 1);

		merge(s, files, group, false, t, &pass);
		files[0] = pass.file;
		memmove(files + 1, files + group, (nfiles - group) * sizeof(BufFile *));
		nfiles -= group - 1;
		s->stats.merge_passes++;
	}
	if (s->n > 0)
		chunk_sort(s, t);
	merge(s, files, nfiles, s->n > 0, t, &sink);
	return sink.rows;
}

/* The read buffers a merge may hold besides what the sorter holds now. */
static int
fan_in_of(MihSorter *s, Size merge_budget)
{
	return (int) Max(2, ((int64) merge_budget - (int64) s->held) / (int64) MIH_SOURCE_BYTES);
}

/*
 * Writes the run set of a sort in one process: for each run, the chunks it
 * spilled and the one in memory, merged into the run's pages.  merge_budget:
 * the memory the merge may hold, the chunk in memory included (which stays
 * there only if it leaves room for a read buffer per file).  Pages are
 * WAL-logged unless not `logged` (a build's).
 */
MihRunSet
mih_sorter_write_set(MihSorter *s, Relation index, bool logged, Size merge_budget)
{
	MemoryContext old = MemoryContextSwitchTo(s->context);
	MihRunSet	set;
	int			fan_in;

	Assert(s->fileset == NULL);
	if (s->nchunks > 0 && s->n > 0 && s->held + (Size) s->nchunks * MIH_SOURCE_BYTES > merge_budget)
		chunk_spill(s);
	if (s->n == 0)
		chunk_free(s);
	fan_in = fan_in_of(s, merge_budget);
	memset(&set, 0, sizeof(set));
	for (int t = 0; t < s->blocks.nblocks; t++)
	{
		BufFile   **files = palloc(Max(s->nchunks, 1) * sizeof(BufFile *));
		MihRunWriter writer;
		int64		rows;

		for (int c = 0; c < s->nchunks; c++)
			files[c] = s->files[c][t];
		mih_run_writer_begin(&writer, index, t == 0, logged);
		rows = merge_run(s, t, files, s->nchunks, fan_in, &writer);
		set.dir_head[t] = mih_run_writer_end(&writer, &set.npages[t]);
		if (t == 0)
			set.nentries = rows;
		pfree(files);
	}
	s->nchunks = 0;				/* every file was closed by its merge */
	MemoryContextSwitchTo(old);
	return set;
}

/*
 * A parallel build's run t, by any of its processes: every process's chunks
 * (`spilled`: all spilled by then, mih_sorter_hand_over) merged into the
 * writer, within merge_budget; returns the entries written.  s: the
 * process's own sorter, for its memory and statistics.
 */
int64
mih_sorter_merge_run(MihSorter *s, int t, const MihSpilled *spilled, Size merge_budget, MihRunWriter *writer)
{
	MemoryContext old = MemoryContextSwitchTo(s->context);
	int			nfiles = 0;
	BufFile   **files;
	int64		rows;

	Assert(s->n == 0);
	chunk_free(s);
	for (int w = 0; w < spilled->nworkers; w++)
		nfiles += spilled->nchunks[w];
	files = palloc(Max(nfiles, 1) * sizeof(BufFile *));
	nfiles = open_spilled(spilled, t, files);
	rows = merge_run(s, t, files, nfiles, fan_in_of(s, merge_budget), writer);
	delete_spilled(spilled, t);
	pfree(files);
	MemoryContextSwitchTo(old);
	return rows;
}

/* Frees everything the sorter holds; its statistics into *stats (may be NULL). */
void
mih_sorter_end(MihSorter *s, MihSortStats *stats)
{
	if (stats)
		*stats = s->stats;
	for (int c = 0; s->fileset == NULL && c < s->nchunks; c++)
		for (int t = 0; t < s->blocks.nblocks; t++)
			BufFileClose(s->files[c][t]);
	MemoryContextDelete(s->context);
}

/* Adds the rows of a pending page to c->sorter. */
void
mih_collect_pending(Relation index, BlockNumber blkno, void *arg)
{
	MihCollect *c = (MihCollect *) arg;
	Buffer		buffer = mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_SHARE);
	MihPendingPage *page = mih_pending_of(BufferGetPage(buffer));

	for (uint32 j = 0; j < page->n; j++)
		mih_sorter_add(c->sorter, page->fps[j], &page->tids[j]);
	UnlockReleaseBuffer(buffer);
}

/* Adds the rows of a first-run page to c->sorter (keys unrotated with c->mask). */
void
mih_collect_run(Relation index, BlockNumber blkno, void *arg)
{
	MihCollect *c = (MihCollect *) arg;
	Buffer		buffer = mih_read_page(index, blkno, MIH_PAGE_RUN, BUFFER_LOCK_SHARE);
	MihRunView	view;
	uint64		keys[MIH_RUN_MAX_ENTRIES];
	ItemPointerData tids[MIH_RUN_MAX_ENTRIES];
	int			n;

	mih_run_view(&view, index, blkno, BufferGetPage(buffer), true);
	n = mih_run_decode(&view, keys, tids);
	UnlockReleaseBuffer(buffer);
	for (int j = 0; j < n; j++)
		mih_sorter_add(c->sorter, unlead(keys[j], c->mask), &tids[j]);
}
