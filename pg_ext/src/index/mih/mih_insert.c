/*
 * mih_insert.c — inserts into simhash_mih: appended to the pending list under
 * the metapage's lock, sorted into a new run set when the list is full.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"

/*
 * Sorts the pending list into a new run set.  The caller holds the metapage
 * exclusively, so no insert runs meanwhile; scans go on reading the old
 * pending pages, which are retired, not reused.
 */
static void
mih_flush_pending(Relation index, Buffer meta_buffer)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	MihCollect	collect = {NULL, 0};
	MihRunSet	set;
	MihRetired	chain = {false};
	GenericXLogState *state;

	if (meta->nsets >= MIH_MAX_SETS || meta->nretired >= MIH_MAX_RETIRED)
		return;					/* VACUUM merges and recycles first */
	/* In an insert's memory, work_mem, as GIN's pending list cleanup in an insert. */
	collect.sorter = mih_sorter_begin(meta->ntables, (Size) work_mem * 1024, NULL, -1, (double) meta->pending_count);
	mih_visit_chain(index, meta->pending_head, meta->pending_count, mih_collect_pending, &collect);
	set = mih_sorter_write_set(collect.sorter, index, true, (Size) work_mem * 1024);
	mih_sorter_end(collect.sorter, NULL);
	chain.chain_head = meta->pending_head;

	state = GenericXLogStart(index);
	meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	mih_meta_add_set(meta, &set);
	mih_meta_retire(meta, &chain);
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	meta->pending_count = 0;
	GenericXLogFinish(state);
}

/*
 * Appends (fp, tid) to the pending list.  The metapage's exclusive lock
 * orders inserts; the pages are WAL-logged together.
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
	if (mih_meta_of(BufferGetPage(meta_buffer))->pending_count >= mih_pending_limit)
		mih_flush_pending(index, meta_buffer);
	UnlockReleaseBuffer(meta_buffer);
	return false;
}
