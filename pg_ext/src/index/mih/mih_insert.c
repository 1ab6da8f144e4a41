/*
 * mih_insert.c — inserts into simhash_mih: appended to a lane of the pending
 * list (mih.h), with the metapage share-locked and the lane's tail page
 * exclusively (writers of different lanes append side by side; the
 * metapage is locked exclusively only to link a new page); a full list is
 * sealed (its lanes joined into one chain), and sorted into a new run set
 * with the metapage unlocked (mih_flush.c) by a flush worker (mih_worker.c)
 * or the insert itself, after which a merge is seen to if one is due
 * (mih_after_flush); retired pages recycled once no snapshot can have read
 * them, or when no one else pins the metapage (mih.h, mih_runs.c): by the
 * flush and merge workers after their jobs, by inserts where no worker
 * takes the index's work or the retired list is full.
 *
 * Layer (mih.h): above mih_utils.c, mih_scope.c, mih_runs.c, mih_flush.c and
 * mih_worker.c.
 */
#include "index/mih/mih.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"

/*
 * The most rows the pending list can hold, from the metapage alone: each
 * lane's count and a full tail page.
 */
static int64
mih_pending_most(const MihMeta *meta)
{
	int64		rows = 0;

	for (int i = 0; i < mih_nlanes(meta); i++)
		rows += MIH_LANE(meta, i)->rows +
			(MIH_LANE(meta, i)->tail != InvalidBlockNumber && !mih_tail_counted(meta) ? MIH_PENDING_CAP : 0);
	return rows;
}

/*
 * Whether the pending list holds at least `rows` rows (the caller holds the
 * metapage locked, no pending page): the tails are read only when the
 * metapage's counts leave it open.
 */
static bool
mih_pending_reaches(Relation index, const MihMeta *meta, int64 rows)
{
	return mih_pending_most(meta) >= rows && mih_pending_rows(index, meta) >= rows;
}

/* Whether a seal is due: the list reached the limit, no sealed chain waits, and a flush has room. */
static bool
mih_seal_due(Relation index, const MihMeta *meta)
{
	return meta->sealed_count == 0 && mih_flush_has_room(meta) && mih_pending_reaches(index, meta, mih_pending_limit);
}

/*
 * Sets the `next` of the tail page `blkno` to `next`, WAL-logged, if it is
 * not that already.  Its rows, which the caller adds up.
 */
static uint16
mih_link_tail(Relation index, BlockNumber blkno, BlockNumber next)
{
	Buffer		buffer = mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_EXCLUSIVE);
	MihPendingPage *tail = mih_pending_of(BufferGetPage(buffer));
	uint16		n = tail->n;

	if (tail->next != next)
	{
		GenericXLogState *state = GenericXLogStart(index);

		mih_pending_of(GenericXLogRegisterBuffer(state, buffer, 0))->next = next;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buffer);
	return n;
}

/*
 * Seals the pending list if a seal is due, the metapage exclusively locked
 * by the caller: the lanes are joined into one chain (each tail linked to
 * the next lane's head, the last one's ended, each its own WAL record: no
 * reader follows a lane past its tail, so a crash between them only leaves
 * links nothing reads), which the metapage then names as the sealed chain,
 * waiting for its flusher, its rows counted exactly; the lanes start empty.
 * Whether it sealed.
 */
static bool
mih_seal(Relation index, Buffer meta_buffer)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	GenericXLogState *state;
	BlockNumber head = InvalidBlockNumber;
	int64		rows = 0;

	if (!mih_seal_due(index, meta))
		return false;
	for (int i = mih_nlanes(meta) - 1; i >= 0; i--)
	{
		const MihLane *lane = MIH_LANE(meta, i);

		if (lane->head == InvalidBlockNumber)
			continue;
		rows += lane->rows;
		if (!mih_tail_counted(meta))	/* else lane 0 is the only lane, its count whole */
			rows += mih_link_tail(index, lane->tail, head);
		head = lane->head;
	}
	state = GenericXLogStart(index);
	meta = mih_meta_for_update(state, meta_buffer);
	meta->sealed_head = head;
	meta->sealed_count = rows;
	meta->sealed_waits = 1;
	meta->nseals++;
	for (int i = 0; i < mih_nlanes(meta); i++)
	{
		MIH_LANE(meta, i)->head = MIH_LANE(meta, i)->tail = InvalidBlockNumber;
		MIH_LANE(meta, i)->rows = 0;
	}
	GenericXLogFinish(state);
	return true;
}

