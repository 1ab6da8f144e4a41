/*
 * mih_build.c — CREATE INDEX for simhash_mih (mih_build.h): the table's rows
 * scanned into sorters (by this backend alone, or with parallel workers:
 * mih_build_parallel.c), merged into one run set whose pages are written
 * without WAL and logged whole at the end; and the empty index of an
 * unlogged table.
 */
#include "index/mih/mih_build.h"

#include "access/generic_xlog.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "portability/instr_time.h"

/* The memory of each of a build's participants: maintenance_work_mem shared out. */
Size
mih_build_budget(int participants)
{
	return (Size) maintenance_work_mem * 1024 / Max(participants, 1);
}

/*
 * The rows each participant may expect: the table's estimate (pg_class, as
 * VACUUM or ANALYZE left it) shared out; 0 when there is none.
 */
double
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
double
mih_build_scan(Relation heap, Relation index, IndexInfo *indexInfo, TableScanDesc scan, bool progress,
			   MihBuildState *state)
{
	return table_index_build_scan(heap, index, indexInfo, true, progress, mih_build_callback, state, scan);
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
