/*
 * mih_runs.c — the run sets of simhash_mih, above its pages (mih_utils.c,
 * mih_page.c): runs written page by page from sorted entries (or copied in
 * from a parallel worker's page images) with their directories, a run's
 * directory read back and its pages walked, and recycling: the retired
 * entries the metapage lists taken out once no reader can reach them, their
 * pages (run sets' or pending chains') marked deleted and given to the free
 * space map for mih_new_buffer to reuse.
 *
 * Layer (mih.h): above mih_utils.c and mih_page.c.
 */
#include "index/mih/mih_page.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "storage/buffile.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

/*
 * Writes `size` bytes of `contents` as a fresh page, WAL-logged unless a
 * build writes it (`logged` false: the build logs every page at its end, as
 * GIN's does, rather than one record a page).  pd_lower covers them: WAL
 * leaves out the hole between pd_lower and pd_upper.
 */
BlockNumber
mih_write_page(Relation index, const void *contents, Size size, bool logged)
{
	Buffer		buffer = mih_new_buffer(index);
	BlockNumber blkno = BufferGetBlockNumber(buffer);
	GenericXLogState *state = NULL;
	Page		page;

	if (logged)
	{
		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buffer, GENERIC_XLOG_FULL_IMAGE);
	}
	else
		page = BufferGetPage(buffer);
	PageInit(page, BLCKSZ, 0);
	memcpy(PageGetContents(page), contents, size);
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + size;
	if (logged)
		GenericXLogFinish(state);
	else
		MarkBufferDirty(buffer);
	UnlockReleaseBuffer(buffer);
	return blkno;
}

/* Writes the directory of one run; returns its first page. */
static BlockNumber
mih_write_directory(Relation index, const uint64 *first_key, const BlockNumber *blkno, int64 npages,
					bool logged)
{
	MihDirPage *dir = palloc0(sizeof(MihDirPage));
	BlockNumber next = InvalidBlockNumber;
	int64		last_start = npages == 0 ? 0 : ((npages - 1) / MIH_DIR_CAP) * MIH_DIR_CAP;

	/* Back to front, so each page knows the next. */
	for (int64 start = last_start; start >= 0; start -= MIH_DIR_CAP)
	{
		dir->kind = MIH_PAGE_DIRECTORY;
		dir->n = (uint16) Min(MIH_DIR_CAP, npages - start);
		dir->next = next;
		memcpy(dir->first_key, first_key + start, dir->n * sizeof(uint64));
		memcpy(dir->blkno, blkno + start, dir->n * sizeof(BlockNumber));
		next = mih_write_page(index, dir, sizeof(MihDirPage), logged);
	}
	pfree(dir);
	return next;
}

/*
 * Room for several times the most a page holds: pages are packed from the
 * front while a page's worth waits behind, and what remains moves to the
 * start only when the room is full (one move per several pages).
 */
#define MIH_WRITER_ROOM (8 * MIH_RUN_MAX_ENTRIES)

/*
 * Starts a run: its first run (with_tids: heap TIDs beside the keys) or a
 * later one, pages WAL-logged one by one or not (logged, mih_write_page).
 */
void
mih_run_writer_begin(MihRunWriter *w, Relation index, bool with_tids, bool logged)
{
	memset(w, 0, sizeof(*w));
	w->index = index;
	w->with_tids = with_tids;
	w->logged = logged;
	w->keys = palloc(MIH_WRITER_ROOM * sizeof(uint64));
	if (with_tids)
		w->tids = palloc(MIH_WRITER_ROOM * sizeof(ItemPointerData));
	w->cap = 64;
	w->first_key = palloc(w->cap * sizeof(uint64));
	w->blkno = palloc(w->cap * sizeof(BlockNumber));
	w->page = palloc(MIH_PAGE_DATA);
}

