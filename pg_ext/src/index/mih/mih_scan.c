/*
 * mih_scan.c — a radius query on simhash_mih: its keys (the scope folded
 * into the centre), the probe plan, the probes into every run of every run
 * set, the first run's TIDs of the matches found in later runs, the pending
 * list, all into the bitmap.
 */
#include "index/mih/mih_page.h"

#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "utils/memutils.h"

#include "index/hamming_ball.h"
#include "index/probe_plan.h"

/*
 * A run's directory as probes read it: a binary search over the first keys
 * of 77,000 pages (a run at 100M rows) is 17 dependent cache misses a probe,
 * so a radix table over the keys' top bits narrows it to the one or two
 * pages sharing them first.
 */
typedef struct MihScanRun
{
	MihRunDir	dir;
	int			radix_bits;		/* R: 2^R >= the page count */
	uint32	   *radix;			/* 2^R + 1: the first page whose first key's top R bits are b or more */
	Buffer	   *recent;			/* each page's buffer when last read: pinned without a lookup */
} MihScanRun;

/* The directories of every run set, for one generation (rd_amcache). */
typedef struct MihCache
{
	MemoryContext context;
	uint32		generation;
	int			nsets;
	SimhashBlocks blocks;
	MihScanRun	runs[MIH_MAX_SETS][MIH_MAX_TABLES];
} MihCache;

static inline uint32
radix_of(const MihScanRun *run, uint64 key)
{
	return run->radix_bits == 0 ? 0 : (uint32) (key >> (64 - run->radix_bits));
}

static void
mih_load_run(Relation index, const MihRunSet *set, int t, MemoryContext context, MihScanRun *run)
{
	BlockNumber p = 0;

	mih_read_directory(index, set, t, context, &run->dir);
	run->radix_bits = run->dir.npages <= 1 ? 0 : pg_leftmost_one_pos32(run->dir.npages - 1) + 1;
	run->radix = MemoryContextAllocHuge(context, (((Size) 1 << run->radix_bits) + 1) * sizeof(uint32));
	run->recent = MemoryContextAllocHuge(context, Max(run->dir.npages, 1) * sizeof(Buffer));
	memset(run->recent, 0, Max(run->dir.npages, 1) * sizeof(Buffer));	/* InvalidBuffer */
	for (uint64 b = 0; b <= ((uint64) 1 << run->radix_bits); b++)
	{
		while (p < run->dir.npages && radix_of(run, run->dir.first_key[p]) < b)
			p++;
		run->radix[b] = p;
	}
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
		/* Under the query's context until complete: a corrupted directory frees it. */
		MemoryContext context = AllocSetContextCreate(CurrentMemoryContext, "simhash_mih directories",
													  ALLOCSET_DEFAULT_SIZES);

		cache = MemoryContextAllocZero(context, sizeof(MihCache));
		cache->context = context;
	}
	cache->generation = meta->generation;
	cache->nsets = meta->nsets;
	simhash_blocks_init(&cache->blocks, meta->ntables);
	for (int s = 0; s < meta->nsets; s++)
		for (int t = 0; t < meta->ntables; t++)
			mih_load_run(index, &meta->sets[s], t, cache->context, &cache->runs[s][t]);
	MemoryContextSetParent(cache->context, index->rd_indexcxt);
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

/*
 * What a scan's keys ask, the scope folded in (mih_scope.c): the ball the
 * probes search, and any further balls every match must also lie in.
 */
typedef struct MihQuery
{
	bool		folded;			/* every scope column given: centres folded */
	SimhashBall probe;
	int			nothers;
	SimhashBall *others;
} MihQuery;

typedef struct MihProbe
{
	Relation	index;
	MihCache   *cache;
	const SimhashProbePlan *plan;	/* NULL when reading the first run whole */
	int			set;
	TIDBitmap  *tbm;
	uint64		center;
	int			k;
	const MihQuery *query;
	int64		found;
	/* Fingerprints matched in later runs, whose TIDs the first run holds. */
	uint64	   *lookups;
	int			nlookups;
	int			maxlookups;
} MihProbe;

/*
 * True when an earlier run's probes also reach fp: that run reported it, so
 * each match is added to the bitmap (and counted) once.
 */
static inline bool
found_in_earlier_run(const MihProbe *s, int run, uint64 fp)
{
	if (s->plan == NULL)
		return false;
	for (int t = 0; t < run; t++)
		if (s->plan->radius[t] >= 0 &&
			pg_popcount64((fp ^ s->center) & s->cache->blocks.mask[t]) <= s->plan->radius[t])
			return true;
	return false;
}

