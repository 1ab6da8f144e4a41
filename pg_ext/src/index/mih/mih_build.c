/*
 * mih_build.c — CREATE INDEX for simhash_mih, in the backend alone or with
 * parallel workers, and the empty index of an unlogged table.
 *
 * A build is one or more participants, each scanning blocks of the table
 * (all of them, or those a parallel scan hands it) into a sorter of its
 * own (mih_sort.h) with maintenance_work_mem / participants of memory,
 * spilling sorted chunks past it; then every participant's chunks are
 * merged, run by run, into one run set: by the backend running CREATE
 * INDEX alone, or, in a parallel build, by every participant at once, a run
 * each.  The run pages are written without WAL and logged whole at the end.
 *
 * The parallel build works as PostgreSQL's btree (nbtsort.c) and, from 18,
 * GIN build in parallel: a ParallelContext, a parallel scan of the table
 * that hands its blocks out to the workers and the leader alike, each
 * spilling its sorted chunks to temporary files of a SharedFileSet.  Then
 * the runs are merged at once, each by one process taking it from a
 * counter: the leader's straight into the index, a worker's into a file of
 * page images the leader copies in (the merge and the packing of pages,
 * most of a build's time after the scan, are no longer one process's
 * alone).
 *
 * The number of workers comes from the planner (plan_create_index_workers:
 * max_parallel_maintenance_workers, the table's size and parallel_workers
 * setting), as for btree: PostgreSQL 17 and later ask it for us
 * (amcanbuildparallel), older ones from ambuild (pg_compat.h).  A build that
 * gets no worker, or no shared memory, runs in the backend alone.
 *
 * An ERROR in a worker is rethrown in the leader; an ERROR or a cancel in
 * the leader ends the workers (the ParallelContext goes with the
 * transaction), and the SharedFileSet's files with the segment.
 *
 * Layer (mih.h): above mih_utils.c, mih_scope.c, mih_runs.c and mih_sort.c.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"
#include "access/parallel.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/buffile.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

/*
 * The build's subphases in pg_stat_progress_create_index (after PostgreSQL's
 * own 1, "initializing"): the scan, then the merge that writes the runs.
 */
#define MIH_BUILD_PHASE_SCAN 2
#define MIH_BUILD_PHASE_WRITE 3

/* What a participant scans into. */
typedef struct MihBuildState
{
	MihScope	scope;
	MihSorter  *sorter;
	double		indtuples;
} MihBuildState;

/* What the leader learns of the workers: at the end of their scans, and of their merges. */
typedef struct MihWorkersDone
{
	double		reltuples;
	double		indtuples;
	bool		brokenhotchain;
	int64		chunks;
	int64		spilled_bytes;
	Size		peak_bytes;		/* the most any worker held */
} MihWorkersDone;

/* The memory of each of a build's participants: maintenance_work_mem shared out. */
static Size
mih_build_budget(int participants)
{
	return (Size) maintenance_work_mem * 1024 / Max(participants, 1);
}

/*
 * The rows each participant may expect: the table's estimate (pg_class, as
 * VACUUM or ANALYZE left it) shared out; 0 when there is none.
 */
static double
mih_build_expected_rows(Relation heap, int participants)
{
	return heap->rd_rel->reltuples > 0 ? heap->rd_rel->reltuples / Max(participants, 1) : 0;
}

static void
mih_build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				   bool tupleIsAlive, void *arg)
{
	MihBuildState *state = (MihBuildState *) arg;
	uint64		fp;

	if (mih_fold(&state->scope, values, isnull, &fp))
	{
		mih_sorter_add(state->sorter, fp, tid);
		state->indtuples++;
	}
}

/*
 * Scans the table (the blocks a parallel scan hands out, with `scan`) into
 * state's sorter; returns the heap rows seen.
 */
static double
mih_build_scan(Relation heap, Relation index, IndexInfo *indexInfo, TableScanDesc scan, bool progress,
			   MihBuildState *state)
{
	return table_index_build_scan(heap, index, indexInfo, true, progress, mih_build_callback, state, scan);
}

