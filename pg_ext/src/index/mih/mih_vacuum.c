/*
 * mih_vacuum.c — VACUUM of simhash_mih: dead TIDs compacted out of every
 * first-run and pending page (and their fingerprints out of the later runs),
 * the retired pages inserts left recycled once no scan can still read them.
 * Run sets are merged by mih_merge.c, not here.
 *
 * Layer (mih.h): above mih_utils.c, mih_page.c and mih_runs.c.
 */
#include "index/mih/mih_page.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"

#include "blocks/radix_sort.h"

typedef struct MihVacuum
{
	IndexBulkDeleteCallback callback;
	void	   *callback_state;
	IndexBulkDeleteResult *stats;
	const MihRunSet *set;		/* the run set being vacuumed */
	SimhashBlocks blocks;
	/*
	 * Fingerprints taken out of the set's first run, not yet out of the later
	 * runs: room for `room`, grown up to `most` (what maintenance_work_mem
	 * allows), then taken out in a batch.
	 */
	uint64	   *removed;
	int64		nremoved;
	int64		room;
	int64		most;
} MihVacuum;

/* Rewrites a run page's contents (the caller's GenericXLog copy) with n entries. */
static void
mih_repack(Page page, int bucket_bits, const uint64 *keys, const ItemPointerData *tids, int n)
{
	MihRunShape shape;
	MihRunPage *run = (MihRunPage *) PageGetContents(page);

	/* The page's own bucket bits: fewer entries never need more room (mih_run_fit). */
	mih_run_fit(keys, tids, n, bucket_bits, &shape);
	if (shape.n != n)
		elog(ERROR, "simhash_mih: %d entries do not fit back into their page", n);
	memset(run, 0, MIH_PAGE_DATA);
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + mih_run_pack(run, &shape, keys, tids);
}

/*
 * Takes the removed fingerprints out of every later run of the set: sorted
 * by each run's key, they are merged with the run's pages, skipping the
 * pages whose key range (from the directory) holds none of them.  Each
 * removed fingerprint takes out one entry (rows may share a fingerprint).
 */
