/*
 * mih_worker.c — simhash_mih's background workers, one job a worker
 * (MihJob): the flush of the list an insert sealed (mih_flush.c), handed
 * over by that insert, and merges (mih_merge.c), started after a flush that
 * made one due; where no worker can start (or none may take the index's
 * work: mih_background), the backend does the job itself.  A worker then
 * recycles what it can (mih_try_recycle).  Merge workers run at a lower CPU
 * priority (simhash.mih_merge_nice).
 *
 * Layer (mih.h): above mih_utils.c, mih_runs.c, mih_flush.c and mih_merge.c.
 */
#include "index/mih/mih.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/snapmgr.h"

#ifndef WIN32
#include <sys/resource.h>
#endif

/* A worker's job, and its backend_type (pg_stat_activity). */
typedef enum MihJob
{
	MIH_JOB_MERGE,				/* merges until none is due */
	MIH_JOB_FLUSH				/* flushes the sealed chain, then as after any flush */
} MihJob;

static const char *const mih_job_type[] = {"simhash_mih merge", "simhash_mih flush"};

/* What a worker is told: bgw_extra. */
typedef struct MihWorkerTarget
{
	Oid			database;
	/*
	 * Unused (the role of the insert that started the worker, before 1.3):
	 * kept in its place because the layout is shared across library versions
	 * — after the library is replaced, backends started before still
	 * register workers, and each worker loads the new library.
	 */
	Oid			unused;
	Oid			index;
	int32		job;			/* MihJob */
} MihWorkerTarget;

StaticAssertDecl(sizeof(MihWorkerTarget) <= BGW_EXTRALEN, "the target fits bgw_extra");

PGDLLEXPORT void simhash_mih_worker_main(Datum arg);

/*
 * Whether a worker may take the index's work (flushes, merges, recycling):
 * simhash.mih_background_merges is on, the index is not a temporary table's
 * (it lives in this backend's buffers: no worker can read it), and this
 * transaction neither created it (CREATE TABLE or CREATE INDEX in it) nor
 * gave it new storage (TRUNCATE, REINDEX): until it commits, no worker can
 * lock its table (this transaction's lock conflicts) nor see that storage,
 * so a worker would start and leave, the sealed list waiting for
 * MIH_PENDING_BOUND times the limit; the backend that inserts does the
 * work, as where no worker can start.
 */
bool
mih_background(Relation index)
{
	return mih_background_merges && !RelationUsesLocalBuffers(index) &&
		index->rd_createSubid == InvalidSubTransactionId &&
		simhash_new_storage_subid(index) == InvalidSubTransactionId;
}

/* Starts a worker for the index's job; false when none can start (no free worker slot). */
static bool
mih_start_worker(Relation index, MihJob job)
{
	BackgroundWorker worker;
	MihWorkerTarget target = {MyDatabaseId, InvalidOid, RelationGetRelid(index), job};

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, sizeof(worker.bgw_library_name), "simhash");
	snprintf(worker.bgw_function_name, sizeof(worker.bgw_function_name), "simhash_mih_worker_main");
	snprintf(worker.bgw_name, sizeof(worker.bgw_name), "%s of index %u", mih_job_type[job], target.index);
	snprintf(worker.bgw_type, sizeof(worker.bgw_type), "%s", mih_job_type[job]);
	memcpy(worker.bgw_extra, &target, sizeof(target));
	return RegisterDynamicBackgroundWorker(&worker, NULL);
}

/*
 * After a flush published its set: when a merge is due and a merge slot is
 * free, a worker merges in the background; where none can start (or none
 * may take the index's work: mih_background), or the sets no merge claims
 * reach twice MIH_SET_CAP (merges lag behind flushes), this backend runs one
 * merge itself (in an insert: the one wait a writer may have).
 */