/* The shm_toc keys of the build's segment. */
#define KEY_SHARED UINT64CONST(0x53484D4942550001)
#define KEY_SCAN UINT64CONST(0x53484D4942550002)
#define KEY_QUERY_TEXT UINT64CONST(0x53484D4942550003)
#define KEY_WAL_USAGE UINT64CONST(0x53484D4942550004)
#define KEY_BUFFER_USAGE UINT64CONST(0x53484D4942550005)

/* What the leader and the workers share. */
typedef struct MihBuildShared
{
	/* Set before the workers start. */
	Oid			heaprelid;
	Oid			indexrelid;
	bool		isconcurrent;
	simhash_query_id queryid;
	Size		worker_budget;	/* bytes of rows each worker's sorter holds */
	int			nworkers;		/* asked for: nchunks has room for them and the leader */
	int			ntables;		/* runs to merge */
	SharedFileSet fileset;		/* every process's spilled chunks, the workers' runs' pages */
	/* Each worker signals it when its scan is done. */
	ConditionVariable workersdonecv;
	/* The leader signals the merge open; a process, each run it merged. */
	ConditionVariable mergecv;
	pg_atomic_uint32 next_run;	/* the next run to merge */
	slock_t		mutex;			/* protects what follows */
	int			nworkersdone;
	MihWorkersDone done;
	bool		merging;		/* every process has spilled: the runs may be merged */
	int			nprocesses;		/* the workers started and the leader: whose chunks to merge */
	int			nrunsdone;
	int32		run_by[MIH_MAX_TABLES];	/* who merged each run: a worker's number, or -1 the leader */
	int64		run_rows[MIH_MAX_TABLES];
	BlockNumber run_pages[MIH_MAX_TABLES];
	int32		nchunks[FLEXIBLE_ARRAY_MEMBER]; /* per process (the leader after the workers): chunks spilled */
} MihBuildShared;

typedef struct MihBuildLeader
{
	ParallelContext *pcxt;
	MihBuildShared *shared;
	ParallelTableScanDesc scan;
	Snapshot	snapshot;
	WalUsage   *walusage;
	BufferUsage *bufferusage;
	int			request;
} MihBuildLeader;

PGDLLEXPORT void simhash_mih_build_worker_main(dsm_segment *seg, shm_toc *toc);
static void mih_end_parallel(MihBuildLeader *leader, MihWorkersDone *done);

/*
 * Starts the workers of a build (at most `request`); NULL when none could
 * be started (the caller builds alone).  isconcurrent: CREATE INDEX
 * CONCURRENTLY or REINDEX CONCURRENTLY, which index what an MVCC snapshot
 * sees; other builds see every row (SnapshotAny) and judge each as index.c does.
 */
