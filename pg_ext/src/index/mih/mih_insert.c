/*
 * mih_insert.c — inserts into simhash_mih: appended to the pending list under
 * the metapage's lock, sorted into a new run set when the list is full,
 * merged in the same sort with the run sets the merge policy picks; retired
 * pages recycled by an insert that finds the metapage pinned by no one else.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"

/*
 * The merge policy, size-tiered (as Lucene's TieredMergePolicy): which run
 * sets a flush merges with the pending rows, in one sort; returns how many,
 * marked in `chosen`.  The largest set is the base.  Once the other sets and
 * the pending rows hold 1 / MIH_FOLD_SHARE of the base's rows, everything is
 * merged (the base grows by that share at least each time, so each row is
 * rewritten by folds a bounded number of times: (1 + 1/F) / (1/F) per row
 * inserted, 3 with F = 2).  Otherwise the other sets are taken smallest
 * first while each holds no more rows than what is merged so far (similar
 * sizes: a binary counter's merges, log2 rewrites a row), and further
 * whenever stopping would leave more than MIH_SET_CAP sets.  Taking every
 * other set leaves two (the base and the new one), so the base is never
 * taken for the cap: MIH_SET_CAP >= 2.
 */
StaticAssertDecl(MIH_SET_CAP >= 2 && MIH_SET_CAP < MIH_MAX_SETS, "the merge policy's cap");

static int
mih_pick_merge(const MihMeta *meta, bool *chosen)
{
	int			order[MIH_MAX_SETS];
	int			norder = 0;
	int			base = 0;
	int			count = 0;
	int64		rest = meta->pending_count;
	int64		merged = meta->pending_count;

	memset(chosen, 0, MIH_MAX_SETS * sizeof(bool));
	if (meta->nsets == 0)
		return 0;
	for (int s = 1; s < meta->nsets; s++)
		if (meta->sets[s].nentries > meta->sets[base].nentries)
			base = s;
	for (int s = 0; s < meta->nsets; s++)
		if (s != base)
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
			chosen[s] = true;
		return meta->nsets;
	}
	for (int i = 0; i < norder; i++)
	{
		int			s = order[i];

		/* sets left after the flush if it stops here: the others and the new one */
		if (meta->sets[s].nentries > merged && meta->nsets - count + 1 <= MIH_SET_CAP)
			break;
		chosen[s] = true;
		merged += meta->sets[s].nentries;
		count++;
	}
	return count;
}

/*
 * Sorts the pending list, with the run sets the merge policy picks, into a
 * new run set.  The caller holds the metapage exclusively, so no insert runs
 * meanwhile; scans go on reading the old pending pages and sets, which are
 * retired, not reused (mih.h).  Each merged set and the pending chain take
 * an entry of the retired list: while it lacks room (no insert found the
 * metapage unpinned to recycle it yet) the flush merges nothing, and while
 * it lacks room even for the chain, or every set is taken, it waits (the
 * pending list grows) — neither happens while recycling keeps up.
 */
static void
mih_flush_pending(Relation index, Buffer meta_buffer)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	MihCollect	collect = {NULL, 0};
	SimhashBlocks blocks;
	MihRunSet	set;
	MihRetired	chain = {false};
	GenericXLogState *state;
	bool		chosen[MIH_MAX_SETS];
	int			nchosen = mih_pick_merge(meta, chosen);
	int64		rows = meta->pending_count;
	int			kept = 0;

	if (meta->nretired + 1 + nchosen > MIH_MAX_RETIRED)
	{
		memset(chosen, 0, sizeof(chosen));
		nchosen = 0;
	}
	if (meta->nretired + 1 > MIH_MAX_RETIRED || meta->nsets - nchosen + 1 > MIH_MAX_SETS)
		return;
	simhash_blocks_init(&blocks, meta->ntables);
	for (int s = 0; s < meta->nsets; s++)
		if (chosen[s])
			rows += meta->sets[s].nentries;
	/* In an insert's memory, work_mem, as GIN's pending list cleanup in an insert (spilling past it). */
	collect.sorter = mih_sorter_begin(meta->ntables, (Size) work_mem * 1024, NULL, -1, (double) rows);
	collect.mask = blocks.mask[0];
	mih_visit_chain(index, meta->pending_head, meta->pending_count, mih_collect_pending, &collect);
	for (int s = 0; s < meta->nsets; s++)
		if (chosen[s])
			mih_visit_run(index, &meta->sets[s], 0, false, mih_collect_run, &collect);
	set = mih_sorter_write_set(collect.sorter, index, true, (Size) work_mem * 1024);
	mih_sorter_end(collect.sorter, NULL);
	chain.chain_head = meta->pending_head;

	state = GenericXLogStart(index);
	meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	for (int s = 0; s < meta->nsets; s++)
	{
		if (chosen[s])
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
	mih_meta_add_set(meta, &set);
	mih_meta_retire(meta, &chain);
	if (nchosen > 0)
	{
		meta->nmerges++;
		meta->merged_rows += rows - meta->pending_count;	/* the chosen sets' rows */
	}
	meta->nflushes++;
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	meta->pending_count = 0;
	GenericXLogFinish(state);
}

/*
 * The metapage, locked exclusively.  While it lists retired entries (read
 * unlocked: a hint, checked under the lock), first tries for it with no
 * other backend pinning it (one try, no wait): then no reader can reach the
 * retired pages (mih.h), whose list is taken out here, returned in
 * `retired`, for the caller to free once done with the metapage.
 */
static int
mih_lock_meta(Relation index, Buffer meta_buffer, MihRetired *retired)
{
	if (mih_meta_of(BufferGetPage(meta_buffer))->nretired > 0 &&
		ConditionalLockBufferForCleanup(meta_buffer))
	{
		mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
		return mih_take_retired(index, meta_buffer, retired);
	}
	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	return 0;
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
	MihRetired	retired[MIH_MAX_RETIRED];
	int			nretired;
	int			ntables;

	mih_scope_init(&scope, index);
	if (!mih_fold(&scope, values, isnull, &fp))
		return false;
	meta_buffer = ReadBuffer(index, 0);
	nretired = mih_lock_meta(index, meta_buffer, retired);
	meta = mih_meta_of(BufferGetPage(meta_buffer));
	ntables = meta->ntables;
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
	mih_free_retired(index, retired, nretired, ntables);
	return false;
}