static void
mih_remove_from_later_runs(Relation index, MihVacuum *v)
{
	uint64	   *keys = palloc_extended(Max(v->nremoved, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);

	for (int t = 1; t < v->blocks.nblocks && v->nremoved > 0; t++)
	{
		MihRunDir	dir;
		int64		r = 0;

		for (int64 i = 0; i < v->nremoved; i++)
			keys[i] = lead_with(v->removed[i], v->blocks.mask[t]);
		simhash_radix_sort(keys, NULL, (uint32) v->nremoved);
		mih_read_directory(index, v->set, t, CurrentMemoryContext, &dir);
		for (BlockNumber p = 0; p < dir.npages && r < v->nremoved; p++)
		{
			Buffer		buffer;
			GenericXLogState *state;
			MihRunView	view;
			uint64		page_keys[MIH_RUN_MAX_ENTRIES];
			int			n,
						kept = 0;

			/* A page's keys never exceed the next page's first key. */
			if (p + 1 < dir.npages && keys[r] > dir.first_key[p + 1])
				continue;
			buffer = mih_read_page(index, dir.blkno[p], MIH_PAGE_RUN, BUFFER_LOCK_EXCLUSIVE);
			mih_run_view(&view, index, dir.blkno[p], BufferGetPage(buffer), false);
			n = mih_run_decode(&view, page_keys, NULL);
			for (int j = 0; j < n; j++)
			{
				while (r < v->nremoved && keys[r] < page_keys[j])
					r++;		/* not in this run: nothing to take out */
				if (r < v->nremoved && keys[r] == page_keys[j])
					r++;
				else
					page_keys[kept++] = page_keys[j];
			}
			if (kept < n)
			{
				state = GenericXLogStart(index);
				mih_repack(GenericXLogRegisterBuffer(state, buffer, 0), view.page->bucket_bits,
						   page_keys, NULL, kept);
				GenericXLogFinish(state);
			}
			UnlockReleaseBuffer(buffer);
			simhash_vacuum_delay_point();
		}
		mih_free_directory(&dir);
	}
	pfree(keys);
	v->nremoved = 0;
}

/* Compacts the entries whose TID VACUUM removes out of a first-run page. */
static void
mih_vacuum_run_page(Relation index, BlockNumber blkno, void *arg)
{
	MihVacuum  *v = (MihVacuum *) arg;
	Buffer		buffer;
	MihRunView	view;
	uint64		keys[MIH_RUN_MAX_ENTRIES];
	ItemPointerData tids[MIH_RUN_MAX_ENTRIES];
	int			n,
				kept = 0;

	/* Room for every fingerprint this page may give up (before locking it). */
	if (v->nremoved + MIH_RUN_MAX_ENTRIES > v->room)
	{
		if (v->room * 2 <= v->most)
		{
			v->room *= 2;
			v->removed = repalloc_huge(v->removed, v->room * sizeof(uint64));
		}
		else
			mih_remove_from_later_runs(index, v);
	}
	buffer = mih_read_page(index, blkno, MIH_PAGE_RUN, BUFFER_LOCK_EXCLUSIVE);
	mih_run_view(&view, index, blkno, BufferGetPage(buffer), true);
	n = mih_run_decode(&view, keys, tids);
	for (int j = 0; j < n; j++)
	{
		if (v->callback(&tids[j], v->callback_state))
		{
			v->stats->tuples_removed++;
			v->removed[v->nremoved++] = unlead(keys[j], v->blocks.mask[0]);
			continue;
		}
		keys[kept] = keys[j];
		tids[kept] = tids[j];
		kept++;
	}
	if (kept < n)
	{
		GenericXLogState *state = GenericXLogStart(index);

		mih_repack(GenericXLogRegisterBuffer(state, buffer, 0), view.page->bucket_bits, keys, tids, kept);
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buffer);
	simhash_vacuum_delay_point();
}

/* Compacts the entries whose TID VACUUM removes out of a pending page. */
static void
mih_vacuum_pending_page(Relation index, BlockNumber blkno, void *arg)
{
	MihVacuum  *v = (MihVacuum *) arg;
	Buffer		buffer = mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_EXCLUSIVE);
	GenericXLogState *state = GenericXLogStart(index);
	MihPendingPage *page = mih_pending_of(GenericXLogRegisterBuffer(state, buffer, 0));
	uint32		kept = 0;

	for (uint32 j = 0; j < page->n; j++)
	{
		if (v->callback(&page->tids[j], v->callback_state))
		{
			v->stats->tuples_removed++;
			continue;
		}
		page->fps[kept] = page->fps[j];
		page->tids[kept] = page->tids[j];
		kept++;
	}
	if (kept == page->n)
		GenericXLogAbort(state);
	else
	{
		page->n = (uint16) kept;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buffer);
	simhash_vacuum_delay_point();
}

/*
 * Counts a pass over the pending pages in the metapage before it removes a
 * row from one, and again after: a scan that copied a pending page
 * (mih_scan_pending.c) reads it again after a change, so no copy keeps a
 * TID VACUUM frees, and none reads a page without its lock while the count
 * is odd (a pass under way, or cut short).
 */
static void
mih_count_pending_vacuum(Relation index, Buffer meta_buffer, bool starting)
{
	GenericXLogState *state;
	MihMeta    *meta;

	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	meta = mih_meta_for_update(state, meta_buffer);
	meta->pending_vacuums += starting && MIH_PENDING_VACUUM_RUNNING(meta->pending_vacuums) ? 2 : 1;
	GenericXLogFinish(state);
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
}

/*
 * Dead TIDs out of every run set (the first run, then their fingerprints out
 * of the later runs, in batches that fit maintenance_work_mem) and out of
 * the pending list.
 */
