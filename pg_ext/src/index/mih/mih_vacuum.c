/*
 * mih_vacuum.c — VACUUM of simhash_mih: dead TIDs compacted out of every
 * page, run sets merged into one, retired pages recycled once no scan can
 * still read them.
 */
#include "index/mih/mih.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "storage/indexfsm.h"
#include "utils/memutils.h"

typedef struct MihVacuum
{
	IndexBulkDeleteCallback callback;
	void	   *callback_state;
	IndexBulkDeleteResult *stats;
} MihVacuum;

/* Compacts the entries whose TID VACUUM removes out of one page. */
static void
mih_vacuum_page(Relation index, BlockNumber blkno, void *arg)
{
	MihVacuum  *v = (MihVacuum *) arg;
	Buffer		buffer = ReadBuffer(index, blkno);
	GenericXLogState *state;
	MihRunPage *run;
	uint32		kept = 0;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	run = mih_run_of(GenericXLogRegisterBuffer(state, buffer, 0));
	for (uint32 j = 0; j < run->n; j++)
	{
		if (v->callback(&run->tids[j], v->callback_state))
		{
			v->stats->tuples_removed++;
			continue;
		}
		run->keys[kept] = run->keys[j];
		run->tids[kept] = run->tids[j];
		kept++;
	}
	if (kept == run->n)
		GenericXLogAbort(state);
	else
	{
		run->n = kept;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buffer);
	simhash_vacuum_delay_point();
}

IndexBulkDeleteResult *
mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	MihMeta		meta = mih_read_meta(info->index);
	MihVacuum	v = {callback, callback_state, stats ? stats : palloc0(sizeof(IndexBulkDeleteResult))};

	for (int s = 0; s < meta.nsets; s++)
		for (int t = 0; t < meta.ntables; t++)
			mih_visit_run(info->index, &meta.sets[s], t, false, mih_vacuum_page, &v);
	mih_visit_chain(info->index, meta.pending_head, mih_vacuum_page, &v);
	return v.stats;
}

/* Merges every run set into one (if it fits in maintenance_work_mem). */
static void
mih_merge_sets(Relation index)
{
	MihMeta		meta = mih_read_meta(index);
	MihEntries	e;
	SimhashBlocks blocks;
	MihRunSet	merged;
	Buffer		buffer;
	GenericXLogState *state;
	MihMeta    *live;
	int64		total = 0;
	int			nmerged = meta.nsets;

	if (meta.nsets < 2 || meta.nretired + meta.nsets > MIH_MAX_RETIRED)
		return;
	for (int s = 0; s < nmerged; s++)
		total += meta.sets[s].nentries;
	if (total * 4 * sizeof(uint64) > (Size) maintenance_work_mem * 1024)
		return;
	simhash_blocks_init(&blocks, meta.ntables);
	mih_entries_init(&e);
	for (int s = 0; s < nmerged; s++)
	{
		MihCollect	collect = {&e, blocks.mask[0]};

		mih_visit_run(index, &meta.sets[s], 0, false, mih_collect_page, &collect);
	}
	merged = mih_write_set(index, &blocks, &e);

	/* Swap: the merged sets were the first nmerged; flushes only append. */
	buffer = ReadBuffer(index, 0);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	live = mih_meta_of(GenericXLogRegisterBuffer(state, buffer, 0));
	for (int s = 0; s < nmerged; s++)
	{
		MihRetired	old = {true, live->sets[s], InvalidBlockNumber};

		mih_meta_retire(live, &old);
	}
	memmove(&live->sets[1], &live->sets[nmerged], (live->nsets - nmerged) * sizeof(MihRunSet));
	live->sets[0] = merged;
	live->nsets -= nmerged - 1;
	live->generation++;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
	pfree(e.fps);
	pfree(e.tids);
}

static void
mih_free_page(Relation index, BlockNumber blkno, void *arg)
{
	Buffer		buffer = ReadBuffer(index, blkno);
	GenericXLogState *state;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	mih_run_of(GenericXLogRegisterBuffer(state, buffer, 0))->n = MIH_DELETED;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
	RecordFreeIndexPage(index, blkno);
}

/*
 * Recycles the retired pages: takes the list out of the metapage, then waits
 * until no scan pins the metapage (any scan that could still read a retired
 * page pinned it before the pages were retired), then frees them.
 */
static void
mih_recycle(Relation index)
{
	Buffer		buffer = ReadBuffer(index, 0);
	GenericXLogState *state;
	MihMeta    *meta;
	MihRetired *retired;
	int			nretired;
	int			ntables;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	meta = mih_meta_of(BufferGetPage(buffer));
	ntables = meta->ntables;
	nretired = meta->nretired;
	if (nretired == 0)
	{
		UnlockReleaseBuffer(buffer);
		return;
	}
	retired = palloc(nretired * sizeof(MihRetired));
	memcpy(retired, meta->retired, nretired * sizeof(MihRetired));
	state = GenericXLogStart(index);
	mih_meta_of(GenericXLogRegisterBuffer(state, buffer, 0))->nretired = 0;
	GenericXLogFinish(state);
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	LockBufferForCleanup(buffer);
	UnlockReleaseBuffer(buffer);
	for (int i = 0; i < nretired; i++)
	{
		if (retired[i].is_set)
			for (int t = 0; t < ntables; t++)
				mih_visit_run(index, &retired[i].set, t, true, mih_free_page, NULL);
		else
			mih_visit_chain(index, retired[i].chain_head, mih_free_page, NULL);
	}
	IndexFreeSpaceMapVacuum(index);
	pfree(retired);
}

IndexBulkDeleteResult *
mih_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	MihMeta		meta;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	mih_merge_sets(info->index);
	mih_recycle(info->index);
	meta = mih_read_meta(info->index);
	stats->num_index_tuples = meta.pending_count;
	for (int s = 0; s < meta.nsets; s++)
		stats->num_index_tuples += meta.sets[s].nentries;
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}
