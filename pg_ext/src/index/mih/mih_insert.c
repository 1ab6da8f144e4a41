/*
 * mih_insert.c — inserts into simhash_mih: appended to the pending list under
 * the metapage's lock; a full list is sealed and sorted into a new run set
 * with the metapage unlocked (one flusher at a time), after which a merge is
 * seen to if one is due (mih_merge.c); retired pages recycled by inserts
 * once no snapshot can have read them, or when no one else pins the
 * metapage (mih.h).
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"

/*
 * Seals the pending list for a flush, under the metapage's exclusive lock:
 * the sealed chain takes its place among what scans read, and a new pending
 * list starts.  A sealed chain already there (its flusher failed: the flush
 * lock is free) is taken over.  False when there is nothing to flush.
 */
static bool
mih_seal(Relation index, Buffer meta_buffer)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	GenericXLogState *state;

	if (meta->sealed_count > 0)
		return true;
	if (meta->pending_count < mih_pending_limit || meta->pending_head == InvalidBlockNumber)
		return false;
	state = GenericXLogStart(index);
	meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	meta->sealed_head = meta->pending_head;
	meta->sealed_count = meta->pending_count;
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	meta->pending_count = 0;
	GenericXLogFinish(state);
	return true;
}

/*
 * Puts the new run set in place of the sealed chain, which is retired, under
 * the metapage's exclusive lock.
 */
static void
mih_publish_flush(Relation index, Buffer meta_buffer, const MihRunSet *set)
{
	GenericXLogState *state = GenericXLogStart(index);
	MihMeta    *meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	MihRetired	chain = {false};

	mih_meta_add_set(meta, set);
	chain.chain_head = meta->sealed_head;
	mih_meta_retire(meta, &chain);
	meta->sealed_head = InvalidBlockNumber;
	meta->sealed_count = 0;
	meta->nflushes++;
	GenericXLogFinish(state);
}

/*
 * Flushes the pending list, if no other backend is flushing: seals it, sorts
 * the sealed chain into a new run set with the metapage unlocked (inserts
 * and scans go on; scans read the sealed chain meanwhile), then publishes
 * the set, and sees to a merge if one is due (mih_merge.c).  The sealed
 * chain takes an entry of the retired list, and the set one of the run sets:
 * while either lacks room (recycling or merges lag), the chain stays sealed
 * for a later flush.
 */
static void
mih_flush(Relation index)
{
	Buffer		meta_buffer;
	MihMeta		meta;
	MihCollect	collect = {NULL, 0};
	SimhashBlocks blocks;
	MihRunSet	set;

	if (!ConditionalLockPage(index, MIH_FLUSH_LOCK, ExclusiveLock))
		return;					/* another backend flushes; these rows wait for the next flush */
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	/* merges reserve a retired entry for each set they claim */
	if (meta.nretired + meta.nclaimed + 1 > MIH_MAX_RETIRED || meta.nsets + 1 > MIH_MAX_SETS ||
		!mih_seal(index, meta_buffer))
	{
		UnlockReleaseBuffer(meta_buffer);
		UnlockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
		return;
	}
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);

	simhash_blocks_init(&blocks, meta.ntables);
	/* In an insert's memory, work_mem, as GIN's pending list cleanup in an insert (spilling past it). */
	collect.sorter = mih_sorter_begin(meta.ntables, (Size) work_mem * 1024, NULL, -1, (double) meta.sealed_count);
	collect.mask = blocks.mask[0];
	mih_visit_chain(index, meta.sealed_head, meta.sealed_count, mih_collect_pending, &collect);
	set = mih_sorter_write_set(collect.sorter, index, true, (Size) work_mem * 1024);
	mih_sorter_end(collect.sorter, NULL);

	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_publish_flush(index, meta_buffer, &set);
	UnlockReleaseBuffer(meta_buffer);
	UnlockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
	mih_after_flush(index);
}

/*
 * Recycles retired entries, unless VACUUM's bulk delete, which reads the run
 * sets without a snapshot, or another recycler holds MIH_VACUUM_LOCK: all of
 * them when no other backend pins the metapage (no reader on this server
 * can reach them: each pins it while it reads), else those no running
 * snapshot can have read (mih.h).  The metapage is pinned once, unlocked.
 */
