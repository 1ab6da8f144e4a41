/*
 * mih_am.c — PROTOTYPE index access method `simhash_mih`: multi-index
 * hashing over sorted runs that carry the fingerprint beside the TID, so a
 * candidate is checked inside the index and only true matches reach the heap.
 *
 * Layout (log-structured):
 * - block 0, the metapage: the run sets, the pending list, retired pages;
 * - a run set holds every entry (fingerprint, TID) of some rows m times, one
 *   run per block t: entries sorted by the fingerprint rotated so that block
 *   t leads, packed MIH_PAGE_CAP to a page, and a chain of directory pages
 *   (each run page's first key and block number);
 * - the pending list: new rows, unsorted, in a chain of pages that every
 *   scan reads whole.  When it reaches simhash.mih_pending_limit rows, the
 *   inserting backend sorts it into a new run set; VACUUM merges the run sets
 *   into one.
 * Pages a flush or merge retires are listed in the metapage and recycled by
 * the next VACUUM, after it has waited for every scan holding a pin on the
 * metapage (a scan pins it from reading the layout until it is done).
 *
 * Results are rechecked at the heap, so an entry whose TID VACUUM has not yet
 * removed (a flush may copy it between VACUUM's passes) is harmless.
 */
#include "simhash.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "commands/vacuum.h"
#include "nodes/pathnodes.h"
#include "nodes/tidbitmap.h"
#include "optimizer/optimizer.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"

#include "hamming_ball.h"
#include "permute.h"
#include "probe_plan.h"
#include "radix_sort.h"

#define MIH_MAGIC 0x53484D49
#define MIH_MAX_TABLES 8
#define MIH_MAX_SETS 16
#define MIH_MAX_RETIRED 32
#define MIH_PAGE_DATA (BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define MIH_PAGE_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(ItemPointerData)))
#define MIH_DIR_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(BlockNumber)))
#define MIH_MAX_PROBES 100000
#define MIH_DELETED PG_UINT32_MAX	/* `n` of a recycled page */

/* One run set: for each run, its directory chain and page count. */
typedef struct MihRunSet
{
	int64		nentries;
	BlockNumber dir_head[MIH_MAX_TABLES];
	BlockNumber npages[MIH_MAX_TABLES];
} MihRunSet;

/* What a flush or merge took out of use: a run set, or a pending chain. */
typedef struct MihRetired
{
	bool		is_set;
	MihRunSet	set;
	BlockNumber chain_head;
} MihRetired;

typedef struct MihMeta
{
	uint32		magic;
	int32		ntables;
	uint32		generation;		/* changes whenever the run sets change */
	int32		nsets;
	MihRunSet	sets[MIH_MAX_SETS];
	BlockNumber pending_head;	/* first pending page, or InvalidBlockNumber */
	BlockNumber pending_tail;
	int64		pending_count;
	int32		nretired;
	MihRetired	retired[MIH_MAX_RETIRED];
} MihMeta;

StaticAssertDecl(sizeof(MihMeta) <= MIH_PAGE_DATA, "metapage fits");

/*
 * A run page: n keys, then n TIDs, at fixed offsets.  Pending pages have the
 * same form, with unrotated fingerprints, chained by `next`.
 */
typedef struct MihRunPage
{
	uint32		n;
	BlockNumber next;
	uint64		keys[MIH_PAGE_CAP];
	ItemPointerData tids[MIH_PAGE_CAP];
} MihRunPage;

/* A directory page: the first key and block of n run pages. */
typedef struct MihDirPage
{
	uint32		n;
	BlockNumber next;
	uint64		first_key[MIH_DIR_CAP];
	BlockNumber blkno[MIH_DIR_CAP];
} MihDirPage;

StaticAssertDecl(sizeof(MihRunPage) <= MIH_PAGE_DATA, "run page fits");
StaticAssertDecl(sizeof(MihDirPage) <= MIH_PAGE_DATA, "directory page fits");

