/*
 * mih_am.c — PROTOTYPE index access method `simhash_mih`: multi-index
 * hashing over sorted runs that carry the fingerprint beside the TID, so a
 * candidate is checked inside the index and only true matches reach the heap.
 *
 * Inserts go to an append-only pending list (pages chained from the
 * metapage) that every scan reads whole; REINDEX sorts them into the runs.
 * VACUUM compacts dead TIDs out of every page, keeping the runs sorted.
 *
 * Layout: block 0 is the metapage; then, table by table, the run pages
 * (entries sorted by the fingerprint rotated so the table's block leads:
 * MIH_PAGE_CAP keys, then as many TIDs) and the directory pages (the first
 * key of every run page).
 */
#include "simhash.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "commands/vacuum.h"
#include "nodes/pathnodes.h"
#include "nodes/tidbitmap.h"
#include "optimizer/optimizer.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/index_selfuncs.h"
#include "utils/selfuncs.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "hamming_ball.h"
#include "permute.h"
#include "probe_plan.h"
#include "radix_sort.h"

#define MIH_MAGIC 0x53484D49
#define MIH_MAX_TABLES 8
#define MIH_PAGE_DATA (BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define MIH_PAGE_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(ItemPointerData)))
#define MIH_DIR_CAP (MIH_PAGE_DATA / sizeof(uint64))
#define MIH_MAX_PROBES 100000

typedef struct MihMeta
{
	uint32		magic;
	int32		ntables;
	int64		nentries;
	BlockNumber run_start[MIH_MAX_TABLES];
	BlockNumber run_pages[MIH_MAX_TABLES];
	BlockNumber dir_start[MIH_MAX_TABLES];
	BlockNumber pending_head;	/* first pending page, or InvalidBlockNumber */
	BlockNumber pending_tail;
	int64		pending_count;
} MihMeta;

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

StaticAssertDecl(sizeof(MihRunPage) <= MIH_PAGE_DATA, "run page fits");

/* Backend-local copy of the metapage and the directories (rd_amcache). */
typedef struct MihCache
{
	MihMeta		meta;
	SimhashBlocks blocks;
	uint64	   *first_key[MIH_MAX_TABLES];
} MihCache;

static int	mih_tables = 3;

void		simhash_mih_define_setting(void);