static void
mih_recycle(Relation index, Buffer meta_buffer)
{
	MihRetired	retired[MIH_MAX_RETIRED];
	int			nretired;
	int			ntables;
	bool		alone;

	if (!ConditionalLockPage(index, MIH_VACUUM_LOCK, ExclusiveLock))
		return;
	alone = ConditionalLockBufferForCleanup(meta_buffer);
	if (!alone)
		LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	ntables = mih_meta_of(BufferGetPage(meta_buffer))->ntables;
	nretired = mih_take_retired(index, meta_buffer, !alone, retired);
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
	mih_free_retired(index, retired, nretired, ntables);
	UnlockPage(index, MIH_VACUUM_LOCK, ExclusiveLock);
}

/*
 * Whether to try recycling (the metapage locked): the oldest retired entry
 * is past every snapshot, or the list is half full (a long snapshot holds
 * the horizon back: then only a moment with no other pin frees it).
 */
static bool
mih_should_recycle(const MihMeta *meta)
{
	return meta->nretired > 0 &&
		(meta->nretired >= MIH_MAX_RETIRED / 2 ||
		 GlobalVisCheckRemovableFullXid(NULL, FullTransactionIdFromU64(meta->retired_xid[0])));
}

/*
 * Appends (fp, tid) to the pending list.  The metapage's exclusive lock
 * orders appends (a few microseconds each); the pages are WAL-logged
 * together.  Then, with the metapage unlocked: recycling, a flush.
 */
bool
mih_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	Buffer		meta_buffer;
	Buffer		tail_buffer = InvalidBuffer;
	Buffer		new_buffer = InvalidBuffer;
	GenericXLogState *state;
	MihMeta    *meta;
	MihPendingPage *tail = NULL;
	MihScope	scope;
	uint64		fp;
	bool		recycle;
	bool		flush;

	mih_scope_init(&scope, index);
	if (!mih_fold(&scope, values, isnull, &fp))
		return false;
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	meta = mih_meta_of(BufferGetPage(meta_buffer));
	mih_check_meta(index, meta);
	if (meta->pending_tail != InvalidBlockNumber)
	{
		tail_buffer = mih_read_page(index, meta->pending_tail, MIH_PAGE_PENDING, BUFFER_LOCK_EXCLUSIVE);
		if (mih_pending_of(BufferGetPage(tail_buffer))->n >= MIH_PENDING_CAP)
			new_buffer = mih_new_buffer(index);
	}
	else
		new_buffer = mih_new_buffer(index);

	state = GenericXLogStart(index);
	meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	if (BufferIsValid(tail_buffer))
		tail = mih_pending_of(GenericXLogRegisterBuffer(state, tail_buffer, 0));
	if (BufferIsValid(new_buffer))
	{
		Page		page = GenericXLogRegisterBuffer(state, new_buffer, GENERIC_XLOG_FULL_IMAGE);
		BlockNumber blkno = BufferGetBlockNumber(new_buffer);

		PageInit(page, BLCKSZ, 0);
		((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihPendingPage);
		if (tail)
			tail->next = blkno;
		else
			meta->pending_head = blkno;
		meta->pending_tail = blkno;
		tail = mih_pending_of(page);
		tail->kind = MIH_PAGE_PENDING;
		tail->n = 0;
		tail->next = InvalidBlockNumber;
	}
	tail->fps[tail->n] = fp;
	tail->tids[tail->n] = *ht_ctid;
	tail->n++;
	meta->pending_count++;
	GenericXLogFinish(state);
	if (BufferIsValid(new_buffer))
		UnlockReleaseBuffer(new_buffer);
	if (BufferIsValid(tail_buffer))
		UnlockReleaseBuffer(tail_buffer);
	meta = mih_meta_of(BufferGetPage(meta_buffer));
	recycle = mih_should_recycle(meta);
	flush = meta->pending_count >= mih_pending_limit;
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
	if (recycle)
		mih_recycle(index, meta_buffer);
	ReleaseBuffer(meta_buffer);
	if (flush)
		mih_flush(index);
	return false;
}