/*
 * Whether an insert tries recycling (the metapage locked): where a worker
 * takes the index's work (mih_background), only once the retired list is
 * full (the workers recycle after each job; this is the fallback that keeps
 * flushes going when they lag); elsewhere once the oldest retired entry is
 * past every snapshot, or the list is half full (a long snapshot holds the
 * horizon back: then only a moment with no other pin frees it).
 */
static bool
mih_insert_recycles(Relation index, const MihMeta *meta)
{
	if (meta->nretired == 0)
		return false;
	if (mih_background(index))
		return mih_retired_full(meta);
	return meta->nretired >= MIH_MAX_RETIRED / 2 ||
		GlobalVisCheckRemovableFullXid(index, FullTransactionIdFromU64(meta->retired_xid[0]));
}

/*
 * Appends (fp, tid) to the locked pending page `buffer` if it has room,
 * WAL-logging that page alone.  Whether it did.
 */
static bool
mih_append_to_page(Relation index, Buffer buffer, uint64 fp, ItemPointer tid)
{
	GenericXLogState *state;
	MihPendingPage *page;

	mih_check_locked_page(index, buffer, MIH_PAGE_PENDING);
	if (mih_pending_of(BufferGetPage(buffer))->n >= MIH_PENDING_CAP)
		return false;
	state = GenericXLogStart(index);
	page = mih_pending_of(GenericXLogRegisterBuffer(state, buffer, 0));
	page->fps[page->n] = fp;
	page->tids[page->n] = *tid;
	page->n++;
	GenericXLogFinish(state);
	return true;
}

/*
 * Appends (fp, tid) to the tail of a lane, the metapage `meta` share-locked
 * by the caller (no lane changes meanwhile: linking a page or sealing takes
 * the exclusive lock): this backend's lane (its home, by process id), or,
 * while another writer holds that tail, the first other lane whose tail
 * none holds and has room, else the home lane's, waiting for it.  False
 * when the home lane is empty or its tail full: the caller appends under
 * the exclusive lock, which links a new page there.
 */
static bool
mih_append_to_lane(Relation index, const MihMeta *meta, uint64 fp, ItemPointer tid)
{
	int			home = MyProcPid % MIH_LANES;
	Buffer		buffer;
	bool		appended;

	if (MIH_LANE(meta, home)->tail == InvalidBlockNumber)
		return false;
	for (int i = 0; i < MIH_LANES; i++)
	{
		BlockNumber blkno = MIH_LANE(meta, (home + i) % MIH_LANES)->tail;

		if (blkno == InvalidBlockNumber)
			continue;
		buffer = ReadBuffer(index, blkno);
		if (!ConditionalLockBuffer(buffer))
		{
			ReleaseBuffer(buffer);
			continue;
		}
		appended = mih_append_to_page(index, buffer, fp, tid);
		UnlockReleaseBuffer(buffer);
		if (appended || i == 0)
			return appended;	/* the home tail full: a new page */
	}
	buffer = ReadBuffer(index, MIH_LANE(meta, home)->tail);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	appended = mih_append_to_page(index, buffer, fp, tid);
	UnlockReleaseBuffer(buffer);
	return appended;
}

/*
 * Appends (fp, tid) to this backend's lane under the metapage's exclusive
 * lock: to its tail if it has room, else to a new page linked as its tail
 * (the full tail's rows join the lane's count), in one WAL record.  In an
 * index written before lanes, lane 0 holds the pending list: the lanes
 * start here (lane 0's count leaves its tail's rows out from now on).
 */