/* Whether fp lies in every other ball of the query (several radius conditions on one column). */
static inline bool
in_other_balls(const MihProbe *s, uint64 fp)
{
	for (int i = 0; i < s->query->nothers; i++)
		if (pg_popcount64(fp ^ s->query->others[i].center) > s->query->others[i].radius)
			return false;
	return true;
}

static void
add_lookup(MihProbe *s, uint64 fp)
{
	if (s->nlookups == s->maxlookups)
	{
		s->maxlookups = Max(64, s->maxlookups * 2);
		s->lookups = s->lookups ? repalloc_huge(s->lookups, s->maxlookups * sizeof(uint64)) :
			palloc(s->maxlookups * sizeof(uint64));
	}
	s->lookups[s->nlookups++] = fp;
}

/*
 * Last page whose first key is below lo (or the first page): the pages before
 * radix[b] have smaller top bits than lo, those from radix[b + 1] on larger.
 */
static BlockNumber
mih_first_page(const MihScanRun *run, uint64 lo)
{
	uint32		b = radix_of(run, lo);
	BlockNumber low = run->radix[b],
				high = run->radix[b + 1];

	while (low < high)
	{
		BlockNumber mid = low + (high - low) / 2;

		if (run->dir.first_key[mid] < lo)
			low = mid + 1;
		else
			high = mid;
	}
	return low == 0 ? 0 : low - 1;
}

/*
 * The entries of run t with keys in [lo, hi] (rotated as the run) within k
 * bits of query, from directory page `first` on (the last one whose first
 * key is below lo): the first run's go to the bitmap, a later run's to the
 * lookups.
 */
