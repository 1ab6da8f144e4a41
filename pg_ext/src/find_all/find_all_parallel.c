/*
 * find_all_parallel.c — the search of find_all.h by the backend and
 * parallel workers together (find_all_parallel.h), with PostgreSQL's
 * parallel machinery as parallel CREATE INDEX and parallel hash join use it.
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

/* What the backend puts in the segment for the workers. */
typedef struct SharedSearch
{
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

int
simhash_parallel_workers(int requested, Size n)
{
	int			workers = requested < 0 ? max_parallel_maintenance_workers :
		Min(requested, max_parallel_maintenance_workers);

	if (workers <= 0 || n < 2 || n < (Size) parallel_min_rows)
		return 0;
	if (!IsUnderPostmaster || IsInParallelMode() || IsParallelWorker())
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
	*entries = run->entries;
	return run;
}

static double
seconds_between(instr_time start, instr_time end)
{
	INSTR_TIME_SUBTRACT(end, start);
	return INSTR_TIME_GET_DOUBLE(end);
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
	int			slot = Min(ParallelWorkerNumber + 1, SIMHASH_PARALLEL_MAX_PROCESSES - 1);
	SimhashBlocks layout;
	SimhashStripes stripes;
	SimhashSearch search;
	SimhashWorkspace work;
	bool		have_work = false;
	bool		have_search = false;
	instr_time	start;
	instr_time	arrived;
	instr_time	released;

	simhash_blocks_init(&layout, shared->nblocks);
	INSTR_TIME_SET_CURRENT(start);
	while (phase < shared->nphases)
	{
		if (phase < first)
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
		shared->busy_seconds[slot] += seconds_between(start, arrived);
		shared->wait_seconds[slot] += seconds_between(arrived, released);
		start = released;
		phase++;
	}
	BarrierDetach(&shared->barrier);
	if (have_work)
		simhash_workspace_free(&work);
	if (have_search)
		simhash_search_free(&search);
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
		.shared = shared,
		.entries = run->entries,
		.piece_start = run->piece_start,
		.kept = run->kept,
		.emit = emit,
		.arg = arg,
	};
	int			launched;

	Assert(n <= shared->allocated);
	simhash_check_blocks(k, blocks);
	simhash_blocks_init(&layout, blocks);
	shared->distinct_first = distinct_first;
	shared->n_before = shared->n = n;
	shared->k = k;
	shared->nblocks = blocks;
	shared->nphases = (distinct_first ? DISTINCT_PHASES : 0) + 2 * simhash_search_passes(&layout, k);

	LaunchParallelWorkers(run->pcxt);
	launched = run->pcxt->nworkers_launched;
	ereport(DEBUG1,
			errmsg_internal("simhash: %d of %d parallel workers launched for %zu rows",
							launched, shared->nworkers, n));
	participate(&me);

	WaitForParallelWorkersToFinish(run->pcxt);
	for (int p = 0; p <= Min(launched, SIMHASH_PARALLEL_MAX_PROCESSES - 1); p++)
		ereport(DEBUG1,
				errmsg_internal("simhash: process %d searched %.3f s and waited %.3f s at the barrier",
								p, shared->busy_seconds[p], shared->wait_seconds[p]));
	simhash_progress_at(SIMHASH_STAGE_OUTPUT, 0, 0);
	for (int worker = 0; worker < launched; worker++)
		if (shared->pairs_written[worker] >= 0)
			emit_worker_pairs(shared, worker, emit, arg);
	return launched;
}

void
simhash_parallel_end(SimhashParallelRun *run)
{
	DestroyParallelContext(run->pcxt);
	ExitParallelMode();
	pfree(run);
}
