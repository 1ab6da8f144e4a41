/*
 * mih_merge.c — merges of simhash_mih run sets, apart from flushes: the
 * size-tiered merge policy, and merges that claim their sets in the
 * metapage, sort them into one set with no lock held (queries and flushes go
 * on), and publish it in their place under a brief lock.  A dynamic
 * background worker runs them, started by the flush that made a merge due;
 * where none can start, that flush runs one merge itself.  The same workers
 * flush: the insert that seals the pending list starts one for it
 * (mih_insert.c), one job a worker (MihJob).  Up to
 * MIH_MERGE_SLOTS merges run at once, on sets no other merge claims (a long
 * fold of the base, and merges of the small sets flushes keep adding beside
 * it), each holding its slot's heavyweight lock, which an ERROR or crash
 * releases: a merge finding a free slot's claims in the metapage drops them.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#ifndef WIN32
#include <sys/resource.h>
#endif

bool		mih_background_merges = true;
int			mih_merge_nice = MIH_MERGE_NICE_DEFAULT;

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

static bool
mih_is_claimed(const MihMeta *meta, int s)
{
	for (int c = 0; c < meta->nclaimed; c++)
		if (meta->set_id[s] != 0 && meta->claimed_id[c] == meta->set_id[s])
			return true;
	return false;
}

/*
 * The merge policy, size-tiered (as Lucene's TieredMergePolicy): which of
 * the run sets no merge claims to merge into one now; returns how many,
 * marked in `chosen` (0, or 2 and more).  The largest of them is the base.
 * Once the others hold 1 / MIH_FOLD_SHARE of the base's rows, all are merged
 * (the base grows by that share at least each time, so each row is
 * rewritten by folds a bounded number of times: (1 + 1/F) / (1/F) per row
 * inserted, 3 with F = 2).  Otherwise the others are taken smallest first,
 * the first always, then each holding no more rows than what is taken so far
 * (similar sizes: a binary counter's carries, log2 rewrites a row), and
 * further whenever stopping would leave more than MIH_SET_CAP of them, or
 * more than MIH_PROBED_CAP too large for a filter (mih_probed_in_full).
 */
StaticAssertDecl(MIH_SET_CAP >= 2 && MIH_SET_CAP < MIH_MAX_SETS, "the merge policy's cap");
StaticAssertDecl(MIH_PROBED_CAP >= 2 && MIH_PROBED_CAP <= MIH_SET_CAP, "the merge policy's cap on large sets");

/*
 * Whether a query probes a set of `rows` rows with no filter in some run:
 * the narrowest runs' blocks have the fewest bits, and the smallest bound.
 */
static bool
mih_probed_in_full(const MihMeta *meta, int64 rows)
{
	return mih_filter_bits(rows, SIMHASH64_BITS / Max(meta->ntables, 1)) == 0;
}

static int
mih_pick_merge(const MihMeta *meta, bool *chosen)
{
	int			order[MIH_MAX_SETS];
	int			norder = 0;
	int			base = -1;
	int			ncandidates = 0;
	int			count = 0;
	int64		rest = 0;
	int64		merged = 0;
	int			probed = 0;		/* candidates not taken that no filter spares */

	memset(chosen, 0, MIH_MAX_SETS * sizeof(bool));
	for (int s = 0; s < meta->nsets; s++)
		if (!mih_is_claimed(meta, s))
		{
			ncandidates++;
			probed += mih_probed_in_full(meta, meta->sets[s].nentries);
			if (base < 0 || meta->sets[s].nentries > meta->sets[base].nentries)
				base = s;
		}
	if (ncandidates < 2)
		return 0;
	for (int s = 0; s < meta->nsets; s++)
		if (s != base && !mih_is_claimed(meta, s))
		{
			int			at = norder++;

			rest += meta->sets[s].nentries;
			/* insertion sort by rows, at most MIH_MAX_SETS of them */
			while (at > 0 && meta->sets[order[at - 1]].nentries > meta->sets[s].nentries)
			{
				order[at] = order[at - 1];
				at--;
			}
			order[at] = s;
		}
	if (rest * MIH_FOLD_SHARE >= meta->sets[base].nentries)
	{
		for (int s = 0; s < meta->nsets; s++)
			chosen[s] = !mih_is_claimed(meta, s);
		return ncandidates;
	}
	for (int i = 0; i < norder; i++)
	{
		int			s = order[i];

		/* sets left if it stops here: the others and the merged one */
		if (count > 0 && meta->sets[s].nentries > merged && ncandidates - count + 1 <= MIH_SET_CAP &&
			probed + mih_probed_in_full(meta, merged) <= MIH_PROBED_CAP)
			break;
		chosen[s] = true;
		merged += meta->sets[s].nentries;
		probed -= mih_probed_in_full(meta, meta->sets[s].nentries);
		count++;
	}
	if (count < 2)
	{
		memset(chosen, 0, MIH_MAX_SETS * sizeof(bool));
		return 0;
	}
	return count;
}

