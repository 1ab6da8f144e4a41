/*
 * mih_insert.c — inserts into simhash_mih: appended to the pending list under
 * the metapage's lock; a full list is sealed, and sorted into a new run set
 * with the metapage unlocked (one flusher at a time) by a flush worker
 * (mih_merge.c) or the insert itself, after which a merge is seen to if one
 * is due (mih_merge.c); retired pages recycled once no snapshot can have
 * read them, or when no one else pins the metapage (mih.h): by the flush
 * and merge workers after their jobs, by inserts where no worker takes the
 * index's work or the retired list is full.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"

/*
 * Whether the retired list is full: no room for the entry a flush retires
 * (merges reserve one for each set they claim).
 */
static bool
mih_retired_full(const MihMeta *meta)
{
	return meta->nretired + meta->nclaimed + 1 > MIH_MAX_RETIRED;
}

/*
 * Whether a flush has room to publish a set: the sealed chain takes an entry
 * of the retired list and the set one of the run sets.  While either lacks
 * room (recycling or merges lag), the list is not sealed, or a sealed chain
 * stays sealed.
 */
static bool
mih_flush_has_room(const MihMeta *meta)
{
	return !mih_retired_full(meta) && meta->nsets + 1 <= MIH_MAX_SETS;
}

/*
 * Seals the pending list once it holds simhash.mih_pending_limit rows and no
 * sealed chain waits, in the metapage `meta` (the caller's update of it,
 * exclusively locked): the sealed chain takes its place among what scans
 * read, waiting for its flusher, and a new pending list starts.  Whether it
 * sealed.
 */
static bool
mih_seal(MihMeta *meta)
{
	if (meta->sealed_count > 0 || meta->pending_count < mih_pending_limit ||
		meta->pending_head == InvalidBlockNumber || !mih_flush_has_room(meta))
		return false;
	meta->sealed_head = meta->pending_head;
	meta->sealed_count = meta->pending_count;
	meta->sealed_waits = 1;
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	meta->pending_count = 0;
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
	MihMeta    *meta = mih_meta_for_update(state, meta_buffer);
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
 * Flushes the sealed chain, if there is one and no other backend flushes
 * (`wait`: waits for the one that does, which leaves nothing or a chain it
 * failed on): sorts it into a new run set in `memory_kb` with the metapage
 * unlocked (inserts and scans go on; scans read the sealed chain
 * meanwhile), publishes the set, and sees to a merge if one is due
 * (mih_merge.c).  A chain no flusher waits for any more was left by one that
 * failed, maybe after writing pages of its set: the metapage says so
 * (lost_pages, for VACUUM).  One flusher at a time: MIH_FLUSH_LOCK.
 */
void
mih_flush(Relation index, int memory_kb, bool wait)
{
	Buffer		meta_buffer;
	MihMeta		meta;
	MihCollect	collect = {NULL, 0};
	SimhashBlocks blocks;
	MihRunSet	set;
	GenericXLogState *state;
	MihMeta    *update;

	if (wait)
		LockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
	else if (!ConditionalLockPage(index, MIH_FLUSH_LOCK, ExclusiveLock))
		return;					/* another backend flushes; the sealed chain waits for it */
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	if (meta.sealed_count == 0 || !mih_flush_has_room(&meta))
	{
		UnlockReleaseBuffer(meta_buffer);
		UnlockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
		return;
	}
	if (meta.sealed_waits || !meta.lost_pages)
	{
		state = GenericXLogStart(index);
		update = mih_meta_for_update(state, meta_buffer);
		if (meta.sealed_waits)
			update->sealed_waits = 0;	/* this flusher writes from now on */
		else
			update->lost_pages = 1; /* its flusher failed */
		GenericXLogFinish(state);
	}
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);

	simhash_blocks_init(&blocks, meta.ntables);
	collect.sorter = mih_sorter_begin(meta.ntables, (Size) memory_kb * 1024, NULL, -1, (double) meta.sealed_count);
	collect.mask = blocks.mask[0];
	mih_visit_chain(index, meta.sealed_head, meta.sealed_count, mih_collect_pending, &collect);
	set = mih_sorter_write_set(collect.sorter, index, true, (Size) memory_kb * 1024);
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
 * snapshot can have read (mih.h).  Called by a flush or merge worker after
 * its job, and by inserts where no worker takes the index's work
 * (mih_insert_recycles); the caller pins nothing of the index.
 */
void
mih_try_recycle(Relation index)
{
	MihRetired	retired[MIH_MAX_RETIRED];
	int			nretired;
	int			ntables;
	bool		alone;
	Buffer		meta_buffer;

	if (!ConditionalLockPage(index, MIH_VACUUM_LOCK, ExclusiveLock))
		return;
	meta_buffer = ReadBuffer(index, 0);
	alone = ConditionalLockBufferForCleanup(meta_buffer);
	if (!alone)
		LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	ntables = mih_meta_of(BufferGetPage(meta_buffer))->ntables;
	nretired = mih_take_retired(index, meta_buffer, !alone, retired);
	UnlockReleaseBuffer(meta_buffer);
	mih_free_retired(index, retired, nretired, ntables);
	UnlockPage(index, MIH_VACUUM_LOCK, ExclusiveLock);
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
		GlobalVisCheckRemovableFullXid(NULL, FullTransactionIdFromU64(meta->retired_xid[0]));
}

/*
 * Appends (fp, tid) to the pending list, and seals the list if that filled
 * it.  The metapage's exclusive lock orders appends (a few microseconds
 * each); the pages are WAL-logged together.  Then, with the metapage
 * unlocked: recycling (mih_insert_recycles); the list it sealed handed to a flush worker, or
 * flushed here where none can start; or, when the list reached
 * MIH_PENDING_BOUND times the limit while a sealed chain still waits (its
 * worker is behind, or failed), that chain flushed here, after waiting for
 * the flusher at it if there is one (writers wait rather than grow the list;
 * not while merges lag and no room lets the list be sealed at all).
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
	bool		sealed;
	bool		behind;

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
	meta = mih_meta_for_update(state, meta_buffer);
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
	sealed = mih_seal(meta);
	GenericXLogFinish(state);
	if (BufferIsValid(new_buffer))
		UnlockReleaseBuffer(new_buffer);
	if (BufferIsValid(tail_buffer))
		UnlockReleaseBuffer(tail_buffer);
	meta = mih_meta_of(BufferGetPage(meta_buffer));
	recycle = mih_insert_recycles(index, meta);
	behind = meta->sealed_count > 0 && !sealed &&
		meta->pending_count >= MIH_PENDING_BOUND * (int64) mih_pending_limit;
	UnlockReleaseBuffer(meta_buffer);
	if (recycle)
		mih_try_recycle(index);
	/* In an insert's memory, work_mem, as GIN's pending list cleanup in an insert (spilling past it). */
	if (sealed && !mih_flush_in_background(index))
		mih_flush(index, work_mem, false);
	else if (behind)
		mih_flush(index, work_mem, true);	/* waits for a flusher that is at it */
	return false;
}