void
mih_after_flush(Relation index)
{
	MihMeta		meta = mih_read_meta(index);
	bool		background = mih_background(index);

	if (!(mih_merge_due(&meta) || mih_stale_claims(index, &meta)) || !mih_slot_free(index))
		return;
	if (background && mih_unclaimed_sets(&meta) < 2 * MIH_SET_CAP && mih_start_worker(index, MIH_JOB_MERGE))
		return;
	mih_merge(index, 1);
	/* what remains due, to a worker if one can start now */
	meta = mih_read_meta(index);
	if (background && mih_merge_due(&meta) && mih_slot_free(index))
		mih_start_worker(index, MIH_JOB_MERGE);
}

/*
 * Hands the sealed chain the caller just sealed to a flush worker; false
 * where none can start (or none may take the index's work: mih_background):
 * the caller flushes it itself.
 */
bool
mih_flush_in_background(Relation index)
{
	return mih_background(index) && mih_start_worker(index, MIH_JOB_FLUSH);
}

/*
 * A merge worker's CPU priority: simhash.mih_merge_nice below the server's
 * (a nice increment; none on Windows).  A merge is long work no one waits
 * for, while a query or an insert is short work someone waits for: on a
 * server with every core busy, one woken while a merge runs otherwise waits
 * for the merge's time slice to end, which was most of the slowest queries'
 * time under writes (bench/bench_mih_writes.py: "core wait").  The merge
 * still gets the cores no one else wants.
 */
static void
mih_lower_merge_priority(void)
{
#ifndef WIN32
	int			now;

	if (mih_merge_nice == 0)
		return;
	errno = 0;
	now = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && setpriority(PRIO_PROCESS, 0, Min(now + mih_merge_nice, 19)) != 0)
		elog(DEBUG1, "simhash_mih: could not lower a merge worker's priority: %m");
#endif
}

/*
 * A worker: connects to the index's database as the bootstrap superuser
 * (as pg_prewarm's autoprewarm worker does: not as the inserting role, which
 * may be one that cannot log in — SET ROLE, a SECURITY DEFINER function's
 * owner, a NOLOGIN table owner — and it runs no user code: no expression, no
 * operator of the table's, only the index's pages; given no role,
 * PostgreSQL checks none, so 17's login check, BGWORKER_BYPASS_ROLELOGINCHECK,
 * does not apply), locks the table as an insert does (a
 * DROP or REINDEX waits for the worker), and does its job: merges until
 * none is due, or flushes the sealed chain (waiting for a flusher that holds
 * the flush lock, which leaves nothing or a chain it failed on) in
 * maintenance_work_mem, as merges sort, then sees to merges as after any
 * flush; then recycles what it can (mih_try_recycle: inserts leave that to
 * workers, unless they did a worker's job).  No snapshot is held while it
 * flushes or merges: they read no table, and a long one must not hold back
 * the recycling horizon.
 */
void
simhash_mih_worker_main(Datum arg)
{
	MihWorkerTarget target;
	Oid			heap;
	Relation	index;

	memcpy(&target, MyBgworkerEntry->bgw_extra, sizeof(target));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(target.database, InvalidOid, 0);
	if (target.job == MIH_JOB_MERGE)
		mih_lower_merge_priority();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, target.job == MIH_JOB_FLUSH ? "simhash_mih: flushing" : "simhash_mih: merging");
	heap = IndexGetRelation(target.index, true);
	if (OidIsValid(heap) && ConditionalLockRelationOid(heap, RowExclusiveLock))
	{
		index = try_relation_open(target.index, RowExclusiveLock);
		InvalidateCatalogSnapshot();
		if (index && index->rd_rel->relkind == RELKIND_INDEX && mih_is_index(index))
		{
			if (target.job == MIH_JOB_FLUSH)
			{
				if (mih_flush(index, maintenance_work_mem, true))
					mih_after_flush(index);
			}
			else
				mih_merge(index, INT_MAX);
			/* the horizon's test (GlobalVisTestFor) needs a snapshot: one of now, for the recycling only */
			PushActiveSnapshot(GetTransactionSnapshot());
			mih_try_recycle(index);
			PopActiveSnapshot();
		}
		if (index)
			relation_close(index, RowExclusiveLock);
		UnlockRelationOid(heap, RowExclusiveLock);
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	CommitTransactionCommand();
}
