/*
 * find_all_parallel.c — the search of find_all.h by the backend and
 * parallel workers together (find_all_parallel.h), with PostgreSQL's
 * parallel machinery as parallel CREATE INDEX and parallel hash join use it.
 * Layer: the engine, on find_all.c and find_all_spill.c.
 *
 * One dynamic shared memory segment holds the entries (16 bytes per row,
 * once), the stripes' piece boundaries, a Barrier and a counter per phase.
 * Each pass has two phases: every stripe is partitioned into its pieces,
 * then every unit is searched.  A process takes the next stripe or the next
 * units from the phase's counter, so a slow process holds no one up, and
 * waits at the Barrier for the others before the next phase reads what
 * they wrote.  A worker that starts late joins the phase under way; one that
 * never starts is never waited for (the Barrier counts attached processes).
 *
 * Each pair comes out of the one table, unit and process that finds it
 * first (find_all.c), so the processes' pairs are disjoint and together
 * the serial result.  A worker writes its pairs to a temporary file of the
 * run's SharedFileSet, never to the backend directly: no process ever waits
 * for the backend to read, so none can deadlock at the Barrier.  The backend
 * emits its own pairs as it finds them, and the workers' files at the end.
 *
 * An ERROR or a cancel in the backend ends the workers (the ParallelContext
 * is destroyed at abort) and the shared files with the segment; an ERROR in
 * a worker is rethrown in the backend.
 */
#include "find_all/find_all_parallel.h"

#include <limits.h>
#include <sys/statvfs.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/barrier.h"
#include "storage/buffile.h"
#include "storage/dsm_impl.h"
#include "storage/sharedfileset.h"
#include "storage/shm_toc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "portability/instr_time.h"
#include "utils/wait_event.h"

#include "find_all/find_all_spill.h"
#include "find_all/progress.h"

/* The shm_toc keys of the segment. */
#define KEY_SHARED UINT64CONST(0x53494D4841534801)
#define KEY_ENTRIES UINT64CONST(0x53494D4841534802)
#define KEY_PIECES UINT64CONST(0x53494D4841534803)
#define KEY_KEPT UINT64CONST(0x53494D4841534804)

/*
 * The phases of a run: for clusters, three first (each stripe by the whole
 * fingerprint, each unit's distinct entries, their compaction by one
 * process); then two per pass (the stripes, the units).
 */
#define DISTINCT_STRIPES 0
#define DISTINCT_UNITS 1
#define DISTINCT_COMPACT 2
#define DISTINCT_PHASES 3

/* Processes whose times the run keeps (the backend and workers; more share the last slot). */
#define SIMHASH_PARALLEL_MAX_PROCESSES 64

#define MAX_PHASES (DISTINCT_PHASES + 2 * SIMHASH_MAX_BLOCKS)

/* A spilled run's partitions per pass: at most 2^8 (each process writes one file each). */
#define SPILL_MAX_FANOUT_BITS 8

/* Units a process takes from the counter at a time. */
#define UNITS_PER_TAKE 8

/* A pair in a worker's file: key1, key2, distance. */
#define PAIR_BYTES (2 * sizeof(uint64) + sizeof(int32))
#define PAIRS_PER_READ 1024

/* Room for a count per unit (the units of any number of rows). */
#define KEPT_BYTES (sizeof(Size) * ((Size) 1 << SIMHASH_UNIT_MAX_BITS))

/* Where /dev/shm is, for POSIX shared memory (the default on Linux). */
#define POSIX_SHM_DIRECTORY "/dev/shm"

static int	parallel_min_rows = SIMHASH_PARALLEL_MIN_ROWS_DEFAULT;

/*
 * A spilled run's phases work on stages of shared files, named by stage,
 * writer and partition: the backend splits its rows into stage 0 before the
 * workers start; a phase reads a stage and writes the next.
 */
#define MAX_STAGES (2 + SIMHASH_MAX_BLOCKS)

typedef enum SpillPhaseKind
{
	SPILL_DISTINCT,				/* each partition's distinct entries: one file per process */
	SPILL_SPLIT,				/* each file of a stage into the partitions of a pass */
	SPILL_SEARCH				/* each partition of a pass searched */
} SpillPhaseKind;