IndexBulkDeleteResult *
mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	MihMeta		meta;
	MihVacuum	v;
	Buffer		meta_buffer;

	/*
	 * VACUUM reads the run sets without a snapshot to hold recycling back:
	 * inserts recycle nothing while it holds this lock (mih.h).
	 */
	LockPage(info->index, MIH_VACUUM_LOCK, ShareLock);
	meta_buffer = mih_pin_meta(info->index, &meta);

	memset(&v, 0, sizeof(v));
	v.callback = callback;
	v.callback_state = callback_state;
	v.stats = stats ? stats : palloc0(sizeof(IndexBulkDeleteResult));
	simhash_blocks_init(&v.blocks, meta.ntables);
	/* the removed fingerprints and their sorted keys (and the sort's copy), 8 bytes each */
	v.most = Max((int64) maintenance_work_mem * 1024 / (3 * sizeof(uint64)), 2 * MIH_RUN_MAX_ENTRIES);
	v.most = Min(v.most, (int64) PG_UINT32_MAX);	/* what the radix sort takes */
	v.room = 2 * MIH_RUN_MAX_ENTRIES;
	v.removed = palloc(v.room * sizeof(uint64));
	for (int s = 0; s < meta.nsets; s++)
	{
		v.set = &meta.sets[s];
		mih_visit_run(info->index, v.set, 0, false, mih_vacuum_run_page, &v);
		mih_remove_from_later_runs(info->index, &v);
	}
	mih_count_pending_vacuum(info->index, meta_buffer, true);
	if (meta.sealed_count > 0)
		mih_visit_chain(info->index, meta.sealed_head, InvalidBlockNumber, meta.sealed_count,
						mih_vacuum_pending_page, &v);
	mih_visit_lanes(info->index, &meta, 0, mih_vacuum_pending_page, &v);
	mih_count_pending_vacuum(info->index, meta_buffer, false);
	pfree(v.removed);
	ReleaseBuffer(meta_buffer);
	UnlockPage(info->index, MIH_VACUUM_LOCK, ShareLock);
	return v.stats;
}

/*
 * Recycles the retired pages: takes the list out of the metapage, then waits
 * until no other backend pins the metapage (any scan that could still read a
 * retired page pinned it before the pages were retired), then frees them.
 */
static void
mih_recycle(Relation index)
{
	Buffer		buffer = ReadBuffer(index, 0);
	MihRetired	retired[MIH_MAX_RETIRED];
	int			nretired;
	int			ntables;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	ntables = mih_meta_of(BufferGetPage(buffer))->ntables;
	nretired = mih_take_retired(index, buffer, false, retired);
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	if (nretired > 0)
	{
		LockBufferForCleanup(buffer);
		LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	}
	ReleaseBuffer(buffer);
	mih_free_retired(index, retired, nretired, ntables);
}

/* The pages mih_reclaim_lost's walk reached. */
typedef struct MihReached
{
	bool	   *reached;
	BlockNumber nblocks;
} MihReached;

static void
mih_mark_reached(Relation index, BlockNumber blkno, void *arg)
{
	MihReached *r = (MihReached *) arg;

	if (blkno >= r->nblocks)	/* the walks check block numbers already; never written past the end */
		mih_corrupt(index, blkno, "reached past the index's %u blocks", r->nblocks);
	r->reached[blkno] = true;
}

/* Marks every page the metapage reaches: run sets, lists, retired entries. */
static void
mih_mark_layout(Relation index, const MihMeta *meta, MihReached *reached)
{
	BlockNumber nblocks = reached->nblocks;

	reached->reached[0] = true;
	for (int s = 0; s < meta->nsets; s++)
		for (int t = 0; t < meta->ntables; t++)
			mih_visit_run(index, &meta->sets[s], t, true, mih_mark_reached, reached);
	for (int r = 0; r < meta->nretired; r++)
	{
		if (meta->retired[r].is_set)
			for (int t = 0; t < meta->ntables; t++)
				mih_visit_run(index, &meta->retired[r].set, t, true, mih_mark_reached, reached);
		else
			mih_visit_chain(index, meta->retired[r].chain_head, InvalidBlockNumber, nblocks, mih_mark_reached, reached);
	}
	mih_visit_lanes(index, meta, nblocks, mih_mark_reached, reached);
	if (meta->sealed_count > 0)
		mih_visit_chain(index, meta->sealed_head, InvalidBlockNumber, nblocks, mih_mark_reached, reached);
}

