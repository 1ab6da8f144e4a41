/*
 * mih_scan.c — a radius query on simhash_mih: the probe plan, the probes into
 * every run of every run set, the pending list, all into the bitmap.
 */
#include "index/mih/mih.h"

#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "utils/memutils.h"

#include "index/hamming_ball.h"
#include "index/probe_plan.h"

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
	const SimhashProbePlan *plan;	/* NULL when reading run 0 whole */
	int			run;			/* the run being probed */
	int			set;
	TIDBitmap  *tbm;
	uint64		center;
	int			k;
	int64		found;
} MihProbe;

/*
 * True when an earlier run's probes also reach fp: that run reported it, so
 * each match is added to the bitmap (and counted) once.
 */
static inline bool
found_in_earlier_run(const MihProbe *s, uint64 fp)
{
	if (s->plan == NULL)
		return false;
	for (int t = 0; t < s->run; t++)
		if (s->plan->radius[t] >= 0 &&
			pg_popcount64((fp ^ s->center) & s->cache->blocks.mask[t]) <= s->plan->radius[t])
			return true;
	return false;
}

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
		if (pg_popcount64(run->keys[j] ^ query) <= s->k &&
			!found_in_earlier_run(s, unlead(run->keys[j], s->cache->blocks.mask[s->run])))
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
	uint64		hi = width == 64 ? lo : lo | (~UINT64CONST(0) >> width);
	bool		past = false;

	s->run = t;
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

	s->run = 0;
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

int64
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
	mih_check_meta(index, &meta);

	s.index = index;
	s.cache = mih_cache(index, &meta);
	s.tbm = tbm;
	s.center = ball.center;
	s.k = ball.radius;
	s.found = 0;
	planned = mih_plan(&s.cache->blocks, ball.radius, &plan);
	s.plan = planned ? &plan : NULL;
	s.run = 0;
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
