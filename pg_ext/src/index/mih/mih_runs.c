/*
 * mih_runs.c — the pages of a simhash_mih index: page allocation (recycled
 * pages first), runs written page by page from sorted entries, walks over a
 * run's or a chain's pages and a run's directory, and the metapage.  Every page read
 * here is checked before use (kind, counts): a corrupted one is an ERROR
 * naming its block.
 */
#include "index/mih/mih_page.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "access/xloginsert.h"
#include "storage/buffile.h"
#include "storage/indexfsm.h"

#include "index/mih/mih_sort.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

/*
 * The index a scan of this backend is reading, with the recycling count it
 * started from (mih_scan.c): a page that looks corrupted to that scan may
 * have been recycled under it (on a hot standby), which is not corruption.
 */
static Oid	scan_guard_index = InvalidOid;
static uint64 scan_guard_recycles;

void
mih_scan_guard(Relation index, uint64 nrecycles)
{
	scan_guard_index = index ? RelationGetRelid(index) : InvalidOid;
	scan_guard_recycles = nrecycles;
}

/*
 * The one form of every corruption report: SQLSTATE XX002, the index, the
 * block; or, for a scan whose pages were recycled meanwhile, a retryable
 * serialization failure.
 */
void
mih_corrupt(Relation index, BlockNumber blkno, const char *fmt,...)
{
	char		what[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(what, sizeof(what), fmt, args);
	va_end(args);
	if (OidIsValid(scan_guard_index) && scan_guard_index == RelationGetRelid(index))
	{
		scan_guard_index = InvalidOid;	/* once: the read below may fail too */
		if (mih_counts_now(index).nrecycles != scan_guard_recycles)
			ereport(ERROR,
					errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					errmsg("could not finish a scan of simhash_mih index \"%s\": block %u was recycled meanwhile",
						   RelationGetRelationName(index), blkno),
					errhint("Retry the query.  On a hot standby, recycling follows the primary's flushes."));
	}
	ereport(ERROR,
			errcode(ERRCODE_INDEX_CORRUPTED),
			errmsg("simhash_mih index \"%s\" is corrupted: block %u: %s",
				   RelationGetRelationName(index), blkno, what));
	pg_unreachable();
}

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
			if (PageIsNew(page) || mih_head_of(page)->kind == MIH_PAGE_DELETED)
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
 * Locks a pinned buffer in `mode` and checks that it holds a page of this
 * kind whose count fits it (a run page's other fields: mih_run_view).
 */
void
mih_lock_page(Relation index, Buffer buffer, MihPageKind kind, int mode)
{
	LockBuffer(buffer, mode);
	mih_check_locked_page(index, buffer, kind);
}

/* mih_lock_page's checks, of a page the caller has locked (released on an ERROR). */
void
mih_check_locked_page(Relation index, Buffer buffer, MihPageKind kind)
{
	Page		page = BufferGetPage(buffer);
	const char *problem = NULL;
	uint16		found;

	found = PageIsNew(page) ? 0 : mih_head_of(page)->kind;
	if (found != kind)
		problem = psprintf("expected a page of kind 0x%04x, found 0x%04x", kind, found);
	else if (kind == MIH_PAGE_DIRECTORY && mih_head_of(page)->n > MIH_DIR_CAP)
		problem = psprintf("directory page holds %u pages, more than the %zu it has room for",
						   mih_head_of(page)->n, (size_t) MIH_DIR_CAP);
	else if (kind == MIH_PAGE_PENDING && mih_head_of(page)->n > MIH_PENDING_CAP)
		problem = psprintf("pending page holds %u entries, more than the %zu it has room for",
						   mih_head_of(page)->n, (size_t) MIH_PENDING_CAP);
	if (problem)
	{
		BlockNumber blkno = BufferGetBlockNumber(buffer);

		UnlockReleaseBuffer(buffer);
		mih_corrupt(index, blkno, "%s", problem);
	}
}

/* Block blkno, locked in `mode`, checked (mih_lock_page). */
Buffer
mih_read_page(Relation index, BlockNumber blkno, MihPageKind kind, int mode)
{
	Buffer		buffer = ReadBuffer(index, blkno);

	mih_lock_page(index, buffer, kind, mode);
	return buffer;
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
 * Page number `pages` (from 0) of the pending list, at blkno, share-locked.
 * A chain longer than the rows it received (each page was added for a row)
 * has a cycle.
 */
Buffer
mih_read_pending(Relation index, BlockNumber blkno, int64 pages, int64 rows)
{
	if (pages >= rows)
		mih_corrupt(index, blkno, "the pending list is longer than the metapage's " INT64_FORMAT " rows", rows);
	return mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_SHARE);
}

/*
 * Every page of a pending chain from blkno: up to `last` (a lane's tail:
 * its `next` may name another lane's head, linked by a seal a crash cut
 * short) or the chain's end; at most `rows` pages.
 */
void
mih_visit_chain(Relation index, BlockNumber blkno, BlockNumber last, int64 rows, MihPageVisitor visit, void *arg)
{
	for (int64 pages = 0; blkno != InvalidBlockNumber; pages++)
	{
		Buffer		buffer = mih_read_pending(index, blkno, pages, rows);
		BlockNumber next = mih_pending_of(BufferGetPage(buffer))->next;

		UnlockReleaseBuffer(buffer);
		visit(index, blkno, arg);
		if (blkno == last)
			break;
		blkno = next;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The most pages lane i's chain can have: its rows before the tail (each
 * page but the tail was full when the next was linked), and the tail.
 */
int64
mih_lane_pages_most(const MihMeta *meta, int lane)
{
	return MIH_LANE(meta, lane)->rows + 1;
}

/* Every page of every lane of the metapage `meta`; `rows` > 0: at most that many pages a lane. */
void
mih_visit_lanes(Relation index, const MihMeta *meta, int64 rows, MihPageVisitor visit, void *arg)
{
	for (int i = 0; i < mih_nlanes(meta); i++)
		mih_visit_chain(index, MIH_LANE(meta, i)->head, MIH_LANE(meta, i)->tail,
						rows > 0 ? rows : mih_lane_pages_most(meta, i), visit, arg);
}

/*
 * The pending list's rows: each lane's count and its tail's rows (locked
 * shared).  The caller pins the metapage `meta` was read from and locks no
 * pending page; read with the metapage share-locked, exact (only a seal,
 * under its exclusive lock, changes the lanes; VACUUM only takes rows out).
 */
int64
mih_pending_rows(Relation index, const MihMeta *meta)
{
	int64		rows = 0;

	for (int i = 0; i < mih_nlanes(meta); i++)
	{
		const MihLane *lane = MIH_LANE(meta, i);

		rows += lane->rows;
		if (!mih_tail_counted(meta) && lane->tail != InvalidBlockNumber)
		{
			Buffer		buffer = mih_read_page(index, lane->tail, MIH_PAGE_PENDING, BUFFER_LOCK_SHARE);

			rows += mih_pending_of(BufferGetPage(buffer))->n;
			UnlockReleaseBuffer(buffer);
		}
	}
	return rows;
}

/* Adds the rows of a pending page to c->sorter. */
void
mih_collect_pending(Relation index, BlockNumber blkno, void *arg)
{
	MihCollect *c = (MihCollect *) arg;
	Buffer		buffer = mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_SHARE);
	MihPendingPage *page = mih_pending_of(BufferGetPage(buffer));

	for (uint32 j = 0; j < page->n; j++)
		mih_sorter_add(c->sorter, page->fps[j], &page->tids[j]);
	UnlockReleaseBuffer(buffer);
}

/* Adds the rows of a first-run page to c->sorter (keys unrotated with c->mask). */
void
mih_collect_run(Relation index, BlockNumber blkno, void *arg)
{
	MihCollect *c = (MihCollect *) arg;
	Buffer		buffer = mih_read_page(index, blkno, MIH_PAGE_RUN, BUFFER_LOCK_SHARE);
	MihRunView	view;
	uint64		keys[MIH_RUN_MAX_ENTRIES];
	ItemPointerData tids[MIH_RUN_MAX_ENTRIES];
	int			n;

	mih_run_view(&view, index, blkno, BufferGetPage(buffer), true);
	n = mih_run_decode(&view, keys, tids);
	UnlockReleaseBuffer(buffer);
	for (int j = 0; j < n; j++)
		mih_sorter_add(c->sorter, unlead(keys[j], c->mask), &tids[j]);
}

/*
 * The metapage of an empty index, in `fork`: the main fork, or an unlogged
 * table's init fork (ambuildempty), which is WAL-logged whatever the
 * table's persistence: crash recovery copies the init fork over the main
 * one, and replaying this record is what puts the page on disk (generic WAL
 * logs nothing for an unlogged relation, leaving a zeroed page there).
 */
void
mih_init_meta(Relation index, ForkNumber fork, int ntables, int nscope)
{
	Buffer		buffer = ReadBufferExtended(index, fork, P_NEW, RBM_NORMAL, NULL);
	Page		page;
	MihMeta    *meta;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	Assert(BufferGetBlockNumber(buffer) == 0);
	page = BufferGetPage(buffer);
	START_CRIT_SECTION();
	PageInit(page, BLCKSZ, 0);
	meta = mih_meta_of(page);
	memset(meta, 0, sizeof(MihMeta));
	meta->magic = MIH_MAGIC;
	meta->version = MIH_VERSION;
	meta->ntables = ntables;
	meta->nscope = nscope;
	meta->sealed_head = InvalidBlockNumber;
	meta->nlanes = MIH_LANES;
	for (int i = 0; i < MIH_LANES; i++)
		MIH_LANE(meta, i)->head = MIH_LANE(meta, i)->tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);
	MarkBufferDirty(buffer);
	if (fork == INIT_FORKNUM || RelationNeedsWAL(index))
		log_newpage_buffer(buffer, true);
	END_CRIT_SECTION();
	UnlockReleaseBuffer(buffer);
}

/*
 * The metapage registered in a generic WAL record, for the caller to change.
 * Its pd_lower is made to cover today's MihMeta: an index built by an older
 * version has a shorter one, and generic WAL zeroes the hole past pd_lower,
 * which would drop every field added since (they read 0 there until then).
 */
MihMeta *
mih_meta_for_update(GenericXLogState *state, Buffer meta_buffer)
{
	Page		page = GenericXLogRegisterBuffer(state, meta_buffer, 0);
	PageHeader	header = (PageHeader) page;
	LocationIndex lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);

	if (header->pd_lower < lower)
		header->pd_lower = lower;
	return mih_meta_of(page);
}