typedef struct SpillPhase
{
	SpillPhaseKind kind;
	int			pass;
	int			in_stage;
	int			in_files;		/* per writer */
	int			out_stage;
	int			out_files;		/* per writer */
} SpillPhase;

/* What the backend puts in the segment for the workers. */
typedef struct SharedSearch
{
	bool		spilled;		/* the rows in files, not in the segment */
	Size		rows_in_memory; /* spilled: what a process loads at once */
	int			fanout_bits;	/* spilled: a pass's partitions, 2^fanout_bits */
	Size		total_rows;		/* spilled: the rows of a pass, for progress */
	pg_atomic_uint64 rows_searched; /* spilled: of the pass under way */
	SpillPhase	spill_phase[MAX_PHASES];
	bool		stage_written[MAX_STAGES][SIMHASH_PARALLEL_MAX_PROCESSES];
	Size		allocated;		/* room for entries */
	bool		distinct_first; /* clusters: the distinct fingerprints first */
	Size		n_before;		/* entries before that */
	Size		n;				/* entries searched (set by the compaction, if any) */
	int			k;
	int			nblocks;
	int			participants;	/* planned: the workers and the backend */
	int			nphases;
	Barrier		barrier;
	pg_atomic_uint64 next_item[MAX_PHASES];
	SharedFileSet fileset;
	int			nworkers;
	/* Per process (0: the backend, then the workers): seconds working and waiting. */
	double		busy_seconds[SIMHASH_PARALLEL_MAX_PROCESSES];
	double		wait_seconds[SIMHASH_PARALLEL_MAX_PROCESSES];
	int64		pairs_written[FLEXIBLE_ARRAY_MEMBER];	/* per worker; -1: no file */
} SharedSearch;

struct SimhashParallelRun
{
	ParallelContext *pcxt;
	SharedSearch *shared;
	SimhashEntry *entries;
	Size	   *piece_start;
	Size	   *kept;			/* each unit's distinct entries */
};

/* What a process works on: the run's shared memory and where its pairs go. */
typedef struct Participant
{
	int			slot;			/* 0: the backend, then the workers */
	SharedSearch *shared;
	SimhashEntry *entries;
	Size	   *piece_start;
	Size	   *kept;
	SimhashPairFn emit;
	void	   *arg;
} Participant;

/* A worker's side: its pairs file. */
typedef struct PairFile
{
	BufFile    *file;
	int64		count;
} PairFile;

PGDLLEXPORT void simhash_find_all_worker_main(dsm_segment *seg, shm_toc *toc);

static SimhashParallelRun *begin_run(Size n, int workers);
static int	run_participants(SimhashParallelRun *run, Participant *me, Size n);