static int	mih_tables = 3;
static int	mih_pending_limit = 65536;

void		simhash_mih_define_setting(void);

void
simhash_mih_define_setting(void)
{
	DefineCustomIntVariable("simhash.mih_tables",
							"Runs (blocks) of a simhash_mih index built now (prototype).",
							NULL, &mih_tables, 3, 1, MIH_MAX_TABLES,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("simhash.mih_pending_limit",
							"Pending rows at which an insert sorts them into a run set (prototype).",
							NULL, &mih_pending_limit, 65536, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/* Rotates fp so that the bits of `mask` (contiguous) are the top bits. */
static inline uint64
lead_with(uint64 fp, uint64 mask)
{
	int			s = 63 - pg_leftmost_one_pos64(mask);

	return s == 0 ? fp : (fp << s) | (fp >> (64 - s));
}

/* The inverse of lead_with. */
static inline uint64
unlead(uint64 key, uint64 mask)
{
	int			s = 63 - pg_leftmost_one_pos64(mask);

	return s == 0 ? key : (key >> s) | (key << (64 - s));
}

static MihMeta *
mih_meta_of(Page page)
{
	return (MihMeta *) PageGetContents(page);
}

static MihRunPage *
mih_run_of(Page page)
{
	return (MihRunPage *) PageGetContents(page);
}

static MihDirPage *
mih_dir_of(Page page)
{
	return (MihDirPage *) PageGetContents(page);
}

/* ---- pages ---------------------------------------------------------------- */

/* A page to write, exclusively locked: a recycled one, else a new one. */
static Buffer
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
static BlockNumber
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

/* ---- run sets ------------------------------------------------------------- */

/* Entries of rows being sorted into a run set. */
typedef struct MihEntries
{
	uint64	   *fps;
	ItemPointerData *tids;
	int64		n;
	int64		cap;
} MihEntries;

static void
mih_entries_init(MihEntries *e)
{
	e->cap = 1024;
	e->n = 0;
	e->fps = palloc_extended(e->cap * sizeof(uint64), MCXT_ALLOC_HUGE);
	e->tids = palloc_extended(e->cap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
}

static void
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
static MihRunSet
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

/* Calls visit(blkno) for every run page of run t of a set (then its directory pages if `all`). */
typedef void (*MihPageVisitor) (Relation index, BlockNumber blkno, void *arg);

static void
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
static void
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

/* Collects the entries of a run page (keys unrotated with `mask`, 0 for pending). */
typedef struct MihCollect
{
	MihEntries *entries;
	uint64		mask;
} MihCollect;

static void
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

/* ---- metapage ------------------------------------------------------------- */

static void
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
	meta->ntables = ntables;
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
}

/* Adds a run set to the metapage, which the caller holds exclusively. */
static void
mih_meta_add_set(MihMeta *meta, const MihRunSet *set)
{
	Assert(meta->nsets < MIH_MAX_SETS);
	meta->sets[meta->nsets++] = *set;
	meta->generation++;
}

static bool
mih_meta_retire(MihMeta *meta, const MihRetired *what)
{
	if (meta->nretired >= MIH_MAX_RETIRED)
		return false;			/* leaked until the next REINDEX; never unsafe */
	meta->retired[meta->nretired++] = *what;
	return true;
}

/* ---- build ---------------------------------------------------------------- */

static void
mih_build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				   bool tupleIsAlive, void *state)
{
	if (!isnull[0])
		mih_entries_add((MihEntries *) state, DatumGetSimhash64(values[0]), tid);
}

static IndexBuildResult *
mih_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	MihEntries	e;
	SimhashBlocks blocks;
	MihRunSet	set;
	Buffer		buffer;
	GenericXLogState *state;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	if (indexInfo->ii_NumIndexAttrs != 1)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("a simhash_mih index has exactly one column")));
	mih_init_meta(index, MAIN_FORKNUM, mih_tables);
	mih_entries_init(&e);
	result->heap_tuples = table_index_build_scan(heap, index, indexInfo, true, true,
												 mih_build_callback, &e, NULL);
	if (e.n > PG_UINT32_MAX)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("simhash_mih: more than 2^32 rows")));
	simhash_blocks_init(&blocks, mih_tables);
	set = mih_write_set(index, &blocks, &e);

	buffer = ReadBuffer(index, 0);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	mih_meta_add_set(mih_meta_of(GenericXLogRegisterBuffer(state, buffer, 0)), &set);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
	result->index_tuples = e.n;
	return result;
}

