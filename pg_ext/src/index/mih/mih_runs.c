/*
 * mih_runs.c — the pages of a simhash_mih index: page allocation (recycled
 * pages first), run sets written from sorted entries, walks over a run's or a
 * chain's pages, and the metapage.
 */
#include "index/mih/mih.h"

#include "access/generic_xlog.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"

#include "blocks/radix_sort.h"

/* A page to write, exclusively locked: a recycled one, else a new one. */
Buffer
mih_new_buffer(Relation index)
{
	bool		need_lock;
	Buffer		buffer;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		buffer = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buffer))
		{
			Page		page = BufferGetPage(buffer);

			/* The FSM is not WAL-logged: trust only pages marked deleted. */
			if (PageIsNew(page) || mih_run_of(page)->n == MIH_DELETED)
				return buffer;
			LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buffer);
	}
	need_lock = !RELATION_IS_LOCAL(index);
	if (need_lock)
		LockRelationForExtension(index, ExclusiveLock);
	buffer = ReadBuffer(index, P_NEW);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	if (need_lock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buffer;
}

/* Writes `size` bytes of `contents` as a fresh page, WAL-logged. */
BlockNumber
mih_write_page(Relation index, const void *contents, Size size)
{
	Buffer		buffer = mih_new_buffer(index);
	GenericXLogState *state = GenericXLogStart(index);
	Page		page = GenericXLogRegisterBuffer(state, buffer, GENERIC_XLOG_FULL_IMAGE);
	BlockNumber blkno = BufferGetBlockNumber(buffer);

	PageInit(page, BLCKSZ, 0);
	memcpy(PageGetContents(page), contents, size);
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + size;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
	return blkno;
}

void
mih_entries_init(MihEntries *e)
{
	e->cap = 1024;
	e->n = 0;
	e->fps = palloc_extended(e->cap * sizeof(uint64), MCXT_ALLOC_HUGE);
	e->tids = palloc_extended(e->cap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
}

void
mih_entries_add(MihEntries *e, uint64 fp, ItemPointer tid)
{
	if (e->n == e->cap)
	{
		if ((Size) e->cap * 2 * sizeof(uint64) > MaxAllocHugeSize / 2)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("simhash_mih: too many rows to sort at once")));
		e->cap *= 2;
		e->fps = repalloc_huge(e->fps, e->cap * sizeof(uint64));
		e->tids = repalloc_huge(e->tids, e->cap * sizeof(ItemPointerData));
	}
	e->fps[e->n] = fp;
	e->tids[e->n] = *tid;
	e->n++;
}

/* Writes the directory of one run; returns its first page. */
static BlockNumber
mih_write_directory(Relation index, const uint64 *first_key, const BlockNumber *blkno, int64 npages)
{
	MihDirPage *dir = palloc0(sizeof(MihDirPage));
	BlockNumber next = InvalidBlockNumber;
	int64		last_start = npages == 0 ? 0 : ((npages - 1) / MIH_DIR_CAP) * MIH_DIR_CAP;

	/* Back to front, so each page knows the next. */
	for (int64 start = last_start; start >= 0; start -= MIH_DIR_CAP)
	{
		dir->n = (uint32) Min(MIH_DIR_CAP, npages - start);
		dir->next = next;
		memcpy(dir->first_key, first_key + start, dir->n * sizeof(uint64));
		memcpy(dir->blkno, blkno + start, dir->n * sizeof(BlockNumber));
		next = mih_write_page(index, dir, sizeof(MihDirPage));
	}
	pfree(dir);
	return next;
}