static MihBuildLeader *
mih_begin_parallel(Relation heap, Relation index, bool isconcurrent, int request)
{
	MihBuildLeader *leader = palloc0(sizeof(MihBuildLeader));
	ParallelContext *pcxt;
	Snapshot	snapshot;
	Size		shared_bytes = add_size(offsetof(MihBuildShared, nchunks), mul_size(sizeof(int32), request + 1));
	Size		scan_bytes;
	Size		query_bytes = debug_query_string ? strlen(debug_query_string) + 1 : 0;
	MihBuildShared *shared;

	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_mih_build_worker_main", request);
	snapshot = isconcurrent ? RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;
	scan_bytes = table_parallelscan_estimate(heap, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, scan_bytes);
	/* Each worker's WAL and buffer usage, added to the leader's (EXPLAIN, pg_stat_statements). */
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(WalUsage), pcxt->nworkers));
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(BufferUsage), pcxt->nworkers));
	shm_toc_estimate_keys(&pcxt->estimator, 4);
	if (query_bytes)
	{
		shm_toc_estimate_chunk(&pcxt->estimator, query_bytes);
		shm_toc_estimate_keys(&pcxt->estimator, 1);
	}
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		/* No dynamic shared memory to be had: a build of the backend alone. */
		if (IsMVCCSnapshot(snapshot))
			UnregisterSnapshot(snapshot);
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return NULL;
	}

	shared = shm_toc_allocate(pcxt->toc, shared_bytes);
	memset(shared, 0, shared_bytes);
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->isconcurrent = isconcurrent;
	shared->queryid = pgstat_get_my_query_id();
	shared->worker_budget = mih_build_budget(request + 1);
	shared->nworkers = request;
	shared->ntables = mih_runs_of(index);
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	ConditionVariableInit(&shared->workersdonecv);
	ConditionVariableInit(&shared->mergecv);
	pg_atomic_init_u32(&shared->next_run, 0);
	SpinLockInit(&shared->mutex);
	shm_toc_insert(pcxt->toc, KEY_SHARED, shared);
	leader->scan = shm_toc_allocate(pcxt->toc, scan_bytes);
	table_parallelscan_initialize(heap, leader->scan, snapshot);
	shm_toc_insert(pcxt->toc, KEY_SCAN, leader->scan);
	leader->walusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(WalUsage), pcxt->nworkers));
	shm_toc_insert(pcxt->toc, KEY_WAL_USAGE, leader->walusage);
	leader->bufferusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(BufferUsage), pcxt->nworkers));
	shm_toc_insert(pcxt->toc, KEY_BUFFER_USAGE, leader->bufferusage);
	if (query_bytes)
	{
		char	   *query = shm_toc_allocate(pcxt->toc, query_bytes);

		memcpy(query, debug_query_string, query_bytes);
		shm_toc_insert(pcxt->toc, KEY_QUERY_TEXT, query);
	}

	LaunchParallelWorkers(pcxt);
	leader->pcxt = pcxt;
	leader->shared = shared;
	leader->snapshot = snapshot;
	leader->request = request;
	if (pcxt->nworkers_launched == 0)
	{
		mih_end_parallel(leader, NULL);
		return NULL;
	}
	return leader;
}

/* The processes scanning: the workers started and the leader. */
static int
mih_parallel_participants(const MihBuildLeader *leader)
{
	return leader->pcxt->nworkers_launched + 1;
}

static int
mih_parallel_requested(const MihBuildLeader *leader)
{
	return leader->request;
}

/* Where the leader spills, as every process does: the build's SharedFileSet, under its number. */
static SharedFileSet *
mih_parallel_fileset(const MihBuildLeader *leader)
{
	return &leader->shared->fileset;
}

static int
mih_parallel_leader_number(const MihBuildLeader *leader)
{
	return leader->pcxt->nworkers_launched;
}

/* The name of the file of a worker's run t's pages. */
static void
images_name(char *name, int t)
{
	snprintf(name, MAXPGPATH, "simhash_mih.pages.%d", t);
}

/*
 * Merges the runs left to merge (from the shared counter), each from every
 * process's chunks, into `images` files (a worker) or the index (the
 * leader, images false: its runs' heads and page counts into *set).
 */
static void
merge_runs(MihBuildShared *shared, Relation index, MihSorter *sorter, Size budget, bool images,
		   MihRunSet *set)
{
	MihSpilled	spilled = {&shared->fileset, shared->nprocesses, shared->nchunks};
	uint32		t;

	while ((t = pg_atomic_fetch_add_u32(&shared->next_run, 1)) < (uint32) shared->ntables)
	{
		MihRunWriter writer;
		BlockNumber npages;
		BlockNumber head;
		int64		rows;
		char		name[MAXPGPATH];

		mih_run_writer_begin(&writer, index, t == 0, false);
		images_name(name, t);
		if (images)
			writer.images = simhash_shared_file_create(&shared->fileset, name);
		rows = mih_sorter_merge_run(sorter, t, &spilled, budget, &writer);
		head = mih_run_writer_end(&writer, &npages);
		if (images)
			BufFileClose(writer.images);	/* closed, kept: the leader reads it by name */
		if (!images)
		{
			set->dir_head[t] = head;
			set->npages[t] = npages;
		}
		SpinLockAcquire(&shared->mutex);
		shared->run_by[t] = images ? ParallelWorkerNumber : -1;
		shared->run_rows[t] = rows;
		shared->run_pages[t] = npages;
		shared->nrunsdone++;
		SpinLockRelease(&shared->mutex);
		ConditionVariableBroadcast(&shared->mergecv);
	}
}