static void
mih_buildempty(Relation index)
{
	mih_init_meta(index, INIT_FORKNUM, mih_tables);
}

/* ---- insert --------------------------------------------------------------- */

/*
 * Sorts the pending list into a new run set.  The caller holds the metapage
 * exclusively, so no insert runs meanwhile; scans go on reading the old
 * pending pages, which are retired, not reused.
 */
static void
mih_flush_pending(Relation index, Buffer meta_buffer)
{
	MihMeta    *meta = mih_meta_of(BufferGetPage(meta_buffer));
	MihEntries	e;
	MihCollect	collect = {&e, 0};
	SimhashBlocks blocks;
	MihRunSet	set;
	MihRetired	chain = {false};
	GenericXLogState *state;

	if (meta->nsets >= MIH_MAX_SETS || meta->nretired >= MIH_MAX_RETIRED)
		return;					/* VACUUM merges and recycles first */
	mih_entries_init(&e);
	mih_visit_chain(index, meta->pending_head, mih_collect_page, &collect);
	simhash_blocks_init(&blocks, meta->ntables);
	set = mih_write_set(index, &blocks, &e);
	chain.chain_head = meta->pending_head;

	state = GenericXLogStart(index);
	meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	mih_meta_add_set(meta, &set);
	mih_meta_retire(meta, &chain);
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	meta->pending_count = 0;
	GenericXLogFinish(state);
	pfree(e.fps);
	pfree(e.tids);
}

/*
 * Appends (fp, tid) to the pending list.  The metapage's exclusive lock
 * orders inserts; the pages are WAL-logged together.
 */
static bool
mih_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	Buffer		meta_buffer;
	Buffer		tail_buffer = InvalidBuffer;
	Buffer		new_buffer = InvalidBuffer;
	GenericXLogState *state;
	MihMeta    *meta;
	MihRunPage *tail = NULL;

	if (isnull[0])
		return false;
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_EXCLUSIVE);
	meta = mih_meta_of(BufferGetPage(meta_buffer));
	if (meta->pending_tail != InvalidBlockNumber)
	{
		tail_buffer = ReadBuffer(index, meta->pending_tail);
		LockBuffer(tail_buffer, BUFFER_LOCK_EXCLUSIVE);
		if (mih_run_of(BufferGetPage(tail_buffer))->n >= MIH_PAGE_CAP)
			new_buffer = mih_new_buffer(index);
	}
	else
		new_buffer = mih_new_buffer(index);

	state = GenericXLogStart(index);
	meta = mih_meta_of(GenericXLogRegisterBuffer(state, meta_buffer, 0));
	if (BufferIsValid(tail_buffer))
		tail = mih_run_of(GenericXLogRegisterBuffer(state, tail_buffer, 0));
	if (BufferIsValid(new_buffer))
	{
		Page		page = GenericXLogRegisterBuffer(state, new_buffer, GENERIC_XLOG_FULL_IMAGE);
		BlockNumber blkno = BufferGetBlockNumber(new_buffer);

		PageInit(page, BLCKSZ, 0);
		((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihRunPage);
		if (tail)
			tail->next = blkno;
		else
			meta->pending_head = blkno;
		meta->pending_tail = blkno;
		tail = mih_run_of(page);
		tail->n = 0;
		tail->next = InvalidBlockNumber;
	}
	tail->keys[tail->n] = DatumGetSimhash64(values[0]);
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

/* ---- VACUUM --------------------------------------------------------------- */

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
	vacuum_delay_point(false);
}