/* Whether a merge is due among the sets no merge claims. */
bool
mih_merge_due(const MihMeta *meta)
{
	bool		chosen[MIH_MAX_SETS];

	return mih_pick_merge(meta, chosen) > 0;
}

/* Drops the claims of the merge slots marked in `slots` (their merges ended without publishing). */
static bool
mih_drop_claims(MihMeta *meta, const bool *slots)
{
	int			kept = 0;

	for (int c = 0; c < meta->nclaimed; c++)
		if (!slots[meta->claimed_slot[c]])
		{
			meta->claimed_id[kept] = meta->claimed_id[c];
			meta->claimed_slot[kept] = meta->claimed_slot[c];
			kept++;
		}
	if (kept == meta->nclaimed)
		return false;
	meta->nclaimed = kept;
	return true;
}

/*
 * Claims the sets the policy picks, for merge slot `slot` (the metapage
 * locked exclusively), copying them to `sets`.  Each claimed set reserves
 * the retired entry its publication takes.  Returns how many.
 */
static int
mih_claim(Relation index, Buffer meta_buffer, int slot, MihRunSet *sets)
{
	GenericXLogState *state = GenericXLogStart(index);
	MihMeta    *meta = mih_meta_for_update(state, meta_buffer);
	bool		chosen[MIH_MAX_SETS];
	int			n = mih_pick_merge(meta, chosen);

	if (n > 0 && meta->nretired + meta->nclaimed + n + 1 > MIH_MAX_RETIRED)
		n = 0;					/* recycling lags: no room to retire them (nor a flush's list) */
	if (n == 0)
	{
		GenericXLogAbort(state);
		return 0;
	}
	n = 0;
	for (int s = 0; s < meta->nsets; s++)
		if (chosen[s])
		{
			if (meta->set_id[s] == 0)	/* a set written before ids: one now */
			{
				meta->set_id[s] = ++meta->last_set_id;
				meta->generation++;
			}
			meta->claimed_id[meta->nclaimed] = meta->set_id[s];
			meta->claimed_slot[meta->nclaimed] = slot;
			meta->nclaimed++;
			sets[n++] = meta->sets[s];
		}
	GenericXLogFinish(state);
	return n;
}

/* Puts the merged set in place of the sets slot `slot` claimed, which are retired. */
static void
mih_publish_merge(Relation index, Buffer meta_buffer, int slot, const MihRunSet *set, int64 rows)
{
	GenericXLogState *state = GenericXLogStart(index);
	MihMeta    *meta = mih_meta_for_update(state, meta_buffer);
	bool		mine[MIH_MERGE_SLOTS] = {false};
	int			kept = 0;

	for (int s = 0; s < meta->nsets; s++)
	{
		bool		claimed = false;

		for (int c = 0; c < meta->nclaimed; c++)
			claimed |= meta->claimed_slot[c] == slot && meta->claimed_id[c] == meta->set_id[s];
		if (claimed)
		{
			MihRetired	old = {true, meta->sets[s], InvalidBlockNumber};

			mih_meta_retire(meta, &old);
			continue;
		}
		meta->sets[kept] = meta->sets[s];
		meta->set_id[kept] = meta->set_id[s];
		kept++;
	}
	meta->nsets = kept;
	mine[slot] = true;
	mih_drop_claims(meta, mine);
	mih_meta_add_set(meta, set);
	meta->nmerges++;
	meta->merged_rows += rows;
	GenericXLogFinish(state);
}

/*
 * One merge in merge slot `slot` (its lock held): claims, sorts with no lock
 * held, publishes.  False when none is due.
 */