/*
 * The leader's part of the merge: opens it (every process has spilled its
 * chunks, the leader's `nchunks` among them), merges the runs it takes into
 * the index, waits for the workers' and copies their pages in.  Returns the
 * run set.
 */
static MihRunSet
mih_parallel_write_set(MihBuildLeader *leader, Relation index, MihSorter *sorter, int32 nchunks)
{
	MihBuildShared *shared = leader->shared;
	MihRunSet	set;

	memset(&set, 0, sizeof(set));
	SpinLockAcquire(&shared->mutex);
	shared->nchunks[mih_parallel_leader_number(leader)] = nchunks;
	shared->nprocesses = mih_parallel_participants(leader);
	shared->merging = true;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->mergecv);
	merge_runs(shared, index, sorter, mih_build_budget(mih_parallel_participants(leader)), false, &set);
	for (;;)
	{
		bool		all;

		SpinLockAcquire(&shared->mutex);
		all = shared->nrunsdone == shared->ntables;
		SpinLockRelease(&shared->mutex);
		if (all)
			break;
		ConditionVariableSleep(&shared->mergecv, WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
	}
	ConditionVariableCancelSleep();
	for (int t = 0; t < shared->ntables; t++)
		if (shared->run_by[t] >= 0)
		{
			char		name[MAXPGPATH];
			BufFile    *images;

			images_name(name, t);
			images = simhash_shared_file_open(&shared->fileset, name);
			set.dir_head[t] = mih_run_copy_images(index, images, &set.npages[t]);
			BufFileClose(images);
			simhash_shared_file_delete(&shared->fileset, name);
			if (set.npages[t] != shared->run_pages[t])
				elog(ERROR, "simhash_mih: run %d has %u pages in its file, its worker wrote %u",
					 t, set.npages[t], shared->run_pages[t]);
		}
	set.nentries = shared->run_rows[0];
	return set;
}

/*
 * The leader's part of the scan: scans its share of the table into state's
 * sorter and spills it all (*nchunks), then waits for every worker's scan to
 * end; returns the heap rows seen by all.  Sets *done to what the workers
 * report, and indexInfo's broken HOT chain flag if any worker saw one
 * (CREATE INDEX then marks the index as index.c would for a build of its own).
 */