/* A copy of the metapage. */
static MihMeta
mih_read_meta(Relation index)
{
	Buffer		buffer = ReadBuffer(index, 0);
	MihMeta		meta;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	meta = *mih_meta_of(BufferGetPage(buffer));
	UnlockReleaseBuffer(buffer);
	if (meta.magic != MIH_MAGIC)
		elog(ERROR, "index \"%s\" is not a simhash_mih index", RelationGetRelationName(index));
	return meta;
}

static IndexBulkDeleteResult *
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

static IndexBulkDeleteResult *
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

/* ---- scan ----------------------------------------------------------------- */

/* A run's directory in backend memory. */
typedef struct MihRunDir
{
	BlockNumber npages;
	uint64	   *first_key;
	BlockNumber *blkno;
} MihRunDir;

/* The directories of every run set, for one generation (rd_amcache). */
typedef struct MihCache
{
	MemoryContext context;
	uint32		generation;
	int			nsets;
	SimhashBlocks blocks;
	MihRunDir	runs[MIH_MAX_SETS][MIH_MAX_TABLES];
} MihCache;

static void
mih_load_run(Relation index, const MihRunSet *set, int t, MihRunDir *run, MemoryContext context)
{
	BlockNumber dir_blkno = set->dir_head[t];
	BlockNumber at = 0;

	run->npages = set->npages[t];
	run->first_key = MemoryContextAllocHuge(context, Max(run->npages, 1) * sizeof(uint64));
	run->blkno = MemoryContextAllocHuge(context, Max(run->npages, 1) * sizeof(BlockNumber));
	while (dir_blkno != InvalidBlockNumber && at < run->npages)
	{
		Buffer		buffer = ReadBuffer(index, dir_blkno);
		MihDirPage *dir;
		uint32		n;

		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		dir = mih_dir_of(BufferGetPage(buffer));
		n = Min(dir->n, run->npages - at);
		memcpy(run->first_key + at, dir->first_key, n * sizeof(uint64));
		memcpy(run->blkno + at, dir->blkno, n * sizeof(BlockNumber));
		at += n;
		dir_blkno = dir->next;
		UnlockReleaseBuffer(buffer);
	}
	run->npages = at;
}

/* The directories for the layout `meta` describes (the caller pins the metapage). */
static MihCache *
mih_cache(Relation index, const MihMeta *meta)
{
	MihCache   *cache = (MihCache *) index->rd_amcache;

	if (cache && cache->generation == meta->generation)
		return cache;
	if (cache)
	{
		MemoryContextDelete(cache->context);
		index->rd_amcache = NULL;
	}
	{
		MemoryContext context = AllocSetContextCreate(index->rd_indexcxt, "simhash_mih directories",
													  ALLOCSET_DEFAULT_SIZES);

		cache = MemoryContextAllocZero(context, sizeof(MihCache));
		cache->context = context;
	}
	cache->generation = meta->generation;
	cache->nsets = meta->nsets;
	simhash_blocks_init(&cache->blocks, meta->ntables);
	for (int s = 0; s < meta->nsets; s++)
		for (int t = 0; t < meta->ntables; t++)
			mih_load_run(index, &meta->sets[s], t, &cache->runs[s][t], cache->context);
	index->rd_amcache = cache;
	return cache;
}