/* Packs the next page from the waiting entries (as many as fit) and writes it. */
static void
mih_run_writer_page(MihRunWriter *w)
{
	MihRunShape shape;
	Size		size;

	if (w->npages == w->cap)
	{
		if (w->cap > MaxBlockNumber)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("simhash_mih: a run of more than %u pages", MaxBlockNumber)));
		w->cap *= 2;
		w->first_key = repalloc_huge(w->first_key, w->cap * sizeof(uint64));
		w->blkno = repalloc_huge(w->blkno, w->cap * sizeof(BlockNumber));
	}
	mih_run_fit(w->keys + w->start, w->tids ? w->tids + w->start : NULL, w->n - w->start, -1, &shape);
	memset(w->page, 0, MIH_PAGE_DATA);
	size = mih_run_pack(w->page, &shape, w->keys + w->start, w->tids ? w->tids + w->start : NULL);
	w->first_key[w->npages] = w->keys[w->start];
	if (w->images)
	{
		uint32		bytes = (uint32) size;

		BufFileWrite(w->images, &bytes, sizeof(bytes));
		BufFileWrite(w->images, w->page, size);
		w->blkno[w->npages] = InvalidBlockNumber;
	}
	else
		w->blkno[w->npages] = mih_write_page(w->index, w->page, size, w->logged);
	w->npages++;
	w->start += shape.n;
	CHECK_FOR_INTERRUPTS();
}

/* Adds n entries (keys sorted, and above every key added before; tids packed, the first run's). */
void
mih_run_writer_add(MihRunWriter *w, const uint64 *keys, const uint64 *tids, int n)
{
	while (n > 0)
	{
		int			take;

		if (w->n == MIH_WRITER_ROOM)
		{
			/* Full: what waits moves to the front. */
			w->n -= w->start;
			memmove(w->keys, w->keys + w->start, w->n * sizeof(uint64));
			if (w->tids)
				memmove(w->tids, w->tids + w->start, w->n * sizeof(ItemPointerData));
			w->start = 0;
		}
		take = Min(n, MIH_WRITER_ROOM - w->n);

		memcpy(w->keys + w->n, keys, take * sizeof(uint64));
		if (w->tids)
			for (int i = 0; i < take; i++)
				mih_tid_unpack(tids[i], &w->tids[w->n + i]);
		w->n += take;
		keys += take;
		if (tids)
			tids += take;
		n -= take;
		while (w->n - w->start >= MIH_RUN_MAX_ENTRIES)
			mih_run_writer_page(w);
	}
}

/*
 * Writes the last pages and the run's directory; sets *npages, returns the
 * directory's first page (InvalidBlockNumber for a run written to images:
 * the leader writes its directory as it copies it in).
 */
BlockNumber
mih_run_writer_end(MihRunWriter *w, BlockNumber *npages)
{
	BlockNumber head = InvalidBlockNumber;

	while (w->n > w->start)
		mih_run_writer_page(w);
	if (!w->images)
		head = mih_write_directory(w->index, w->first_key, w->blkno, w->npages, w->logged);
	*npages = (BlockNumber) w->npages;
	pfree(w->keys);
	if (w->tids)
		pfree(w->tids);
	pfree(w->first_key);
	pfree(w->blkno);
	pfree(w->page);
	return head;
}

/*
 * Copies a run's pages a parallel worker packed (each page's size, then its
 * contents: mih_run_writer_page) into the index, unlogged as a build writes,
 * then writes the run's directory; sets *npages, returns the directory's
 * first page.  A page's first key is its base (mih_run_pack).
 */