static bool
mih_merge_step(Relation index, int slot)
{
	Buffer		meta_buffer = ReadBuffer(index, 0);
	MihRunSet	sets[MIH_MAX_SETS];
	MihCollect	collect = {NULL, 0};
	SimhashBlocks blocks;
	MihRunSet	set;
	int			ntables;
	int			n;
	int64		rows = 0;

	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	ntables = mih_meta_of(BufferGetPage(meta_buffer))->ntables;
	n = mih_claim(index, meta_buffer, slot, sets);
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
	if (n == 0)
	{
		ReleaseBuffer(meta_buffer);
		return false;
	}
	for (int i = 0; i < n; i++)
		rows += sets[i].nentries;
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("simhash_mih: merging %d run sets (" INT64_FORMAT " rows) of index %s",
									n, rows, RelationGetRelationName(index)));
	simhash_blocks_init(&blocks, ntables);
	collect.sorter = mih_sorter_begin(ntables, (Size) maintenance_work_mem * 1024, NULL, -1, (double) rows);
	collect.mask = blocks.mask[0];
	for (int i = 0; i < n; i++)
		mih_visit_run(index, &sets[i], 0, false, mih_collect_run, &collect);
	set = mih_sorter_write_set(collect.sorter, index, true, (Size) maintenance_work_mem * 1024);
	mih_sorter_end(collect.sorter, NULL);

	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_publish_merge(index, meta_buffer, slot, &set, rows);
	UnlockReleaseBuffer(meta_buffer);
	return true;
}

/*
 * Drops the claims of the merge slots marked in `stale`, whose locks the
 * caller holds: their merges ended in an ERROR or a crash.
 */
static void
mih_drop_stale_claims(Relation index, const bool *stale)
{
	Buffer		meta_buffer = ReadBuffer(index, 0);
	GenericXLogState *state;

	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	if (mih_meta_of(BufferGetPage(meta_buffer))->nclaimed > 0)
	{
		MihMeta    *meta;

		state = GenericXLogStart(index);
		meta = mih_meta_for_update(state, meta_buffer);
		if (mih_drop_claims(meta, stale))
		{
			meta->lost_pages = 1;	/* the failed merges may have written pages of their sets */
			GenericXLogFinish(state);
		}
		else
			GenericXLogAbort(state);
	}
	UnlockReleaseBuffer(meta_buffer);
}

/*
 * Runs up to `steps` merges in a free merge slot; none when every slot is
 * taken.  Claims of the slots free now are left over: dropped first, under
 * those slots' locks.
 */
void
mih_merge(Relation index, int steps)
{
	bool		free_slot[MIH_MERGE_SLOTS] = {false};
	int			slot = -1;

	for (int i = 0; i < MIH_MERGE_SLOTS; i++)
		if (ConditionalLockPage(index, MIH_MERGE_LOCK + i, ExclusiveLock))
		{
			free_slot[i] = true;
			if (slot < 0)
				slot = i;
		}
	if (slot < 0)
		return;
	mih_drop_stale_claims(index, free_slot);
	for (int i = 0; i < MIH_MERGE_SLOTS; i++)
		if (free_slot[i] && i != slot)
			UnlockPage(index, MIH_MERGE_LOCK + i, ExclusiveLock);
	for (int i = 0; i < steps && mih_merge_step(index, slot); i++)
		;
	UnlockPage(index, MIH_MERGE_LOCK + slot, ExclusiveLock);
}

/* Whether a merge slot is free now (a hint: a worker started for it may still find none). */
static bool
mih_slot_free(Relation index)
{
	for (int i = 0; i < MIH_MERGE_SLOTS; i++)
		if (ConditionalLockPage(index, MIH_MERGE_LOCK + i, ExclusiveLock))
		{
			UnlockPage(index, MIH_MERGE_LOCK + i, ExclusiveLock);
			return true;
		}
	return false;
}

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
 * Whether the metapage holds claims of a merge slot no merge holds now (its
 * merge ended in an ERROR or a crash): they keep their sets from every
 * merge until a merge drops them.
 */
static bool
mih_stale_claims(Relation index, const MihMeta *meta)
{
	for (int c = 0; c < meta->nclaimed; c++)
		if (ConditionalLockPage(index, MIH_MERGE_LOCK + meta->claimed_slot[c], ExclusiveLock))
		{
			UnlockPage(index, MIH_MERGE_LOCK + meta->claimed_slot[c], ExclusiveLock);
			return true;
		}
	return false;
}

/* The run sets no merge claims. */
static int
mih_unclaimed_sets(const MihMeta *meta)
{
	int			n = 0;

	for (int s = 0; s < meta->nsets; s++)
		n += !mih_is_claimed(meta, s);
	return n;
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
 * owner — and it runs no user code: no expression, no operator of the
 * table's, only the index's pages), locks the table as an insert does (a
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
		if (index && index->rd_rel->relkind == RELKIND_INDEX && index->rd_indam->ambuild == mih_build)
		{
			if (target.job == MIH_JOB_FLUSH)
				mih_flush(index, maintenance_work_mem, true);
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