static void
mih_append_locked(Relation index, Buffer meta_buffer, uint64 fp, ItemPointer tid)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	int			home = meta->nlanes > 0 ? MyProcPid % MIH_LANES : 0;
	BlockNumber blkno = MIH_LANE(meta, home)->tail;
	Buffer		tail_buffer = InvalidBuffer;
	Buffer		new_buffer = InvalidBuffer;
	GenericXLogState *state;
	MihPendingPage *tail = NULL;
	MihLane    *lane;

	if (blkno != InvalidBlockNumber)
	{
		tail_buffer = mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_EXCLUSIVE);
		if (meta->nlanes > 0 && mih_append_to_page(index, tail_buffer, fp, tid))
		{
			UnlockReleaseBuffer(tail_buffer);
			return;
		}
		if (mih_pending_of(BufferGetPage(tail_buffer))->n >= MIH_PENDING_CAP)
			new_buffer = mih_new_buffer(index);
	}
	else
		new_buffer = mih_new_buffer(index);

	state = GenericXLogStart(index);
	meta = mih_meta_for_update(state, meta_buffer);
	if (BufferIsValid(tail_buffer))
		tail = mih_pending_of(GenericXLogRegisterBuffer(state, tail_buffer, 0));
	if (meta->nlanes == 0)
	{
		if (tail)
			meta->lane0.rows = Max(meta->lane0.rows - tail->n, 0);
		meta->nlanes = MIH_LANES;
		for (int i = 1; i < MIH_LANES; i++)
		{
			MIH_LANE(meta, i)->head = MIH_LANE(meta, i)->tail = InvalidBlockNumber;
			MIH_LANE(meta, i)->rows = 0;
		}
	}
	lane = MIH_LANE(meta, home);
	if (BufferIsValid(new_buffer))
	{
		Page		page = GenericXLogRegisterBuffer(state, new_buffer, GENERIC_XLOG_FULL_IMAGE);

		PageInit(page, BLCKSZ, 0);
		((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihPendingPage);
		if (tail)
		{
			tail->next = BufferGetBlockNumber(new_buffer);
			lane->rows += tail->n;
		}
		else
			lane->head = BufferGetBlockNumber(new_buffer);
		lane->tail = BufferGetBlockNumber(new_buffer);
		tail = mih_pending_of(page);
		tail->kind = MIH_PAGE_PENDING;
		tail->n = 0;
		tail->next = InvalidBlockNumber;
	}
	tail->fps[tail->n] = fp;
	tail->tids[tail->n] = *tid;
	tail->n++;
	GenericXLogFinish(state);
	if (BufferIsValid(new_buffer))
		UnlockReleaseBuffer(new_buffer);
	if (BufferIsValid(tail_buffer))
		UnlockReleaseBuffer(tail_buffer);
}

/*
 * Appends (fp, tid) to the pending list (a lane's tail, the metapage
 * share-locked; under its exclusive lock when a page must be linked), and
 * seals the list if that filled it (under the exclusive lock).  Then, with
 * the metapage unlocked: recycling (mih_insert_recycles); the list it sealed
 * handed to a flush worker, or flushed here where none can start; or, when
 * the list reached MIH_PENDING_BOUND times the limit while a sealed chain
 * still waits (its worker is behind, or failed), that chain flushed here,
 * after waiting for the flusher at it if there is one (writers wait rather
 * than grow the list; not while merges lag and no room lets the list be
 * sealed at all).  An insert that flushed where workers take the index's
 * work recycles after, as the worker would have after its job.
 */
bool
mih_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	Buffer		meta_buffer;
	MihMeta    *meta;
	MihScope	scope;
	uint64		fp;
	bool		exclusive = false;
	bool		recycle;
	bool		sealed = false;
	bool		behind;
	bool		flushed;

	mih_scope_init(&scope, index);
	if (!mih_fold(&scope, values, isnull, &fp))
		return false;
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_SHARE);
	meta = mih_meta_of(BufferGetPage(meta_buffer));
	mih_check_meta(index, meta);
	if (meta->nlanes == 0 || !mih_append_to_lane(index, meta, fp, ht_ctid))
	{
		LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
		LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
		exclusive = true;
		mih_check_meta(index, meta);
		mih_append_locked(index, meta_buffer, fp, ht_ctid);
	}
	/* mih_seal sees whether a seal is due; under the shared lock, only then is the exclusive one taken */
	if (exclusive || mih_seal_due(index, meta))
	{
		if (!exclusive)
		{
			LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
			LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
		}
		sealed = mih_seal(index, meta_buffer);
	}
	recycle = mih_insert_recycles(index, meta);
	behind = meta->sealed_count > 0 && !sealed &&
		mih_pending_reaches(index, meta, MIH_PENDING_BOUND * (int64) mih_pending_limit);
	UnlockReleaseBuffer(meta_buffer);
	if (recycle)
		mih_try_recycle(index);
	/* In an insert's memory, work_mem, as GIN's pending list cleanup in an insert (spilling past it). */
	if (sealed && !mih_flush_in_background(index))
		flushed = mih_flush(index, work_mem, false);
	else if (behind)
		flushed = mih_flush(index, work_mem, true);	/* waits for a flusher that is at it */
	else
		return false;
	if (flushed)
		mih_after_flush(index);
	/* a worker's job done here (none could start, or it lags): its recycling after the job too */
	if (mih_background(index))
		mih_try_recycle(index);
	return false;
}