/* Adds a run set to the metapage, which the caller holds exclusively, under a new id. */
void
mih_meta_add_set(MihMeta *meta, const MihRunSet *set)
{
	Assert(meta->nsets < MIH_MAX_SETS);
	meta->set_id[meta->nsets] = ++meta->last_set_id;
	meta->sets[meta->nsets++] = *set;
	meta->generation++;
}

/*
 * Lists what a flush took out of use, with the next transaction id of now:
 * a snapshot that may have read the old layout is older than it.
 */
bool
mih_meta_retire(MihMeta *meta, const MihRetired *what)
{
	if (meta->nretired >= MIH_MAX_RETIRED)
		return false;			/* leaked until the next REINDEX; never unsafe */
	meta->retired_xid[meta->nretired] = U64FromFullTransactionId(ReadNextFullTransactionId());
	meta->retired[meta->nretired++] = *what;
	return true;
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
 * What every reader checks first: a simhash_mih metapage of this page format
 * (another format is an index to REINDEX, not a corrupted one), with every
 * count within the arrays it indexes.
 */
void
mih_check_meta(Relation index, const MihMeta *meta)
{
	if (meta->magic != MIH_MAGIC)
		mih_corrupt(index, 0, "not a simhash_mih metapage");
	if (meta->version != MIH_VERSION)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("index \"%s\" has simhash_mih page format %u, which this version of the simhash extension does not read",
					   RelationGetRelationName(index), meta->version),
				errdetail("This version reads page format %u only.", MIH_VERSION),
				errhint("Rebuild the index: REINDEX INDEX %s;",
						quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
												   RelationGetRelationName(index))));
	if (meta->ntables < 1 || meta->ntables > MIH_MAX_TABLES || meta->nsets < 0 ||
		meta->nsets > MIH_MAX_SETS || meta->nretired < 0 || meta->nretired > MIH_MAX_RETIRED ||
		meta->sealed_count < 0 || meta->nclaimed < 0 || meta->nclaimed > MIH_MAX_SETS ||
		(meta->nlanes != 0 && meta->nlanes != MIH_LANES))
		mih_corrupt(index, 0, "the metapage's counts are out of range (%d runs, %d run sets, %d retired, %d lanes)",
					meta->ntables, meta->nsets, meta->nretired, meta->nlanes);
	/* the metapage as a tail would have an insert wait for its own lock */
	for (int i = 0; i < mih_nlanes(meta); i++)
		if (MIH_LANE(meta, i)->rows < 0 || MIH_LANE(meta, i)->head == 0 || MIH_LANE(meta, i)->tail == 0 ||
			(MIH_LANE(meta, i)->head == InvalidBlockNumber) != (MIH_LANE(meta, i)->tail == InvalidBlockNumber))
			mih_corrupt(index, 0, "pending lane %d names the metapage, a head without a tail, or a negative count", i);
	for (int c = 0; c < meta->nclaimed; c++)
		if (meta->claimed_slot[c] < 0 || meta->claimed_slot[c] >= MIH_MERGE_SLOTS)
			mih_corrupt(index, 0, "claim %d names merge slot %d", c, meta->claimed_slot[c]);
	for (int s = 0; s < meta->nsets; s++)
		if (meta->sets[s].nentries < 0)
			mih_corrupt(index, 0, "run set %d has a negative entry count", s);
	/* The fingerprints are folded with as many scope columns as the index has before its last. */
	if (meta->nscope != IndexRelationGetNumberOfKeyAttributes(index) - 1)
		mih_corrupt(index, 0, "the metapage says %d scope columns, the index has %d",
					meta->nscope, IndexRelationGetNumberOfKeyAttributes(index) - 1);
}

/*
 * The metapage, pinned, and a copy of it, checked: the pages it names stay
 * unrecycled until the caller releases the pin (mih.h).
 */
Buffer
mih_pin_meta(Relation index, MihMeta *meta)
{
	Buffer		buffer = ReadBuffer(index, 0);

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	*meta = *mih_meta_of(BufferGetPage(buffer));
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	mih_check_meta(index, meta);	/* an ERROR's pin goes with the resource owner */
	return buffer;
}

/* A copy of the metapage, checked. */
MihMeta
mih_read_meta(Relation index)
{
	MihMeta		meta;

	ReleaseBuffer(mih_pin_meta(index, &meta));
	return meta;
}