static void
mih_probe_run(MihProbe *s, int t, BlockNumber first, uint64 lo, uint64 hi, uint64 query, int k)
{
	MihScanRun *run = &s->cache->runs[s->set][t];
	uint64		mask = s->cache->blocks.mask[t];
	bool		past = false;

	for (BlockNumber p = first; p < run->dir.npages && !past; p++)
	{
		BlockNumber blkno = run->dir.blkno[p];
		Buffer		buffer = run->recent[p];
		MihRunView	v;
		MihRunCursor c;
		uint64		key;

		if (buffer == InvalidBuffer || !simhash_read_recent_buffer(s->index, blkno, buffer))
			run->recent[p] = buffer = ReadBuffer(s->index, blkno);
		mih_lock_page(s->index, buffer, MIH_PAGE_RUN, BUFFER_LOCK_SHARE);
		mih_run_view(&v, s->index, blkno, BufferGetPage(buffer), t == 0);
		for (mih_run_seek(&v, lo, &c); mih_run_key(&v, &c, &key); c.j++)
		{
			if (key > hi)
			{
				past = true;
				break;
			}
			if (pg_popcount64(key ^ query) > k || found_in_earlier_run(s, t, unlead(key, mask)) ||
				!in_other_balls(s, unlead(key, mask)))
				continue;
			if (t == 0)
			{
				ItemPointerData tid = mih_run_tid(&v, c.j);

				tbm_add_tuples(s->tbm, &tid, 1, true);
				s->found++;
			}
			else
				add_lookup(s, unlead(key, mask));
		}
		UnlockReleaseBuffer(buffer);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
mih_visit(int t, int distance, uint64 flip, void *arg)
{
	MihProbe   *s = (MihProbe *) arg;
	MihScanRun *run = &s->cache->runs[s->set][t];
	uint64		mask = s->cache->blocks.mask[t];
	int			width = pg_popcount64(mask);
	uint64		lo = lead_with((s->center ^ flip) & mask, mask);
	uint64		hi = width == 64 ? lo : lo | (~UINT64CONST(0) >> width);

	mih_probe_run(s, t, mih_first_page(run, lo), lo, hi, lead_with(s->center, mask), s->k);
}

static int
compare_uint64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

/*
 * The TIDs of the fingerprints later runs matched, from the first run: each
 * fingerprint once (a later run holds one entry per row, so equal
 * fingerprints of several rows were matched once each), every row of it.
 */
static void
mih_take_lookups(MihProbe *s)
{
	uint64		mask = s->cache->blocks.mask[0];

	for (int i = 0; i < s->nlookups; i++)
		s->lookups[i] = lead_with(s->lookups[i], mask);
	qsort(s->lookups, s->nlookups, sizeof(uint64), compare_uint64);
	for (int i = 0; i < s->nlookups; i++)
		if (i == 0 || s->lookups[i] != s->lookups[i - 1])
			mih_probe_run(s, 0, mih_first_page(&s->cache->runs[s->set][0], s->lookups[i]),
						  s->lookups[i], s->lookups[i], s->lookups[i], 0);
	s->nlookups = 0;
}

/* Every pending entry, compared. */
static void
mih_scan_pending(MihProbe *s, BlockNumber blkno, int64 rows)
{
	for (int64 pages = 0; blkno != InvalidBlockNumber; pages++)
	{
		Buffer		buffer = mih_read_pending(s->index, blkno, pages, rows);
		MihPendingPage *page = mih_pending_of(BufferGetPage(buffer));

		for (uint32 j = 0; j < page->n; j++)
			if (pg_popcount64(page->fps[j] ^ s->center) <= s->k && in_other_balls(s, page->fps[j]))
			{
				if (!mih_tid_valid(&page->tids[j]))
				{
					UnlockReleaseBuffer(buffer);
					mih_corrupt(s->index, blkno, "entry %u has an invalid heap TID", j);
				}
				tbm_add_tuples(s->tbm, &page->tids[j], 1, true);
				s->found++;
			}
		blkno = page->next;
		UnlockReleaseBuffer(buffer);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The scan's keys, folded: false when no row can match (a NULL key, a ball
 * of NULLs, two different values for one scope column).  Without every
 * scope column given (a query on some of them, or the scope alone), the
 * centre cannot be folded: q->folded is false and the scan returns every
 * row, for the heap to recheck.  With several balls, the probes search the
 * smallest; the others filter.
 */
static bool
mih_read_keys(IndexScanDesc scan, MihQuery *q)
{
	Relation	index = scan->indexRelation;
	MihScope	scope;
	uint64		hashes[INDEX_MAX_KEYS];
	bool		given[INDEX_MAX_KEYS] = {false};
	SimhashBall *balls = palloc(Max(scan->numberOfKeys, 1) * sizeof(SimhashBall));
	int			nballs = 0;
	uint64		folding;

	mih_scope_init(&scope, index);
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		int			column = key->sk_attno - 1;

		if (key->sk_flags & SK_ISNULL)
			return false;
		if (column == scope.ncolumns)
		{
			if (!simhash_ball_read(key->sk_argument, &balls[nballs]))
				return false;
			nballs++;
		}
		else
		{
			uint64		hash = mih_scope_hash_key(&scope, index, key);

			/* Equal values hash alike: two hashes, two values, no row has both. */
			if (given[column] && hashes[column] != hash)
				return false;
			given[column] = true;
			hashes[column] = hash;
		}
	}
	memset(q, 0, sizeof(*q));
	q->folded = nballs > 0;
	for (int i = 0; i < scope.ncolumns; i++)
		q->folded &= given[i];
	if (!q->folded)
	{
		q->probe.radius = SIMHASH64_BITS;
		return true;
	}
	folding = mih_scope_combine(&scope, hashes);
	for (int i = 1; i < nballs; i++)
		if (balls[i].radius < balls[0].radius)
		{
			SimhashBall smallest = balls[i];

			balls[i] = balls[0];
			balls[0] = smallest;
		}
	for (int i = 0; i < nballs; i++)
		balls[i].center ^= folding;
	q->probe = balls[0];
	q->nothers = nballs - 1;
	q->others = balls + 1;
	return true;
}

int64
mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	Relation	index = scan->indexRelation;
	MihProbe	s;
	MihQuery	query;
	SimhashProbePlan plan;
	Buffer		meta_buffer;
	MihMeta		meta;
	bool		planned;

	if (!mih_read_keys(scan, &query))
		return 0;
	/* The pin stays until the scan is done: VACUUM waits for it to recycle. */
	meta_buffer = ReadBuffer(index, 0);
	LockBuffer(meta_buffer, BUFFER_LOCK_SHARE);
	meta = *mih_meta_of(BufferGetPage(meta_buffer));
	LockBuffer(meta_buffer, BUFFER_LOCK_UNLOCK);
	mih_check_meta(index, &meta);

	memset(&s, 0, sizeof(s));
	s.index = index;
	s.cache = mih_cache(index, &meta);
	s.tbm = tbm;
	s.query = &query;
	s.center = query.probe.center;
	s.k = query.probe.radius;
	planned = mih_plan(&s.cache->blocks, s.k, &plan);
	s.plan = planned ? &plan : NULL;
	for (s.set = 0; s.set < s.cache->nsets; s.set++)
	{
		if (planned)
		{
			simhash_probe_plan_visit(&s.cache->blocks, &plan, mih_visit, &s);
			mih_take_lookups(&s);
		}
		else					/* no plan: every entry of the first run, compared */
			mih_probe_run(&s, 0, 0, 0, ~UINT64CONST(0), lead_with(s.center, s.cache->blocks.mask[0]), s.k);
	}
	mih_scan_pending(&s, meta.pending_head, meta.pending_count);
	ReleaseBuffer(meta_buffer);
	return s.found;
}