void
simhash_find_all_parallel_init(void)
{
	DefineCustomIntVariable("simhash.find_all_parallel_min_rows",
							"Inputs with fewer rows run simhash_find_all and simhash_clusters without parallel workers.",
							"Launching workers costs more than they save on small inputs; 0 lets any input use them.",
							&parallel_min_rows,
							SIMHASH_PARALLEL_MIN_ROWS_DEFAULT, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/* The segment's size for n entries and some workers. */
static Size
segment_bytes(Size n, int workers)
{
	return sizeof(SimhashEntry) * Max(n, 1) + simhash_stripes_piece_bytes(n, workers + 1) +
		KEPT_BYTES + offsetof(SharedSearch, pairs_written) + sizeof(int64) * workers;
}

/*
 * Whether POSIX shared memory (a tmpfs, 64 MB in a Docker container by
 * default) has room for a segment: if not, creating it would be an ERROR
 * where a serial run succeeds.
 */
static bool
shared_memory_has_room(Size bytes)
{
	struct statvfs fs;

	if (dynamic_shared_memory_type != DSM_IMPL_POSIX || statvfs(POSIX_SHM_DIRECTORY, &fs) != 0)
		return true;
	return (uint64) fs.f_bavail * fs.f_frsize > (uint64) bytes + bytes / 8;
}

/* The workers asked for and allowed, before what the rows need. */
static int
allowed_workers(int requested, Size n)
{
	int			workers = requested < 0 ? max_parallel_maintenance_workers :
		Min(requested, max_parallel_maintenance_workers);

	if (workers <= 0 || !simhash_parallel_enough_rows(n))
		return 0;
	if (!IsUnderPostmaster || IsInParallelMode() || IsParallelWorker())
		return 0;
	return Min(workers, SIMHASH_PARALLEL_MAX_PROCESSES - 1);
}

int
simhash_parallel_allowed_workers(int requested, Size n)
{
	return allowed_workers(requested, n);
}

int
simhash_parallel_workers(int requested, Size n)
{
	int			workers = allowed_workers(requested, n);

	if (workers == 0)
		return 0;
	if (!shared_memory_has_room(segment_bytes(n, workers)))
	{
		ereport(DEBUG1,
				errmsg_internal("simhash: no parallel workers, %s has no room for %zu bytes",
								POSIX_SHM_DIRECTORY, segment_bytes(n, workers)));
		return 0;
	}
	return workers;
}

SimhashParallelRun *
simhash_parallel_begin(Size n, int workers, SimhashEntry **entries)
{
	SimhashParallelRun *run = begin_run(n, workers);

	*entries = run->entries;
	return run;
}

bool
simhash_parallel_enough_rows(Size n)
{
	return n >= 2 && n >= (Size) parallel_min_rows;
}

dsm_handle
simhash_parallel_entries_handle(SimhashParallelRun *run, Size *offset)
{
	if (run->pcxt->seg == NULL)
		return DSM_HANDLE_INVALID;
	*offset = (char *) run->entries - (char *) dsm_segment_address(run->pcxt->seg);
	return dsm_segment_handle(run->pcxt->seg);
}

SimhashParallelRun *
simhash_parallel_begin_spilled(int workers, Size rows_in_memory)
{
	SimhashParallelRun *run = begin_run(0, workers);

	run->shared->spilled = true;
	run->shared->rows_in_memory = rows_in_memory;
	return run;
}

/* The segment of a run with room for n entries (none for a spilled run). */
static SimhashParallelRun *
begin_run(Size n, int workers)
{
	SimhashParallelRun *run = palloc0(sizeof(SimhashParallelRun));
	ParallelContext *pcxt;
	Size		shared_bytes = offsetof(SharedSearch, pairs_written) + sizeof(int64) * workers;
	Size		piece_bytes = simhash_stripes_piece_bytes(n, workers + 1);

	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_find_all_worker_main", workers);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(SimhashEntry) * Max(n, 1));
	shm_toc_estimate_chunk(&pcxt->estimator, piece_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, KEPT_BYTES);
	shm_toc_estimate_keys(&pcxt->estimator, 4);
	InitializeParallelDSM(pcxt);

	run->pcxt = pcxt;
	run->shared = shm_toc_allocate(pcxt->toc, shared_bytes);
	memset(run->shared, 0, shared_bytes);
	run->shared->allocated = n;
	run->shared->participants = workers + 1;
	run->shared->nworkers = workers;
	for (int w = 0; w < workers; w++)
		run->shared->pairs_written[w] = -1;
	BarrierInit(&run->shared->barrier, 0);
	for (int p = 0; p < MAX_PHASES; p++)
		pg_atomic_init_u64(&run->shared->next_item[p], 0);
	SharedFileSetInit(&run->shared->fileset, pcxt->seg);
	shm_toc_insert(pcxt->toc, KEY_SHARED, run->shared);
	run->entries = shm_toc_allocate(pcxt->toc, sizeof(SimhashEntry) * Max(n, 1));
	shm_toc_insert(pcxt->toc, KEY_ENTRIES, run->entries);
	run->piece_start = shm_toc_allocate(pcxt->toc, piece_bytes);
	shm_toc_insert(pcxt->toc, KEY_PIECES, run->piece_start);
	run->kept = shm_toc_allocate(pcxt->toc, KEPT_BYTES);
	shm_toc_insert(pcxt->toc, KEY_KEPT, run->kept);
	pg_atomic_init_u64(&run->shared->rows_searched, 0);
	return run;
}

/* The next item of a phase from its counter, or false when none is left. */
static bool
take(SharedSearch *shared, int phase, uint64 count, uint64 step, uint64 *item)
{
	*item = pg_atomic_fetch_add_u64(&shared->next_item[phase], step);
	return *item < count;
}

/* A phase of the distinct fingerprints before the search (clusters). */
static void
distinct_phase(Participant *me, int phase, SimhashWorkspace *work, SimhashStripes *stripes)
{
	SharedSearch *shared = me->shared;
	uint64		units = simhash_stripes_units(stripes);
	uint64		item;

	if (phase == DISTINCT_STRIPES)
		while (take(shared, phase, stripes->nstripes, 1, &item))
			simhash_distinct_partition_stripe(work, stripes, (int) item);
	else if (phase == DISTINCT_UNITS)
		while (take(shared, phase, units, UNITS_PER_TAKE, &item))
		{
			for (uint64 unit = item; unit < Min(units, item + UNITS_PER_TAKE); unit++)
				me->kept[unit] = simhash_distinct_unit(work, stripes, unit, me->emit, me->arg);
			simhash_progress_at(SIMHASH_STAGE_PREPARE, item, units);
		}
	else if (take(shared, phase, 1, 1, &item))
		shared->n = simhash_distinct_compact(stripes, me->kept);
}

/* A phase of a pass of the search: its stripes, or its units. */
static void
search_phase(Participant *me, int phase, SimhashSearch *search, SimhashStripes *stripes)
{
	SharedSearch *shared = me->shared;
	int			first = shared->distinct_first ? DISTINCT_PHASES : 0;
	int			pass = (phase - first) / 2;
	uint64		units = simhash_stripes_units(stripes);
	uint64		total = simhash_search_steps(search, stripes);
	/* The steps of the phases before this one, for progress. */
	uint64		before = pass * (stripes->nstripes + units) + ((phase - first) % 2) * stripes->nstripes;
	uint64		item;

	if ((phase - first) % 2 == 0)
		while (take(shared, phase, stripes->nstripes, 1, &item))
		{
			simhash_partition_stripe(search, pass, stripes, (int) item);
			simhash_progress_at(SIMHASH_STAGE_SEARCH, before + item, total);
		}
	else
		while (take(shared, phase, units, UNITS_PER_TAKE, &item))
		{
			for (uint64 unit = item; unit < Min(units, item + UNITS_PER_TAKE); unit++)
				simhash_search_unit(search, pass, stripes, unit);
			simhash_progress_at(SIMHASH_STAGE_SEARCH, before + item, total);
		}
}

/* ---------- the spilled run ---------- */

/* A process's side of a spilled run: its search and the files it writes. */
typedef struct SpillParticipant
{
	SimhashSpill *spill;
	SimhashEntryFile *out;		/* its files of the stage being written, or NULL */
	int			out_files;
} SpillParticipant;

static void
stage_file_name(char *name, int stage, int writer, int part)
{
	snprintf(name, MAXPGPATH, "simhash-stage%d.%d.%d", stage, writer, part);
}

/* The process's own files of a stage, made at its first item of the phase. */
static SimhashEntryFile *
own_stage_files(Participant *me, SpillParticipant *sp, const SpillPhase *phase)
{
	char		name[MAXPGPATH];

	if (sp->out == NULL)
	{
		sp->out = palloc(sizeof(SimhashEntryFile) * phase->out_files);
		sp->out_files = phase->out_files;
		for (int f = 0; f < phase->out_files; f++)
		{
			stage_file_name(name, phase->out_stage, me->slot, f);
			simhash_entry_file_create_shared(&sp->out[f], &me->shared->fileset, name);
		}
		me->shared->stage_written[phase->out_stage][me->slot] = true;
	}
	return sp->out;
}

/* Before the Barrier: the files written in the phase, for the others to read. */
static void
export_stage_files(SpillParticipant *sp)
{
	if (sp->out == NULL)
		return;
	for (int f = 0; f < sp->out_files; f++)
		simhash_entry_file_export(&sp->out[f]);
	pfree(sp->out);
	sp->out = NULL;
}

/* Opens one writer's file of a stage, or returns false if that writer wrote none. */
static bool
open_stage_file(Participant *me, int stage, int writer, int part, SimhashEntryFile *file,
				char *name)
{
	if (writer >= SIMHASH_PARALLEL_MAX_PROCESSES || !me->shared->stage_written[stage][writer])
		return false;
	stage_file_name(name, stage, writer, part);
	simhash_entry_file_open_shared(file, &me->shared->fileset, name);
	return true;
}

/*
 * Partition `part` of a stage, from every writer's file: into the memory if
 * it fits (returns how many, *overflow unused), else into one temporary
 * file (*overflow, rewound).  With `consume`, each file is deleted once read.
 */
static Size
load_partition(Participant *me, SpillParticipant *sp, int stage, int part, bool consume,
			   SimhashEntryFile *overflow, bool *overflowed)
{
	SharedSearch *shared = me->shared;
	SimhashEntryFile *files = palloc(sizeof(SimhashEntryFile) * shared->participants);
	char	  (*names)[MAXPGPATH] = palloc(MAXPGPATH * shared->participants);
	bool	   *opened = palloc0(sizeof(bool) * shared->participants);
	Size		capacity;
	SimhashEntry *memory = simhash_spill_memory(sp->spill, &capacity);
	Size		total = 0;

	for (int q = 0; q < shared->participants; q++)
		if ((opened[q] = open_stage_file(me, stage, q, part, &files[q], names[q])))
			total += files[q].count;
	*overflowed = total > capacity;
	if (*overflowed)
		simhash_entry_file_create(overflow);
	total = 0;
	for (int q = 0; q < shared->participants; q++)
	{
		if (!opened[q])
			continue;
		if (*overflowed)
		{
			Size		got;

			while ((got = simhash_entry_file_read(&files[q], memory, capacity)) > 0)
				simhash_entry_file_write(overflow, memory, got);
		}
		else
			total += simhash_entry_file_read(&files[q], memory + total, capacity - total);
		simhash_entry_file_close(&files[q]);
		if (consume)
			simhash_shared_file_delete(&shared->fileset, names[q]);
	}
	if (*overflowed)
	{
		total = overflow->count;
		simhash_entry_file_rewind(overflow);
	}
	pfree(files);
	pfree(names);
	pfree(opened);
	return total;
}

/* A partition's distinct entries, to this process's one file of the next stage. */
static void
spill_distinct_item(Participant *me, SpillParticipant *sp, const SpillPhase *phase, int part)
{
	SimhashEntryFile *out = own_stage_files(me, sp, phase);
	SimhashEntryFile overflow;
	bool		overflowed;
	Size		n = load_partition(me, sp, phase->in_stage, part, true, &overflow, &overflowed);
	Size		capacity;
	SimhashEntry *memory = simhash_spill_memory(sp->spill, &capacity);

	if (overflowed)
	{
		simhash_spill_distinct_file(sp->spill, &overflow, me->shared->fanout_bits, me->emit, me->arg, out);
		simhash_entry_file_close(&overflow);
	}
	else
		simhash_entry_file_write(out, memory, simhash_distinct(memory, n, me->emit, me->arg));
}

/* One file of a stage split into this process's partitions of the pass. */
static void
spill_split_item(Participant *me, SpillParticipant *sp, const SpillPhase *phase, uint64 item)
{
	SimhashSortBy by = simhash_spill_pass_order(sp->spill, phase->pass);
	SimhashEntryFile file;
	char		name[MAXPGPATH];

	if (!open_stage_file(me, phase->in_stage, (int) (item / phase->in_files),
						 (int) (item % phase->in_files), &file, name))
		return;
	simhash_spill_split(&file, &by, me->shared->fanout_bits, own_stage_files(me, sp, phase));
	simhash_entry_file_close(&file);
	simhash_shared_file_delete(&me->shared->fileset, name);
}

/* One partition of a pass searched. */
static void
spill_search_item(Participant *me, SpillParticipant *sp, const SpillPhase *phase, int part)
{
	SharedSearch *shared = me->shared;
	SimhashEntryFile overflow;
	bool		overflowed;
	Size		n = load_partition(me, sp, phase->in_stage, part, false, &overflow, &overflowed);
	uint64		searched;

	if (overflowed)
	{
		simhash_spill_search_file(sp->spill, phase->pass, &overflow, shared->fanout_bits);
		simhash_entry_file_close(&overflow);
	}
	else
		simhash_spill_search_memory(sp->spill, phase->pass, n);
	searched = pg_atomic_add_fetch_u64(&shared->rows_searched, n);
	simhash_progress_at(SIMHASH_STAGE_SEARCH, searched,
						(uint64) simhash_spill_passes(sp->spill) * shared->total_rows);
}

/* A phase of a spilled run: its items from the phase's counter. */
static void
spill_phase(Participant *me, SpillParticipant *sp, int p)
{
	SharedSearch *shared = me->shared;
	const SpillPhase *phase = &shared->spill_phase[p];
	int			partitions = 1 << shared->fanout_bits;
	uint64		item;

	switch (phase->kind)
	{
		case SPILL_DISTINCT:
			while (take(shared, p, partitions, 1, &item))
				spill_distinct_item(me, sp, phase, (int) item);
			break;
		case SPILL_SPLIT:
			while (take(shared, p, (uint64) shared->participants * phase->in_files, 1, &item))
				spill_split_item(me, sp, phase, item);
			break;
		case SPILL_SEARCH:
			while (take(shared, p, partitions, 1, &item))
				spill_search_item(me, sp, phase, (int) item);
			break;
	}
	export_stage_files(sp);
}

/*
 * One process's share of the run: phase after phase, stripes or units from
 * the phase's counter, then the Barrier.  The stripes are those of the rows
 * before the distinct step, then those of the rows searched.
 */
static void
participate(Participant *me)
{
	SharedSearch *shared = me->shared;
	int			phase = BarrierAttach(&shared->barrier);
	int			first = shared->distinct_first ? DISTINCT_PHASES : 0;
	int			slot = me->slot;
	SimhashBlocks layout;
	SimhashStripes stripes;
	SimhashSearch search;
	SimhashWorkspace work;
	bool		have_work = false;
	bool		have_search = false;
	instr_time	start;
	instr_time	arrived;
	instr_time	released;

	SpillParticipant sp = {0};

	simhash_blocks_init(&layout, shared->nblocks);
	if (shared->spilled)
	{
		sp.spill = simhash_spill_begin(shared->k, shared->nblocks, shared->rows_in_memory,
									   shared->total_rows, me->emit, me->arg);
		simhash_spill_report(sp.spill, false);
	}
	INSTR_TIME_SET_CURRENT(start);
	while (phase < shared->nphases)
	{
		if (shared->spilled)
			spill_phase(me, &sp, phase);
		else if (phase < first)
		{
			if (!have_work)
			{
				simhash_stripes_init(&stripes, me->entries, shared->n_before, shared->participants,
									 me->piece_start);
				simhash_workspace_init(&work, &stripes);
				have_work = true;
			}
			distinct_phase(me, phase, &work, &stripes);
		}
		else
		{
			if (have_work)
				simhash_workspace_free(&work);
			have_work = false;
			if (!have_search)
			{
				simhash_stripes_init(&stripes, me->entries, shared->n, shared->participants,
									 me->piece_start);
				simhash_search_init(&search, shared->k, &layout, 0, &stripes, me->emit, me->arg);
				have_search = true;
			}
			search_phase(me, phase, &search, &stripes);
		}
		INSTR_TIME_SET_CURRENT(arrived);
		BarrierArriveAndWait(&shared->barrier, PG_WAIT_EXTENSION);
		INSTR_TIME_SET_CURRENT(released);
		shared->busy_seconds[slot] += simhash_seconds_between(start, arrived);
		shared->wait_seconds[slot] += simhash_seconds_between(arrived, released);
		start = released;
		phase++;
	}
	BarrierDetach(&shared->barrier);
	if (have_work)
		simhash_workspace_free(&work);
	if (have_search)
		simhash_search_free(&search);
	if (sp.spill != NULL)
		simhash_spill_end(sp.spill);
}

static void
pair_file_name(char *name, int worker)
{
	snprintf(name, MAXPGPATH, "simhash-pairs.%d", worker);
}

static void
write_pair(void *arg, uint64 key1, uint64 key2, int distance)
{
	PairFile   *out = arg;
	char		record[PAIR_BYTES];
	int32		d = distance;

	memcpy(record, &key1, sizeof(uint64));
	memcpy(record + sizeof(uint64), &key2, sizeof(uint64));
	memcpy(record + 2 * sizeof(uint64), &d, sizeof(int32));
	BufFileWrite(out->file, record, PAIR_BYTES);
	out->count++;
}

void
simhash_find_all_worker_main(dsm_segment *seg, shm_toc *toc)
{
	SharedSearch *shared = shm_toc_lookup(toc, KEY_SHARED, false);
	char		name[MAXPGPATH];
	PairFile	out;
	Participant me = {
		.slot = Min(ParallelWorkerNumber + 1, SIMHASH_PARALLEL_MAX_PROCESSES - 1),
		.shared = shared,
		.entries = shm_toc_lookup(toc, KEY_ENTRIES, false),
		.piece_start = shm_toc_lookup(toc, KEY_PIECES, false),
		.kept = shm_toc_lookup(toc, KEY_KEPT, false),
		.emit = write_pair,
		.arg = &out,
	};

	SharedFileSetAttach(&shared->fileset, seg);
	pair_file_name(name, ParallelWorkerNumber);
	out.file = simhash_shared_file_create(&shared->fileset, name);
	out.count = 0;
	participate(&me);
	simhash_shared_file_export(out.file);
	BufFileClose(out.file);
	shared->pairs_written[ParallelWorkerNumber] = out.count;
}

/* Emits the pairs a worker wrote. */
static void
emit_worker_pairs(SharedSearch *shared, int worker, SimhashPairFn emit, void *arg)
{
	char		name[MAXPGPATH];
	char	   *records = palloc(PAIR_BYTES * PAIRS_PER_READ);
	BufFile    *file;
	int64		left = shared->pairs_written[worker];

	pair_file_name(name, worker);
	file = simhash_shared_file_open(&shared->fileset, name);
	while (left > 0)
	{
		int64		batch = Min(left, PAIRS_PER_READ);

		simhash_buffile_read(file, records, PAIR_BYTES * batch);
		left -= batch;
		for (int64 r = 0; r < batch; r++)
		{
			const char *record = records + r * PAIR_BYTES;
			uint64		key1;
			uint64		key2;
			int32		distance;

			memcpy(&key1, record, sizeof(uint64));
			memcpy(&key2, record + sizeof(uint64), sizeof(uint64));
			memcpy(&distance, record + 2 * sizeof(uint64), sizeof(int32));
			emit(arg, key1, key2, distance);
		}
		CHECK_FOR_INTERRUPTS();
		simhash_progress_at(SIMHASH_STAGE_OUTPUT, shared->pairs_written[worker] - left,
							shared->pairs_written[worker]);
	}
	BufFileClose(file);
	pfree(records);
}

int
simhash_parallel_find_pairs(SimhashParallelRun *run, Size n, int k, int blocks, bool distinct_first,
							SimhashPairFn emit, void *arg)
{
	SharedSearch *shared = run->shared;
	SimhashBlocks layout;
	Participant me = {
		.slot = 0,
		.shared = shared,
		.entries = run->entries,
		.piece_start = run->piece_start,
		.kept = run->kept,
		.emit = emit,
		.arg = arg,
	};

	Assert(n <= shared->allocated);
	simhash_check_blocks(k, blocks);
	simhash_blocks_init(&layout, blocks);
	shared->distinct_first = distinct_first;
	shared->n_before = shared->n = n;
	shared->k = k;
	shared->nblocks = blocks;
	shared->nphases = (distinct_first ? DISTINCT_PHASES : 0) + 2 * simhash_search_passes(&layout, k);
	return run_participants(run, &me, n);
}

/* Launches the workers, takes part, waits for them and emits their pairs. */
static int
run_participants(SimhashParallelRun *run, Participant *me, Size n)
{
	SharedSearch *shared = run->shared;
	int			launched;

	LaunchParallelWorkers(run->pcxt);
	launched = run->pcxt->nworkers_launched;
	ereport(DEBUG1,
			errmsg_internal("simhash: %d of %d parallel workers launched for %zu rows%s",
							launched, shared->nworkers, n, shared->spilled ? " (spilled)" : ""));
	participate(me);

	WaitForParallelWorkersToFinish(run->pcxt);
	for (int p = 0; p <= Min(launched, SIMHASH_PARALLEL_MAX_PROCESSES - 1); p++)
		ereport(DEBUG1,
				errmsg_internal("simhash: process %d searched %.3f s and waited %.3f s at the barrier",
								p, shared->busy_seconds[p], shared->wait_seconds[p]));
	simhash_progress_at(SIMHASH_STAGE_OUTPUT, 0, 0);
	for (int worker = 0; worker < launched; worker++)
		if (shared->pairs_written[worker] >= 0)
			emit_worker_pairs(shared, worker, me->emit, me->arg);
	return launched;
}

/* Partitions of a pass: each about half what a process holds, at least four per process. */
static int
spill_fanout_bits(Size n, Size rows_in_memory, int participants)
{
	int			bits = 1;

	while (bits < SPILL_MAX_FANOUT_BITS &&
		   ((n >> bits) > rows_in_memory / 2 || (1 << bits) < 4 * participants))
		bits++;
	return bits;
}

/* The phases of a spilled run: stage 0 is the backend's split of its rows. */
static int
plan_spill_phases(SharedSearch *shared, int npasses, bool distinct_first)
{
	int			partitions = 1 << shared->fanout_bits;
	int			nphases = 0;
	int			stage = 0;
	int			files = partitions;	/* per writer of the current stage */

	if (distinct_first)
	{
		shared->spill_phase[nphases++] = (SpillPhase) {
			.kind = SPILL_DISTINCT, .in_stage = 0, .in_files = partitions, .out_stage = 1, .out_files = 1};
		stage = 1;
		files = 1;
	}
	for (int pass = 0; pass < npasses; pass++)
	{
		/* Stage 0 of find_all is already split by pass 0's order. */
		if (pass > 0 || distinct_first)
		{
			shared->spill_phase[nphases++] = (SpillPhase) {
				.kind = SPILL_SPLIT, .pass = pass, .in_stage = stage, .in_files = files,
				.out_stage = stage + 1, .out_files = partitions};
			stage++;
			files = partitions;
		}
		shared->spill_phase[nphases++] = (SpillPhase) {
			.kind = SPILL_SEARCH, .pass = pass, .in_stage = stage, .in_files = partitions};
	}
	return nphases;
}

int
simhash_parallel_spill_find_pairs(SimhashParallelRun *run, SimhashEntryFile *input, int k,
								  int blocks, bool distinct_first, SimhashPairFn emit, void *arg)
{
	SharedSearch *shared = run->shared;
	SimhashBlocks layout;
	SimhashSortBy first_order = {.mask = ~UINT64CONST(0)};
	SimhashEntryFile *stage0;
	char		name[MAXPGPATH];
	Participant me = {.slot = 0, .shared = shared, .kept = run->kept, .emit = emit, .arg = arg};

	simhash_check_blocks(k, blocks);
	simhash_blocks_init(&layout, blocks);
	shared->k = k;
	shared->nblocks = blocks;
	shared->total_rows = input->count;
	shared->fanout_bits = spill_fanout_bits(input->count, shared->rows_in_memory, shared->participants);
	shared->nphases = plan_spill_phases(shared, simhash_search_passes(&layout, k), distinct_first);

	/* Stage 0: the backend's rows by the first phase's order, before any worker starts. */
	if (!distinct_first)
		first_order.mask = layout.mask[0];	/* pass 0 is block 0's */
	stage0 = palloc(sizeof(SimhashEntryFile) << shared->fanout_bits);
	for (int f = 0; f < 1 << shared->fanout_bits; f++)
	{
		stage_file_name(name, 0, 0, f);
		simhash_entry_file_create_shared(&stage0[f], &shared->fileset, name);
	}
	simhash_spill_split(input, &first_order, shared->fanout_bits, stage0);
	simhash_entry_file_close(input);
	for (int f = 0; f < 1 << shared->fanout_bits; f++)
		simhash_entry_file_export(&stage0[f]);
	pfree(stage0);
	shared->stage_written[0][0] = true;
	return run_participants(run, &me, shared->total_rows);
}

void
simhash_parallel_end(SimhashParallelRun *run)
{
	DestroyParallelContext(run->pcxt);
	ExitParallelMode();
	pfree(run);
}