/* The fewest probes with sum over probed runs of (r_t + 1) > k. */
static bool
mih_plan(const SimhashBlocks *blocks, int k, SimhashProbePlan *plan)
{
	int			m = blocks->nblocks;
	int			need = k + 1;
	int64		best[MIH_MAX_TABLES + 1][SIMHASH64_BITS + 2];
	int8		choice[MIH_MAX_TABLES + 1][SIMHASH64_BITS + 2];

	for (int u = 0; u <= need; u++)
		best[0][u] = u == 0 ? 0 : PG_INT64_MAX;
	for (int t = 1; t <= m; t++)
	{
		int			width = pg_popcount64(blocks->mask[t - 1]);

		for (int u = 0; u <= need; u++)
		{
			int64		ball = 0;

			best[t][u] = best[t - 1][u];
			choice[t][u] = -1;
			for (int r = 0; r <= SIMHASH_PROBE_MAX_RADIUS + 3 && r < width; r++)
			{
				int			rest = Max(0, u - (r + 1));

				ball += simhash_binomial(width, r);
				if (best[t - 1][rest] != PG_INT64_MAX && best[t - 1][rest] + ball < best[t][u])
				{
					best[t][u] = best[t - 1][rest] + ball;
					choice[t][u] = r;
				}
			}
		}
	}
	if (best[m][need] > MIH_MAX_PROBES)
		return false;
	plan->nkeys = (int) best[m][need];
	for (int t = m, u = need; t >= 1; t--)
	{
		plan->radius[t - 1] = choice[t][u];
		if (choice[t][u] >= 0)
			u = Max(0, u - (choice[t][u] + 1));
	}
	return true;
}

typedef struct MihProbe
{
	Relation	index;
	MihCache   *cache;
	int			set;
	TIDBitmap  *tbm;
	uint64		center;
	int			k;
	int64		found;
} MihProbe;

/* The entries of one run page within k bits of query (rotated as the page). */
static void
mih_scan_page(MihProbe *s, BlockNumber blkno, uint64 query, uint64 lo, uint64 hi, bool *past)
{
	Buffer		buffer = ReadBuffer(s->index, blkno);
	MihRunPage *run;
	uint32		low = 0,
				high;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	run = mih_run_of(BufferGetPage(buffer));
	high = run->n;
	while (low < high)
	{
		uint32		mid = (low + high) / 2;

		if (run->keys[mid] < lo)
			low = mid + 1;
		else
			high = mid;
	}
	for (uint32 j = low; j < run->n; j++)
	{
		if (run->keys[j] > hi)
		{
			*past = true;
			break;
		}
		if (pg_popcount64(run->keys[j] ^ query) <= s->k)
		{
			tbm_add_tuples(s->tbm, &run->tids[j], 1, true);
			s->found++;
		}
	}
	UnlockReleaseBuffer(buffer);
}

/* Last page whose first key is below lo (or the first page). */
static BlockNumber
mih_first_page(const MihRunDir *run, uint64 lo)
{
	BlockNumber low = 0,
				high = run->npages;

	while (high - low > 1)
	{
		BlockNumber mid = low + (high - low) / 2;

		if (run->first_key[mid] < lo)
			low = mid;
		else
			high = mid;
	}
	return low;
}

static void
mih_visit(int t, int distance, uint64 flip, void *arg)
{
	MihProbe   *s = (MihProbe *) arg;
	const MihRunDir *run = &s->cache->runs[s->set][t];
	uint64		mask = s->cache->blocks.mask[t];
	int			width = pg_popcount64(mask);
	uint64		query = lead_with(s->center, mask);
	uint64		lo = lead_with((s->center ^ flip) & mask, mask);
	uint64		hi = lo | (width == 64 ? ~UINT64CONST(0) : (~UINT64CONST(0) >> width));
	bool		past = false;

	for (BlockNumber p = run->npages ? mih_first_page(run, lo) : 0; p < run->npages && !past; p++)
		mih_scan_page(s, run->blkno[p], query, lo, hi, &past);
}

