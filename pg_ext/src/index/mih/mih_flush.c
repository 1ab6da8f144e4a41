/*
 * mih_flush.c — the flush of simhash_mih's sealed pending list: the chain
 * an insert sealed (mih_insert.c) sorted into a new run set with the
 * metapage unlocked (inserts and scans go on; scans read the sealed chain
 * meanwhile), published in its place under a brief lock, the chain
 * retired.  Run by a flush worker (mih_worker.c) or, where none can start,
 * by the insert itself; one flusher at a time (MIH_FLUSH_LOCK).  What a
 * flush needs room for in the metapage, which decides when a list is sealed.
 *
 * Layer (mih.h): above mih_utils.c and mih_sort.c.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"
#include "storage/lmgr.h"

/*
 * Whether the retired list is full: no room for the entry a flush retires
 * (merges reserve one for each set they claim).
 */
bool
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
bool
mih_flush_has_room(const MihMeta *meta)
{
	return !mih_retired_full(meta) && meta->nsets + 1 <= MIH_MAX_SETS;
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
 * meanwhile), and publishes the set; returns whether it did (the caller
 * then sees to a merge if one is due: mih_after_flush).  A chain no flusher
 * waits for any more was left by one that failed, maybe after writing pages
 * of its set: the metapage says so (lost_pages, for VACUUM).  One flusher at
 * a time: MIH_FLUSH_LOCK.
 */
bool
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
		return false;			/* another backend flushes; the sealed chain waits for it */
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_check_meta(index, mih_meta_of(BufferGetPage(meta_buffer)));
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	if (meta.sealed_count == 0 || !mih_flush_has_room(&meta))
	{
		UnlockReleaseBuffer(meta_buffer);
		UnlockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
		return false;
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
	mih_visit_chain(index, meta.sealed_head, InvalidBlockNumber, meta.sealed_count, mih_collect_pending, &collect);
	set = mih_sorter_write_set(collect.sorter, index, true, (Size) memory_kb * 1024);
	mih_sorter_end(collect.sorter, NULL);

	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	mih_publish_flush(index, meta_buffer, &set);
	UnlockReleaseBuffer(meta_buffer);
	UnlockPage(index, MIH_FLUSH_LOCK, ExclusiveLock);
	return true;
}