/*
 * Frees the pages a failed flush or merge wrote, which nothing reaches, once
 * the metapage says one failed: with no flush, merge or recycling running
 * (their locks taken, without waiting: else the next VACUUM does it), every
 * page the metapage reaches is marked under its exclusive lock (inserts wait
 * for that walk: directories and lists, not run pages), then every other
 * run or directory page is freed: what a failed flush or merge wrote.  An
 * insert may meanwhile take a free page (from the free space map, or past
 * the end) for a pending lane, which it links under the metapage's lock
 * after the walk: pending pages are never lost, so those are left alone.
 * Returns the pages freed, or -1 when it did not look.
 */
static int64
mih_reclaim_lost(Relation index)
{
	bool		merge_locked[MIH_MERGE_SLOTS] = {false};
	int64		freed = -1;
	BlockNumber nblocks;
	Buffer		meta_buffer;
	MihMeta		meta = mih_read_meta(index);
	bool	   *reached;
	bool		all = true;
	BufferAccessStrategy strategy;

	if (!meta.lost_pages || !ConditionalLockPage(index, MIH_FLUSH_LOCK, ExclusiveLock))
		return -1;
	for (int i = 0; i < MIH_MERGE_SLOTS; i++)
		all &= merge_locked[i] = ConditionalLockPage(index, MIH_MERGE_LOCK + i, ExclusiveLock);
	if (all && ConditionalLockPage(index, MIH_VACUUM_LOCK, ExclusiveLock))
	{
		meta_buffer = ReadBuffer(index, 0);
		LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
		meta = *mih_meta_of(BufferGetPage(meta_buffer));
		mih_check_meta(index, &meta);
		nblocks = RelationGetNumberOfBlocks(index);
		reached = palloc_extended(nblocks * sizeof(bool), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		mih_mark_layout(index, &meta, &(MihReached) {reached, nblocks});
		{
			GenericXLogState *state = GenericXLogStart(index);

			mih_meta_for_update(state, meta_buffer)->lost_pages = 0;
			GenericXLogFinish(state);
		}
		UnlockReleaseBuffer(meta_buffer);

		strategy = GetAccessStrategy(BAS_BULKREAD);
		freed = 0;
		for (BlockNumber blkno = 1; blkno < nblocks; blkno++)
		{
			Buffer		buffer;
			Page		page;
			uint16		kind;

			if (reached[blkno])
				continue;
			buffer = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
			LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
			page = BufferGetPage(buffer);
			kind = PageIsNew(page) ? MIH_PAGE_DELETED : mih_head_of(page)->kind;
			if (kind == MIH_PAGE_RUN || kind == MIH_PAGE_DIRECTORY)
			{
				GenericXLogState *state = GenericXLogStart(index);

				mih_head_of(GenericXLogRegisterBuffer(state, buffer, 0))->kind = MIH_PAGE_DELETED;
				GenericXLogFinish(state);
				freed++;
				kind = MIH_PAGE_DELETED;
			}
			UnlockReleaseBuffer(buffer);
			/* a pending page: a free page an insert has taken since the walk */
			if (kind == MIH_PAGE_DELETED)
				RecordFreeIndexPage(index, blkno);
			simhash_vacuum_delay_point();
		}
		FreeAccessStrategy(strategy);
		pfree(reached);
		IndexFreeSpaceMapVacuum(index);
		UnlockPage(index, MIH_VACUUM_LOCK, ExclusiveLock);
	}
	for (int i = 0; i < MIH_MERGE_SLOTS; i++)
		if (merge_locked[i])
			UnlockPage(index, MIH_MERGE_LOCK + i, ExclusiveLock);
	UnlockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
	return freed;
}

IndexBulkDeleteResult *
mih_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	MihMeta		meta;
	Buffer		meta_buffer;
	int64		lost;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	mih_recycle(info->index);
	lost = mih_reclaim_lost(info->index);
	if (lost > 0)
		ereport(LOG,
				errmsg("simhash_mih index \"%s\": freed " INT64_FORMAT " pages a failed flush or merge had written",
					   RelationGetRelationName(info->index), lost));
	meta_buffer = mih_pin_meta(info->index, &meta);
	stats->num_index_tuples = mih_pending_rows(info->index, &meta) + meta.sealed_count;
	ReleaseBuffer(meta_buffer);
	for (int s = 0; s < meta.nsets; s++)
		stats->num_index_tuples += meta.sets[s].nentries;
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}
