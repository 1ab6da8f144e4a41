/*
 * mih_merge.c — merges of simhash_mih run sets, apart from flushes: the
 * size-tiered merge policy, and merges that claim their sets in the
 * metapage, sort them into one set with no lock held (queries and flushes go
 * on), and publish it in their place under a brief lock.  A merge worker
 * runs them (mih_worker.c), started by the flush that made a merge due;
 * where none can start, that flush's backend runs one merge itself.  Up to
 * MIH_MERGE_SLOTS merges run at once, on sets no other merge claims (a long
 * fold of the base, and merges of the small sets flushes keep adding beside
 * it), each holding its slot's heavyweight lock, which an ERROR or crash
 * releases: a merge finding a free slot's claims in the metapage drops them.
 *
 * Layer (mih.h): above mih_utils.c, mih_runs.c and mih_sort.c.
 */
#include "index/mih/mih_sort.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lmgr.h"

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
bool
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
 * Whether the metapage holds claims of a merge slot no merge holds now (its
 * merge ended in an ERROR or a crash): they keep their sets from every
 * merge until a merge drops them.
 */
bool
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
int
mih_unclaimed_sets(const MihMeta *meta)
{
	int			n = 0;

	for (int s = 0; s < meta->nsets; s++)
		n += !mih_is_claimed(meta, s);
	return n;
}