BlockNumber
mih_run_copy_images(Relation index, BufFile *images, BlockNumber *npages)
{
	int64		cap = 64;
	int64		pages = 0;
	uint64	   *first_key = palloc(cap * sizeof(uint64));
	BlockNumber *blkno = palloc(cap * sizeof(BlockNumber));
	MihRunPage *page = palloc(MIH_PAGE_DATA);
	BlockNumber head;
	uint32		size;

	if (BufFileSeek(images, 0, 0, SEEK_SET) != 0)
		ereport(ERROR, errcode_for_file_access(),
				errmsg("simhash_mih: could not rewind a temporary file of the build: %m"));
	while (BufFileRead(images, &size, sizeof(size)) == sizeof(size))
	{
		if (size > MIH_RUN_AREA)
			elog(ERROR, "simhash_mih: a page of %u bytes in a temporary file of the build", size);
		simhash_buffile_read(images, page, size);
		if (pages == cap)
		{
			cap *= 2;
			first_key = repalloc_huge(first_key, cap * sizeof(uint64));
			blkno = repalloc_huge(blkno, cap * sizeof(BlockNumber));
		}
		first_key[pages] = page->base;
		blkno[pages] = mih_write_page(index, page, size, false);
		pages++;
		CHECK_FOR_INTERRUPTS();
	}
	head = mih_write_directory(index, first_key, blkno, pages, false);
	*npages = (BlockNumber) pages;
	pfree(first_key);
	pfree(blkno);
	pfree(page);
	return head;
}

/*
 * Run t's directory in memory (in `context`): each run page's first key and
 * block.  Every block must lie inside the index, and the chain must hold the
 * metapage's page count exactly.
 */
void
mih_read_directory(Relation index, const MihRunSet *set, int t, MemoryContext context, MihRunDir *dir)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber dir_blkno = set->dir_head[t];
	BlockNumber at = 0;

	if (set->npages[t] >= nblocks)
		mih_corrupt(index, 0, "run %d of a run set has %u pages, the index %u blocks",
					t, set->npages[t], nblocks);
	dir->npages = set->npages[t];
	dir->first_key = MemoryContextAllocHuge(context, Max(dir->npages, 1) * sizeof(uint64));
	dir->blkno = MemoryContextAllocHuge(context, Max(dir->npages, 1) * sizeof(BlockNumber));
	while (dir_blkno != InvalidBlockNumber)
	{
		Buffer		buffer;
		MihDirPage *page;
		BlockNumber here = dir_blkno;
		uint32		n;

		if (dir_blkno == 0 || dir_blkno >= nblocks)
			mih_corrupt(index, dir_blkno, "a directory page outside the index (%u blocks)", nblocks);
		buffer = mih_read_page(index, dir_blkno, MIH_PAGE_DIRECTORY, BUFFER_LOCK_SHARE);
		page = mih_dir_of(BufferGetPage(buffer));
		if (page->n > dir->npages - at)
		{
			UnlockReleaseBuffer(buffer);
			mih_corrupt(index, here, "the directory of run %d holds more pages than the metapage's %u",
						t, dir->npages);
		}
		for (uint32 j = 0; j < page->n; j++)
			if (page->blkno[j] == 0 || page->blkno[j] >= nblocks)
			{
				BlockNumber bad = page->blkno[j];

				UnlockReleaseBuffer(buffer);
				mih_corrupt(index, here, "directory entry %u points to block %u, outside the index", j, bad);
			}
		n = page->n;
		memcpy(dir->first_key + at, page->first_key, n * sizeof(uint64));
		memcpy(dir->blkno + at, page->blkno, n * sizeof(BlockNumber));
		at += n;
		dir_blkno = page->next;
		UnlockReleaseBuffer(buffer);
		/* Every directory page but an empty run's one holds a page: no cycle outlasts this. */
		if (n == 0 && dir_blkno != InvalidBlockNumber)
			mih_corrupt(index, here, "an empty directory page with a successor");
	}
	if (at != dir->npages)
		mih_corrupt(index, 0, "run %d of a run set has %u pages in its directory, the metapage says %u",
					t, at, dir->npages);
}

void
mih_free_directory(MihRunDir *dir)
{
	pfree(dir->first_key);
	pfree(dir->blkno);
}