/* Sorts the entries into one run per block and writes them: a new run set. */
MihRunSet
mih_write_set(Relation index, const SimhashBlocks *blocks, MihEntries *e)
{
	MihRunSet	set;
	int64		n = e->n;
	int64		npages = (n + MIH_PAGE_CAP - 1) / MIH_PAGE_CAP;
	uint64	   *keys = palloc_extended(Max(n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	uint64	   *rows = palloc_extended(Max(n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	uint64	   *first_key = palloc_extended(Max(npages, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	BlockNumber *blkno = palloc_extended(Max(npages, 1) * sizeof(BlockNumber), MCXT_ALLOC_HUGE);
	MihRunPage *run = palloc0(sizeof(MihRunPage));

	memset(&set, 0, sizeof(set));
	set.nentries = n;
	for (int t = 0; t < blocks->nblocks; t++)
	{
		for (int64 i = 0; i < n; i++)
		{
			keys[i] = lead_with(e->fps[i], blocks->mask[t]);
			rows[i] = i;
		}
		simhash_radix_sort(keys, rows, (uint32) n);
		for (int64 p = 0; p < npages; p++)
		{
			int64		first = p * MIH_PAGE_CAP;

			run->n = (uint32) Min(MIH_PAGE_CAP, n - first);
			run->next = InvalidBlockNumber;
			for (uint32 j = 0; j < run->n; j++)
			{
				run->keys[j] = keys[first + j];
				run->tids[j] = e->tids[rows[first + j]];
			}
			first_key[p] = run->keys[0];
			blkno[p] = mih_write_page(index, run, sizeof(MihRunPage));
			CHECK_FOR_INTERRUPTS();
		}
		set.npages[t] = (BlockNumber) npages;
		set.dir_head[t] = mih_write_directory(index, first_key, blkno, npages);
	}
	pfree(keys);
	pfree(rows);
	pfree(first_key);
	pfree(blkno);
	pfree(run);
	return set;
}

void
mih_visit_run(Relation index, const MihRunSet *set, int t, bool directory_too,
			  MihPageVisitor visit, void *arg)
{
	BlockNumber dir_blkno = set->dir_head[t];

	while (dir_blkno != InvalidBlockNumber)
	{
		Buffer		buffer = ReadBuffer(index, dir_blkno);
		MihDirPage *dir;
		BlockNumber here = dir_blkno;
		uint32		n;
		BlockNumber *blknos;

		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		dir = mih_dir_of(BufferGetPage(buffer));
		n = dir->n;
		blknos = palloc(Max(n, 1) * sizeof(BlockNumber));
		memcpy(blknos, dir->blkno, n * sizeof(BlockNumber));
		dir_blkno = dir->next;
		UnlockReleaseBuffer(buffer);
		for (uint32 j = 0; j < n; j++)
			visit(index, blknos[j], arg);
		if (directory_too)
			visit(index, here, arg);
		pfree(blknos);
	}
}

/* Every page of a chain linked by `next` (the pending list). */
void
mih_visit_chain(Relation index, BlockNumber blkno, MihPageVisitor visit, void *arg)
{
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buffer = ReadBuffer(index, blkno);
		BlockNumber next;

		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		next = mih_run_of(BufferGetPage(buffer))->next;
		UnlockReleaseBuffer(buffer);
		visit(index, blkno, arg);
		blkno = next;
	}
}

void
mih_collect_page(Relation index, BlockNumber blkno, void *arg)
{
	MihCollect *c = (MihCollect *) arg;
	Buffer		buffer = ReadBuffer(index, blkno);
	MihRunPage *run;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	run = mih_run_of(BufferGetPage(buffer));
	for (uint32 j = 0; j < run->n; j++)
		mih_entries_add(c->entries, c->mask ? unlead(run->keys[j], c->mask) : run->keys[j],
						&run->tids[j]);
	UnlockReleaseBuffer(buffer);
}

void
mih_init_meta(Relation index, ForkNumber fork, int ntables)
{
	Buffer		buffer = ReadBufferExtended(index, fork, P_NEW, RBM_NORMAL, NULL);
	GenericXLogState *state;
	Page		page;
	MihMeta    *meta;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	Assert(BufferGetBlockNumber(buffer) == 0);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buffer, GENERIC_XLOG_FULL_IMAGE);
	PageInit(page, BLCKSZ, 0);
	meta = mih_meta_of(page);
	memset(meta, 0, sizeof(MihMeta));
	meta->magic = MIH_MAGIC;
	meta->version = MIH_VERSION;
	meta->ntables = ntables;
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
}

/* Adds a run set to the metapage, which the caller holds exclusively. */
void
mih_meta_add_set(MihMeta *meta, const MihRunSet *set)
{
	Assert(meta->nsets < MIH_MAX_SETS);
	meta->sets[meta->nsets++] = *set;
	meta->generation++;
}

bool
mih_meta_retire(MihMeta *meta, const MihRetired *what)
{
	if (meta->nretired >= MIH_MAX_RETIRED)
		return false;			/* leaked until the next REINDEX; never unsafe */
	meta->retired[meta->nretired++] = *what;
	return true;
}

void
mih_check_meta(Relation index, const MihMeta *meta)
{
	if (meta->magic != MIH_MAGIC)
		ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
						errmsg("index \"%s\" is not a simhash_mih index", RelationGetRelationName(index))));
	if (meta->version != MIH_VERSION)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("index \"%s\" has page format %u, this build reads %u",
							   RelationGetRelationName(index), meta->version, MIH_VERSION),
						errhint("REINDEX INDEX %s", RelationGetRelationName(index))));
}

/* A copy of the metapage. */
MihMeta
mih_read_meta(Relation index)
{
	Buffer		buffer = ReadBuffer(index, 0);
	MihMeta		meta;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	meta = *mih_meta_of(BufferGetPage(buffer));
	UnlockReleaseBuffer(buffer);
	mih_check_meta(index, &meta);
	return meta;
}