void
simhash_mih_define_setting(void)
{
	DefineCustomIntVariable("simhash.mih_tables",
							"Tables (blocks) of a simhash_mih index built now (prototype).",
							NULL, &mih_tables, 3, 1, MIH_MAX_TABLES,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/* Rotates fp so that the bits of `mask` (contiguous) are the top bits. */
static inline uint64
lead_with(uint64 fp, uint64 mask)
{
	int			top = pg_leftmost_one_pos64(mask);
	int			s = 63 - top;

	return s == 0 ? fp : (fp << s) | (fp >> (64 - s));
}

/* ---- build ---------------------------------------------------------------- */

typedef struct MihBuild
{
	uint64	   *fps;
	ItemPointerData *tids;
	int64		n;
	int64		cap;
} MihBuild;

static void
mih_build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				   bool tupleIsAlive, void *state)
{
	MihBuild   *b = (MihBuild *) state;

	if (isnull[0])
		return;
	if (b->n == b->cap)
	{
		b->cap *= 2;
		b->fps = repalloc_huge(b->fps, b->cap * sizeof(uint64));
		b->tids = repalloc_huge(b->tids, b->cap * sizeof(ItemPointerData));
	}
	b->fps[b->n] = DatumGetSimhash64(values[0]);
	b->tids[b->n] = *tid;
	b->n++;
}

static Buffer
mih_new_buffer(Relation index)
{
	Buffer		buffer = ReadBuffer(index, P_NEW);

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	return buffer;
}

/* Writes `contents` (MIH_PAGE_DATA bytes at most) as a new page, WAL-logged. */
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

static void
mih_write_table(Relation index, MihMeta *meta, int t, const SimhashBlocks *blocks, MihBuild *b)
{
	uint64	   *keys = palloc_extended(Max(b->n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	uint64	   *rows = palloc_extended(Max(b->n, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	MihRunPage *run = palloc0(sizeof(MihRunPage));
	int64		npages = (b->n + MIH_PAGE_CAP - 1) / MIH_PAGE_CAP;
	uint64	   *dir = palloc_extended(Max(npages, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);

	for (int64 i = 0; i < b->n; i++)
	{
		keys[i] = lead_with(b->fps[i], blocks->mask[t]);
		rows[i] = i;
	}
	simhash_radix_sort(keys, rows, (uint32) b->n);
	meta->run_start[t] = InvalidBlockNumber;
	for (int64 p = 0; p < npages; p++)
	{
		int64		first = p * MIH_PAGE_CAP;
		BlockNumber blkno;

		run->n = Min(MIH_PAGE_CAP, b->n - first);
		for (uint32 j = 0; j < run->n; j++)
		{
			run->keys[j] = keys[first + j];
			run->tids[j] = b->tids[rows[first + j]];
		}
		dir[p] = run->keys[0];
		blkno = mih_write_page(index, run, sizeof(MihRunPage));
		if (p == 0)
			meta->run_start[t] = blkno;
		CHECK_FOR_INTERRUPTS();
	}
	meta->run_pages[t] = npages;
	meta->dir_start[t] = InvalidBlockNumber;
	for (int64 p = 0; p < npages; p += MIH_DIR_CAP)
	{
		BlockNumber blkno = mih_write_page(index, dir + p,
										   Min(MIH_DIR_CAP, npages - p) * sizeof(uint64));

		if (p == 0)
			meta->dir_start[t] = blkno;
	}
	pfree(keys);
	pfree(rows);
	pfree(dir);
	pfree(run);
}

static void
mih_write_meta(Relation index, const MihMeta *meta, bool new_page)
{
	Buffer		buffer = new_page ? mih_new_buffer(index) : ReadBuffer(index, 0);
	GenericXLogState *state;
	Page		page;

	if (!new_page)
		LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buffer, GENERIC_XLOG_FULL_IMAGE);
	PageInit(page, BLCKSZ, 0);
	memcpy(PageGetContents(page), meta, sizeof(MihMeta));
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
}

static IndexBuildResult *
mih_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	MihBuild	b;
	MihMeta		meta;
	SimhashBlocks blocks;
	double		reltuples;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	memset(&meta, 0, sizeof(meta));
	meta.magic = MIH_MAGIC;
	meta.pending_head = meta.pending_tail = InvalidBlockNumber;
	meta.ntables = mih_tables;
	mih_write_meta(index, &meta, true);

	b.cap = 1024;
	b.n = 0;
	b.fps = palloc_extended(b.cap * sizeof(uint64), MCXT_ALLOC_HUGE);
	b.tids = palloc_extended(b.cap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   mih_build_callback, &b, NULL);
	if (b.n > PG_UINT32_MAX)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("simhash_mih prototype: too many rows")));
	simhash_blocks_init(&blocks, meta.ntables);
	for (int t = 0; t < meta.ntables; t++)
		mih_write_table(index, &meta, t, &blocks, &b);
	meta.nentries = b.n;
	mih_write_meta(index, &meta, false);

	result->heap_tuples = reltuples;
	result->index_tuples = b.n;
	return result;
}

static void
mih_buildempty(Relation index)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("simhash_mih prototype: unlogged indexes are not supported")));
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

/* A new, exclusively locked page at the end of the index. */
static Buffer
mih_extend(Relation index)
{
	bool		need_lock = !RELATION_IS_LOCAL(index);
	Buffer		buffer;

	if (need_lock)
		LockRelationForExtension(index, ExclusiveLock);
	buffer = mih_new_buffer(index);
	if (need_lock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buffer;
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
			new_buffer = mih_extend(index);
	}
	else
		new_buffer = mih_extend(index);

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
	UnlockReleaseBuffer(meta_buffer);
	return false;
}