/* No plan: every entry of run 0, compared. */
static void
mih_scan_whole(MihProbe *s)
{
	const MihRunDir *run = &s->cache->runs[s->set][0];
	uint64		query = lead_with(s->center, s->cache->blocks.mask[0]);
	bool		past = false;

	for (BlockNumber p = 0; p < run->npages; p++)
	{
		mih_scan_page(s, run->blkno[p], query, 0, ~UINT64CONST(0), &past);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Every pending entry, compared. */
static void
mih_scan_pending(MihProbe *s, BlockNumber blkno)
{
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buffer = ReadBuffer(s->index, blkno);
		MihRunPage *run;

		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		run = mih_run_of(BufferGetPage(buffer));
		for (uint32 j = 0; j < run->n; j++)
			if (pg_popcount64(run->keys[j] ^ s->center) <= s->k)
			{
				tbm_add_tuples(s->tbm, &run->tids[j], 1, true);
				s->found++;
			}
		blkno = run->next;
		UnlockReleaseBuffer(buffer);
		CHECK_FOR_INTERRUPTS();
	}
}

static int64
mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	Relation	index = scan->indexRelation;
	MihProbe	s;
	SimhashBall ball;
	SimhashProbePlan plan;
	Buffer		meta_buffer;
	MihMeta		meta;
	bool		planned;

	if (scan->numberOfKeys != 1 || (scan->keyData[0].sk_flags & SK_ISNULL))
		return 0;
	if (!simhash_ball_read(scan->keyData[0].sk_argument, &ball))
		return 0;
	/* The pin stays until the scan is done: VACUUM waits for it to recycle. */
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_SHARE);
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
	if (meta.magic != MIH_MAGIC)
		elog(ERROR, "index \"%s\" is not a simhash_mih index", RelationGetRelationName(index));

	s.index = index;
	s.cache = mih_cache(index, &meta);
	s.tbm = tbm;
	s.center = ball.center;
	s.k = ball.radius;
	s.found = 0;
	planned = mih_plan(&s.cache->blocks, ball.radius, &plan);
	for (s.set = 0; s.set < s.cache->nsets; s.set++)
	{
		if (planned)
			simhash_probe_plan_visit(&s.cache->blocks, &plan, mih_visit, &s);
		else
			mih_scan_whole(&s);
	}
	mih_scan_pending(&s, meta.pending_head);
	ReleaseBuffer(meta_buffer);
	return s.found;
}

static IndexScanDesc
mih_beginscan(Relation index, int nkeys, int norderbys)
{
	return RelationGetIndexScan(index, nkeys, norderbys);
}

static void
mih_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys, ScanKey orderbys, int norderbys)
{
	if (scankey && scan->numberOfKeys > 0)
		memcpy(scan->keyData, scankey, scan->numberOfKeys * sizeof(ScanKeyData));
}

static void
mih_endscan(IndexScanDesc scan)
{
}

static void
mih_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	GenericCosts costs = {0};

	genericcostestimate(root, path, loop_count, &costs);
	*indexStartupCost = 0;
	*indexTotalCost = 10 * cpu_operator_cost;	/* prototype: always cheap */
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = 1;
}

static bytea *
mih_options(Datum reloptions, bool validate)
{
	return NULL;
}

static bool
mih_validate(Oid opclassoid)
{
	return true;
}

PG_FUNCTION_INFO_V1(simhash_mih_handler);

Datum
simhash_mih_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amstrategies = 1;
	am->amsupport = 0;
	am->amoptsprocnum = 0;
	am->amoptionalkey = false;
	am->amkeytype = InvalidOid;
	am->ambuild = mih_build;
	am->ambuildempty = mih_buildempty;
	am->aminsert = mih_insert;
	am->ambulkdelete = mih_bulkdelete;
	am->amvacuumcleanup = mih_vacuumcleanup;
	am->amcostestimate = mih_costestimate;
	am->amoptions = mih_options;
	am->amvalidate = mih_validate;
	am->ambeginscan = mih_beginscan;
	am->amrescan = mih_rescan;
	am->amgetbitmap = mih_getbitmap;
	am->amendscan = mih_endscan;
	PG_RETURN_POINTER(am);
}