static double
mih_parallel_scan(MihBuildLeader *leader, Relation heap, Relation index, IndexInfo *indexInfo,
				  MihBuildState *state, int32 *nchunks, MihWorkersDone *done)
{
	MihBuildShared *shared = leader->shared;
	int			launched = leader->pcxt->nworkers_launched;
	double		reltuples = mih_build_scan(heap, index, indexInfo,
										   table_beginscan_parallel(heap, leader->scan), true, state);

	*nchunks = mih_sorter_hand_over(state->sorter);
	/* A worker that failed to start is an ERROR here, not a wait forever below. */
	WaitForParallelWorkersToAttach(leader->pcxt);
	for (;;)
	{
		SpinLockAcquire(&shared->mutex);
		if (shared->nworkersdone == launched)
		{
			*done = shared->done;
			SpinLockRelease(&shared->mutex);
			break;
		}
		SpinLockRelease(&shared->mutex);
		ConditionVariableSleep(&shared->workersdonecv, WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
	}
	ConditionVariableCancelSleep();
	if (done->brokenhotchain)
		indexInfo->ii_BrokenHotChain = true;
	return reltuples + done->reltuples;
}

/*
 * Ends the workers (after the leader has read their files), parallel mode
 * and its snapshot; *done (if not NULL): what the workers report at their end.
 */
static void
mih_end_parallel(MihBuildLeader *leader, MihWorkersDone *done)
{
	WaitForParallelWorkersToFinish(leader->pcxt);
	if (done)
		*done = leader->shared->done;	/* every worker has written its part */
	for (int i = 0; i < leader->pcxt->nworkers_launched; i++)
		InstrAccumParallelQuery(&leader->bufferusage[i], &leader->walusage[i]);
	if (IsMVCCSnapshot(leader->snapshot))
		UnregisterSnapshot(leader->snapshot);
	DestroyParallelContext(leader->pcxt);
	ExitParallelMode();
}

/* A worker: its share of the scan, sorted and spilled, handed over to the leader. */
void
simhash_mih_build_worker_main(dsm_segment *seg, shm_toc *toc)
{
	MihBuildShared *shared = shm_toc_lookup(toc, KEY_SHARED, false);
	ParallelTableScanDesc scan = shm_toc_lookup(toc, KEY_SCAN, false);
	LOCKMODE	heap_lock = shared->isconcurrent ? ShareUpdateExclusiveLock : ShareLock;
	LOCKMODE	index_lock = shared->isconcurrent ? RowExclusiveLock : AccessExclusiveLock;
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	MihBuildState state;
	MihSortStats stats;
	double		reltuples;
	int32		nchunks;

	debug_query_string = shm_toc_lookup(toc, KEY_QUERY_TEXT, true);
	pgstat_report_activity(STATE_RUNNING, debug_query_string);
	pgstat_report_query_id(shared->queryid, false);
	/* The locks index.c took in the leader: granted at once within its lock group. */
	heap = table_open(shared->heaprelid, heap_lock);
	index = index_open(shared->indexrelid, index_lock);
	indexInfo = BuildIndexInfo(index);
	indexInfo->ii_Concurrent = shared->isconcurrent;
	SharedFileSetAttach(&shared->fileset, seg);

	InstrStartParallelQuery();
	memset(&state, 0, sizeof(state));
	mih_scope_init(&state.scope, index);
	state.sorter = mih_sorter_begin(mih_runs_of(index), shared->worker_budget, &shared->fileset,
									ParallelWorkerNumber, mih_build_expected_rows(heap, shared->nworkers + 1));
	reltuples = mih_build_scan(heap, index, indexInfo, table_beginscan_parallel(heap, scan), false, &state);
	nchunks = mih_sorter_hand_over(state.sorter);
	/* What the leader waits for before it opens the merge. */
	SpinLockAcquire(&shared->mutex);
	shared->nchunks[ParallelWorkerNumber] = nchunks;
	shared->done.reltuples += reltuples;
	shared->done.indtuples += state.indtuples;
	shared->done.brokenhotchain |= indexInfo->ii_BrokenHotChain;
	shared->nworkersdone++;
	SpinLockRelease(&shared->mutex);
	ConditionVariableSignal(&shared->workersdonecv);

	/* The merge: open once every process has spilled; then runs, while any is left. */
	for (;;)
	{
		bool		merging;

		SpinLockAcquire(&shared->mutex);
		merging = shared->merging;
		SpinLockRelease(&shared->mutex);
		if (merging)
			break;
		ConditionVariableSleep(&shared->mergecv, WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
	}
	ConditionVariableCancelSleep();
	merge_runs(shared, index, state.sorter, shared->worker_budget, true, NULL);
	mih_sorter_end(state.sorter, &stats);
	SpinLockAcquire(&shared->mutex);
	shared->done.chunks += stats.chunks;
	shared->done.spilled_bytes += stats.spilled_bytes;
	shared->done.peak_bytes = Max(shared->done.peak_bytes, stats.peak_bytes);
	SpinLockRelease(&shared->mutex);

	InstrEndParallelQuery(&((BufferUsage *) shm_toc_lookup(toc, KEY_BUFFER_USAGE, false))[ParallelWorkerNumber],
						  &((WalUsage *) shm_toc_lookup(toc, KEY_WAL_USAGE, false))[ParallelWorkerNumber]);
	index_close(index, index_lock);
	table_close(heap, heap_lock);
}

char *
mih_build_phase_name(int64 phase)
{
	switch (phase)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case MIH_BUILD_PHASE_SCAN:
			return "scanning table";
		case MIH_BUILD_PHASE_WRITE:
			return "writing runs";
		default:
			return NULL;
	}
}

static const char *
megabytes(double bytes)
{
	return psprintf("%.1f MB", bytes / (1024.0 * 1024.0));
}

IndexBuildResult *
mih_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	int			runs = mih_runs_of(index);
	int			request;
	MihBuildLeader *leader = NULL;
	MihBuildState state;
	int32		nchunks = 0;
	MihWorkersDone done = {0};
	MihSortStats stats;
	MihRunSet	set;
	Buffer		buffer;
	GenericXLogState *xlog;
	double		reltuples;
	int			participants;
	instr_time	start,
				scanned,
				written,
				logged;

	INSTR_TIME_SET_CURRENT(start);
	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	mih_scope_check_columns(index);
	mih_init_meta(index, MAIN_FORKNUM, runs, IndexRelationGetNumberOfKeyAttributes(index) - 1);

	request = simhash_index_build_workers(heap, index, indexInfo);
	if (request > 0)
		leader = mih_begin_parallel(heap, index, indexInfo->ii_Concurrent, request);
	memset(&state, 0, sizeof(state));
	mih_scope_init(&state.scope, index);
	participants = leader ? mih_parallel_participants(leader) : 1;
	state.sorter = mih_sorter_begin(runs, mih_build_budget(participants), leader ? mih_parallel_fileset(leader) : NULL,
									leader ? mih_parallel_leader_number(leader) : -1,
									mih_build_expected_rows(heap, participants));
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_BUILD_PHASE_SCAN);
	if (leader)
		reltuples = mih_parallel_scan(leader, heap, index, indexInfo, &state, &nchunks, &done);
	else
		reltuples = mih_build_scan(heap, index, indexInfo, NULL, true, &state);
	INSTR_TIME_SET_CURRENT(scanned);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_BUILD_PHASE_WRITE);
	set = leader ? mih_parallel_write_set(leader, index, state.sorter, nchunks) :
		mih_sorter_write_set(state.sorter, index, false, mih_build_budget(1));
	buffer = ReadBuffer(index, 0);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	xlog = GenericXLogStart(index);
	mih_meta_add_set(mih_meta_for_update(xlog, buffer), &set);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buffer);
	INSTR_TIME_SET_CURRENT(written);
	/* The run pages went unlogged (mih_write_page): logged now, 32 pages a record, as GIN's build does. */
	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index), true);
	mih_sorter_end(state.sorter, &stats);
	INSTR_TIME_SET_CURRENT(logged);
	INSTR_TIME_SUBTRACT(logged, written);
	INSTR_TIME_SUBTRACT(written, scanned);
	INSTR_TIME_SUBTRACT(scanned, start);

	if (leader)
		mih_end_parallel(leader, &done);
	/* What the build did, for tests (workers really used, spilling) and tuning. */
	ereport(DEBUG1,
			errmsg_internal("simhash_mih: index \"%s\" built by %d processes (%d parallel workers requested): " INT64_FORMAT " rows, " INT64_FORMAT " chunks spilled (%s), %d merge passes, peak sort memory %s in the leader, %s in a worker; scan %.2f s, runs %.2f s, WAL %.2f s; the leader's radix sorts %.2f s",
							RelationGetRelationName(index), leader ? mih_parallel_participants(leader) : 1,
							leader ? mih_parallel_requested(leader) : 0, set.nentries,
							stats.chunks + done.chunks, megabytes(stats.spilled_bytes + done.spilled_bytes),
							stats.merge_passes, megabytes(stats.peak_bytes), megabytes(done.peak_bytes),
							INSTR_TIME_GET_DOUBLE(scanned), INSTR_TIME_GET_DOUBLE(written),
							INSTR_TIME_GET_DOUBLE(logged), stats.sort_seconds));
	result->heap_tuples = reltuples;
	result->index_tuples = set.nentries;
	return result;
}

void
mih_buildempty(Relation index)
{
	mih_init_meta(index, INIT_FORKNUM, mih_runs_of(index), IndexRelationGetNumberOfKeyAttributes(index) - 1);
}