/* Compacts the entries whose TID VACUUM removes out of one page. */
static void
mih_vacuum_page(Relation index, BlockNumber blkno, IndexBulkDeleteCallback callback,
				void *callback_state, IndexBulkDeleteResult *stats, BlockNumber *next)
{
	Buffer		buffer = ReadBuffer(index, blkno);
	GenericXLogState *state;
	MihRunPage *run;
	uint32		kept = 0;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	run = mih_run_of(GenericXLogRegisterBuffer(state, buffer, 0));
	for (uint32 j = 0; j < run->n; j++)
	{
		if (callback(&run->tids[j], callback_state))
		{
			stats->tuples_removed++;
			continue;
		}
		run->keys[kept] = run->keys[j];
		run->tids[kept] = run->tids[j];
		kept++;
	}
	stats->num_index_tuples += kept;
	if (kept == run->n)
		GenericXLogAbort(state);
	else
	{
		run->n = kept;
		GenericXLogFinish(state);
	}
	if (next)
		*next = run->next;
	UnlockReleaseBuffer(buffer);
}

static IndexBulkDeleteResult *
mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	Buffer		meta_buffer = ReadBuffer(index, 0);
	MihMeta		meta;
	BlockNumber blkno;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	LockBuffer(meta_buffer, BUFFER_LOCK_SHARE);
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	UnlockReleaseBuffer(meta_buffer);
	stats->num_index_tuples = 0;
	for (int t = 0; t < meta.ntables; t++)
		for (BlockNumber p = 0; p < meta.run_pages[t]; p++)
		{
			mih_vacuum_page(index, meta.run_start[t] + p, callback, callback_state, stats, NULL);
			vacuum_delay_point(false);
		}
	for (blkno = meta.pending_head; blkno != InvalidBlockNumber;)
	{
		mih_vacuum_page(index, blkno, callback, callback_state, stats, &blkno);
		vacuum_delay_point(false);
	}
	/* Each row is in every run once, and in the pending list at most once. */
	stats->num_index_tuples /= Max(meta.ntables, 1);
	stats->num_pages = RelationGetNumberOfBlocks(index);
	return stats;
}

static IndexBulkDeleteResult *
mih_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	return stats ? stats : palloc0(sizeof(IndexBulkDeleteResult));
}

/* ---- scan ----------------------------------------------------------------- */

static MihCache *
mih_cache(Relation index)
{
	MihCache   *cache = (MihCache *) index->rd_amcache;
	Buffer		buffer;

	if (cache)
		return cache;
	cache = MemoryContextAllocZero(index->rd_indexcxt, sizeof(MihCache));
	buffer = ReadBuffer(index, 0);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	memcpy(&cache->meta, PageGetContents(BufferGetPage(buffer)), sizeof(MihMeta));
	UnlockReleaseBuffer(buffer);
	if (cache->meta.magic != MIH_MAGIC)
		elog(ERROR, "index \"%s\" is not a simhash_mih index", RelationGetRelationName(index));
	simhash_blocks_init(&cache->blocks, cache->meta.ntables);
	for (int t = 0; t < cache->meta.ntables; t++)
	{
		BlockNumber npages = cache->meta.run_pages[t];

		cache->first_key[t] = MemoryContextAllocHuge(index->rd_indexcxt, Max(npages, 1) * sizeof(uint64));
		for (BlockNumber p = 0; p < npages; p += MIH_DIR_CAP)
		{
			buffer = ReadBuffer(index, cache->meta.dir_start[t] + p / MIH_DIR_CAP);
			LockBuffer(buffer, BUFFER_LOCK_SHARE);
			memcpy(cache->first_key[t] + p, PageGetContents(BufferGetPage(buffer)),
				   Min(MIH_DIR_CAP, npages - p) * sizeof(uint64));
			UnlockReleaseBuffer(buffer);
		}
	}
	index->rd_amcache = cache;
	return cache;
}

/* The fewest probes with sum over probed tables of (r_t + 1) > k. */
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
			best[t][u] = best[t - 1][u];
			choice[t][u] = -1;
			for (int r = 0; r <= SIMHASH_PROBE_MAX_RADIUS + 3 && r < width; r++)
			{
				int			rest = Max(0, u - (r + 1));
				int64		ball = 0;

				for (int d = 0; d <= r; d++)
					ball += simhash_binomial(width, d);
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
	TIDBitmap  *tbm;
	uint64		center;
	int			k;
	int64		found;
} MihProbe;