/* Every page of run t of a set (and its directory pages, with directory_too). */
void
mih_visit_run(Relation index, const MihRunSet *set, int t, bool directory_too,
			  MihPageVisitor visit, void *arg)
{
	MihRunDir	dir;
	BlockNumber dir_blkno = set->dir_head[t];

	mih_read_directory(index, set, t, CurrentMemoryContext, &dir);
	for (BlockNumber p = 0; p < dir.npages; p++)
		visit(index, dir.blkno[p], arg);
	mih_free_directory(&dir);
	/* The chain was checked whole above. */
	while (directory_too && dir_blkno != InvalidBlockNumber)
	{
		Buffer		buffer = mih_read_page(index, dir_blkno, MIH_PAGE_DIRECTORY, BUFFER_LOCK_SHARE);
		BlockNumber here = dir_blkno;

		dir_blkno = mih_dir_of(BufferGetPage(buffer))->next;
		UnlockReleaseBuffer(buffer);
		visit(index, here, arg);
	}
}

/*
 * Takes retired entries out of the metapage (WAL-logged, with the recycling
 * count bumped: a scan that no horizon protects sees it change), for the
 * caller to free once done with the metapage, which it holds exclusively.
 * `by_horizon`: only the entries no running snapshot can have read (mih.h;
 * the caller holds MIH_VACUUM_LOCK); otherwise all, and the caller waits
 * until no other backend pins the metapage before freeing (VACUUM).
 * Returns how many entries `retired` (room for MIH_MAX_RETIRED) received.
 */
int
mih_take_retired(Relation index, Buffer meta_buffer, bool by_horizon, MihRetired *retired)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	bool		take[MIH_MAX_RETIRED];
	int			ntaken = 0;
	int			kept = 0;
	GenericXLogState *state;

	/*
	 * The horizon of the index's own database (GlobalVisTestFor(index)): only
	 * its backends scan it, and replication slots' horizons count there too;
	 * NULL would be the shared catalogs', which every database's snapshots
	 * (an ANALYZE anywhere on the server) hold back.
	 */
	for (int i = 0; i < meta->nretired; i++)
	{
		take[i] = !by_horizon ||
			GlobalVisCheckRemovableFullXid(index, FullTransactionIdFromU64(meta->retired_xid[i]));
		if (take[i])
			retired[ntaken++] = meta->retired[i];
	}
	if (ntaken == 0)
		return 0;
	state = GenericXLogStart(index);
	meta = mih_meta_for_update(state, meta_buffer);
	for (int i = 0; i < meta->nretired; i++)
		if (!take[i])
		{
			meta->retired[kept] = meta->retired[i];
			meta->retired_xid[kept] = meta->retired_xid[i];
			kept++;
		}
	meta->nretired = kept;
	meta->nrecycles++;
	GenericXLogFinish(state);
	return ntaken;
}

/* Marks a page deleted (WAL-logged) and gives it to the free space map. */
static void
mih_free_page(Relation index, BlockNumber blkno, void *arg)
{
	Buffer		buffer = ReadBuffer(index, blkno);
	GenericXLogState *state;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	mih_head_of(GenericXLogRegisterBuffer(state, buffer, 0))->kind = MIH_PAGE_DELETED;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
	RecordFreeIndexPage(index, blkno);
}

/*
 * Frees the pages of retired entries taken out of the metapage
 * (mih_take_retired) once no reader can reach them.  A crash before the end
 * leaks the rest until REINDEX: never unsafe.
 */
void
mih_free_retired(Relation index, const MihRetired *retired, int nretired, int ntables)
{
	for (int i = 0; i < nretired; i++)
	{
		if (retired[i].is_set)
			for (int t = 0; t < ntables; t++)
				mih_visit_run(index, &retired[i].set, t, true, mih_free_page, NULL);
		else
			mih_visit_chain(index, retired[i].chain_head, InvalidBlockNumber, RelationGetNumberOfBlocks(index),
							mih_free_page, NULL);
	}
	if (nretired > 0)
		IndexFreeSpaceMapVacuum(index);
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