/* First run page that can hold a key >= lo. */
static BlockNumber
mih_first_page(const uint64 *first_key, BlockNumber npages, uint64 lo)
{
	BlockNumber low = 0,
				high = npages;

	while (high - low > 1)
	{
		BlockNumber mid = low + (high - low) / 2;

		if (first_key[mid] < lo)
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
	MihCache   *cache = s->cache;
	uint64		mask = cache->blocks.mask[t];
	int			width = pg_popcount64(mask);
	uint64		query = lead_with(s->center, mask);
	uint64		lo = lead_with((s->center ^ flip) & mask, mask);
	uint64		hi = lo | (width == 64 ? ~UINT64CONST(0) : (~UINT64CONST(0) >> width));
	BlockNumber npages = cache->meta.run_pages[t];

	if (npages == 0)
		return;
	for (BlockNumber p = mih_first_page(cache->first_key[t], npages, lo); p < npages; p++)
	{
		Buffer		buffer = ReadBuffer(s->index, cache->meta.run_start[t] + p);
		MihRunPage *run;
		uint32		j,
					low = 0,
					high;
		bool		past = false;

		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		run = (MihRunPage *) PageGetContents(BufferGetPage(buffer));
		high = run->n;
		while (low < high)
		{
			uint32		mid = (low + high) / 2;

			if (run->keys[mid] < lo)
				low = mid + 1;
			else
				high = mid;
		}
		for (j = low; j < run->n; j++)
		{
			if (run->keys[j] > hi)
			{
				past = true;
				break;
			}
			if (pg_popcount64(run->keys[j] ^ query) <= s->k)
			{
				tbm_add_tuples(s->tbm, &run->tids[j], 1, false);
				s->found++;
			}
		}
		UnlockReleaseBuffer(buffer);
		if (past)
			break;
	}
}

/* No plan: every entry of table 0, compared. */
static void
mih_scan_whole(MihProbe *s)
{
	MihCache   *cache = s->cache;
	uint64		query = lead_with(s->center, cache->blocks.mask[0]);

	for (BlockNumber p = 0; p < cache->meta.run_pages[0]; p++)
	{
		Buffer		buffer = ReadBuffer(s->index, cache->meta.run_start[0] + p);
		MihRunPage *run;

		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		run = (MihRunPage *) PageGetContents(BufferGetPage(buffer));
		for (uint32 j = 0; j < run->n; j++)
			if (pg_popcount64(run->keys[j] ^ query) <= s->k)
			{
				tbm_add_tuples(s->tbm, &run->tids[j], 1, false);
				s->found++;
			}
		UnlockReleaseBuffer(buffer);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Every pending entry, compared. */
static void
mih_scan_pending(MihProbe *s)
{
	Buffer		buffer = ReadBuffer(s->index, 0);
	BlockNumber blkno;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	blkno = mih_meta_of(BufferGetPage(buffer))->pending_head;
	UnlockReleaseBuffer(buffer);
	while (blkno != InvalidBlockNumber)
	{
		MihRunPage *run;

		buffer = ReadBuffer(s->index, blkno);
		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		run = mih_run_of(BufferGetPage(buffer));
		for (uint32 j = 0; j < run->n; j++)
			if (pg_popcount64(run->keys[j] ^ s->center) <= s->k)
			{
				tbm_add_tuples(s->tbm, &run->tids[j], 1, false);
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
	MihProbe	s;
	SimhashBall ball;
	SimhashProbePlan plan;

	if (scan->numberOfKeys != 1 || (scan->keyData[0].sk_flags & SK_ISNULL))
		return 0;
	if (!simhash_ball_read(scan->keyData[0].sk_argument, &ball))
		return 0;
	s.index = scan->indexRelation;
	s.cache = mih_cache(scan->indexRelation);
	s.tbm = tbm;
	s.center = ball.center;
	s.k = ball.radius;
	s.found = 0;
	if (mih_plan(&s.cache->blocks, ball.radius, &plan))
		simhash_probe_plan_visit(&s.cache->blocks, &plan, mih_visit, &s);
	else
		mih_scan_whole(&s);
	mih_scan_pending(&s);
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
