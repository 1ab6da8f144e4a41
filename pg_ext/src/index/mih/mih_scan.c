/*
 * mih_scan.c — a radius query on simhash_mih: its keys (the scope folded
 * into the centre), the probe plan, the probes into every run of every run
 * set, the first run's TIDs of the matches found in later runs, the pending
 * list, all into the bitmap; or only counted, for the planner
 * (mih_count_within).
 *
 * Layer (mih.h): above mih_utils.c, mih_scope.c, mih_page.c, mih_runs.c and
 * mih_scan_pending.c.
 */
#include "index/mih/mih_scan.h"

#include "access/relscan.h"
#include "storage/buf_internals.h"
#include "utils/memutils.h"

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
	int			filter_bits;	/* F: 0, or the run's keys' top F bits are marked in filter */
	uint64	   *filter;			/* 2^F bits (a small set's run: mih_load_filter) */
} MihScanRun;

/* One run set's directories, in a context of its own, kept while the set lives. */
typedef struct MihCachedSet
{
	uint64		id;				/* the metapage's set_id (0: unknown, never reused) */
	MemoryContext context;
	MihScanRun	runs[MIH_MAX_TABLES];
} MihCachedSet;

/*
 * The directories of every run set, for one generation (rd_amcache): a
 * flush or merge changes the generation, and the next scan loads the new
 * set's directories only, keeping the others' (by set id).  The pending
 * pages' copies (mih_scan_pending.c) hang here too, kept across
 * generations.
 */
typedef struct MihCache
{
	MemoryContext context;
	uint32		generation;
	int			nsets;
	SimhashBlocks blocks;
	MihCachedSet *sets[MIH_MAX_SETS];
	struct MihPendingCopies *copies;
} MihCache;

static inline uint32
radix_of(const MihScanRun *run, uint64 key)
{
	return run->radix_bits == 0 ? 0 : (uint32) (key >> (64 - run->radix_bits));
}

/*
 * Filters of small run sets (the rule in mih.h; without them, sets of 2.1M
 * and 262,144 rows beside a base of 10M cost a query at k = 8 about as much
 * as the base itself): whether the run may have a key in [lo, hi]; a range
 * over more than two marks (a walk of every entry) is not looked up.
 */
static inline bool
mih_filter_may_have(const MihScanRun *run, uint64 lo, uint64 hi)
{
	uint64		first = lo >> (64 - run->filter_bits),
				last = hi >> (64 - run->filter_bits);

	if (last - first > 1)
		return true;
	for (uint64 bit = first; bit <= last; bit++)
		if ((run->filter[bit / 64] >> (bit % 64)) & 1)
			return true;
	return false;
}

/*
 * Marks every key of run t in its filter, reading each page once.  A page
 * VACUUM rewrites meanwhile only loses entries, so a filter may mark a key
 * that is gone, never miss one that is there.
 */
static void
mih_load_filter(Relation index, int t, MemoryContext context, MihScanRun *run)
{
	uint64		keys[MIH_RUN_MAX_ENTRIES];

	run->filter = MemoryContextAllocZero(context, Max(((Size) 1 << run->filter_bits) / 8, sizeof(uint64)));
	for (BlockNumber p = 0; p < run->dir.npages; p++)
	{
		Buffer		buffer = mih_read_page(index, run->dir.blkno[p], MIH_PAGE_RUN, BUFFER_LOCK_SHARE);
		MihRunView	v;
		int			n;

		mih_run_view(&v, index, run->dir.blkno[p], BufferGetPage(buffer), t == 0);
		n = mih_run_decode(&v, keys, NULL);
		for (int j = 0; j < n; j++)
		{
			uint64		bit = keys[j] >> (64 - run->filter_bits);

			run->filter[bit / 64] |= UINT64CONST(1) << (bit % 64);
		}
		run->recent[p] = buffer;
		UnlockReleaseBuffer(buffer);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
mih_load_run(Relation index, const MihRunSet *set, int t, int width, MemoryContext context, MihScanRun *run)
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
	run->filter_bits = mih_filter_bits(set->nentries, width);
	if (run->filter_bits > 0)
		mih_load_filter(index, t, context, run);
}

/*
 * The directories for the layout `meta` describes (the caller pins the
 * metapage): the cached ones of the sets it still lists, loaded for the new
 * ones.  Until complete, the old cache and the new one hang under the
 * query's context, so a corrupted directory frees them both.
 */
static MihCache *
mih_cache(Relation index, const MihMeta *meta)
{
	MihCache   *old = (MihCache *) index->rd_amcache;
	MihCache   *cache;
	MemoryContext context;

	if (old && old->generation == meta->generation)
		return old;
	index->rd_amcache = NULL;
	if (old)
		MemoryContextSetParent(old->context, CurrentMemoryContext);
	context = AllocSetContextCreate(CurrentMemoryContext, "simhash_mih directories", ALLOCSET_SMALL_SIZES);
	cache = MemoryContextAllocZero(context, sizeof(MihCache));
	cache->context = context;
	cache->generation = meta->generation;
	cache->nsets = meta->nsets;
	simhash_blocks_init(&cache->blocks, meta->ntables);
	for (int s = 0; s < meta->nsets; s++)
	{
		MihCachedSet *set = NULL;

		for (int o = 0; old && meta->set_id[s] != 0 && o < old->nsets && set == NULL; o++)
			if (old->sets[o] && old->sets[o]->id == meta->set_id[s])
			{
				set = old->sets[o];
				old->sets[o] = NULL;
				MemoryContextSetParent(set->context, context);
			}
		if (set == NULL)
		{
			MemoryContext set_context = AllocSetContextCreate(context, "simhash_mih run set directories",
															  ALLOCSET_DEFAULT_SIZES);

			set = MemoryContextAllocZero(set_context, sizeof(MihCachedSet));
			set->id = meta->set_id[s];
			set->context = set_context;
			for (int t = 0; t < meta->ntables; t++)
				mih_load_run(index, &meta->sets[s], t, simhash_popcount64(cache->blocks.mask[t]),
							 set_context, &set->runs[t]);
		}
		cache->sets[s] = set;
	}
	if (old)
	{
		cache->copies = old->copies;
		mih_pending_copies_adopt(cache->copies, context);
		MemoryContextDelete(old->context);
	}
	else
		cache->copies = mih_pending_copies_create(context);
	MemoryContextSetParent(context, index->rd_indexcxt);
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
		int			width = simhash_popcount64(blocks->mask[t - 1]);

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
			simhash_popcount64((fp ^ s->center) & s->cache->blocks.mask[t]) <= s->plan->radius[t])
			return true;
	return false;
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

/* Lets go of the page the walk holds, if any. */
static void
mih_release_held(MihProbe *s)
{
	if (s->held.run < 0)
		return;
	UnlockReleaseBuffer(s->held.buffer);
	s->held.run = -1;
	CHECK_FOR_INTERRUPTS();
}

/* Page p of run t, share-locked and checked: the one held already, or read now. */
static const MihRunView *
mih_hold_page(MihProbe *s, int t, BlockNumber p)
{
	MihScanRun *run = &s->cache->sets[s->set]->runs[t];
	BlockNumber blkno = run->dir.blkno[p];
	Buffer		buffer = run->recent[p];

	if (s->held.run == t && s->held.p == p)
		return &s->held.view;
	mih_release_held(s);
	if (buffer == InvalidBuffer || !simhash_read_recent_buffer(s->index, blkno, buffer))
		run->recent[p] = buffer = ReadBuffer(s->index, blkno);
	mih_lock_page(s->index, buffer, MIH_PAGE_RUN, BUFFER_LOCK_SHARE);
	mih_run_view(&s->held.view, s->index, blkno, BufferGetPage(buffer), t == 0);
	s->held.run = t;
	s->held.p = p;
	s->held.buffer = buffer;
	return &s->held.view;
}

/*
 * Asks for page p of a run a few probes ahead of reading it: its buffer
 * (found in the buffer table if this backend never read it, which a
 * prefetch also does) and the CPU cache lines a probe reads first, the
 * buffer header (pinned first) and the page's header and bucket table.  A
 * probe is a chain of cache misses into a 2 GB index at 100M rows;
 * overlapping them with the probes before is what it gains.  Only a hint:
 * the buffer may hold another page by then, which the pin checks.
 */
static void
mih_prefetch_page(Relation index, MihScanRun *run, BlockNumber p)
{
	Buffer		buffer;

	if (p >= run->dir.npages)	/* an empty run: nothing to read */
		return;
	buffer = run->recent[p];
	if (buffer == InvalidBuffer)
		run->recent[p] = buffer = PrefetchBuffer(index, MAIN_FORKNUM, run->dir.blkno[p]).recent_buffer;
	if (buffer <= 0)			/* not in shared buffers, or a temporary index's local buffer */
		return;
	simhash_prefetch(GetBufferDescriptor(buffer - 1));
	simhash_prefetch(BufferGetPage(buffer));
	simhash_prefetch((const char *) BufferGetPage(buffer) + PG_CACHE_LINE_SIZE);
}

/*
 * The entries of run t with keys in [lo, hi] (rotated as the run) within k
 * bits of query, from directory page `first` on (the last one whose first
 * key is below lo): the first run's go to the bitmap, a later run's to the
 * lookups.  The last page read stays held for the next probe.
 */
static void
mih_probe_range(MihProbe *s, int t, BlockNumber first, uint64 lo, uint64 hi, uint64 query, int k)
{
	MihScanRun *run = &s->cache->sets[s->set]->runs[t];
	uint64		mask = s->cache->blocks.mask[t];

	for (BlockNumber p = first; p < run->dir.npages; p++)
	{
		const MihRunView *v = mih_hold_page(s, t, p);
		MihRunCursor c;
		uint64		key;

		for (mih_run_seek(v, lo, &c); mih_run_key(v, &c, &key); c.j++)
		{
			if (key > hi || mih_count_full(s))
				return;
			if (simhash_popcount64(key ^ query) > k || found_in_earlier_run(s, t, unlead(key, mask)) ||
				!mih_in_other_balls(s, unlead(key, mask)))
				continue;
			if (t == 0)
			{
				ItemPointerData tid = mih_run_tid(v, c.j);

				mih_found(s, &tid, unlead(key, mask));
			}
			else if (s->tbm == NULL && s->hits == NULL)
				s->found++;		/* counted: a later run holds an entry a row */
			else
				add_lookup(s, unlead(key, mask));
		}
	}
}

/*
 * Where the probe of lo reads page p of a run first: its bucket's entry in
 * the bucket table or, with that entry known (`entry`), its first
 * remainder; NULL if the page does not say.  The page is peeked at without
 * a pin or lock: any value may be stale or another page's, so every one is
 * bounded to keep the address inside the buffer, and the address is only
 * prefetched.
 */
static const char *
mih_peek(const MihScanRun *run, BlockNumber p, uint64 lo, bool entry)
{
	Buffer		buffer = p < run->dir.npages ? run->recent[p] : InvalidBuffer;
	const char *page;
	const MihRunPage *head;
	int			key_bits,
				bucket_bits,
				rem_bits,
				bucket;
	uint64		d;
	Size		at;

	if (buffer <= 0)
		return NULL;
	page = BufferGetPage(buffer);
	head = (const MihRunPage *) PageGetContents((Page) page);
	key_bits = head->key_bits;
	bucket_bits = head->bucket_bits;
	d = lo - head->base;
	if (lo < head->base || key_bits > 64 || bucket_bits > Min(key_bits, MIH_RUN_MAX_BUCKET_BITS) ||
		(key_bits < 64 && (d >> key_bits) != 0))
		return NULL;
	rem_bits = key_bits - bucket_bits;
	bucket = bucket_bits == 0 ? 0 : (int) (d >> rem_bits);
	if (!entry)
		return (const char *) &head->bucket_start[bucket];
	at = ((const char *) &head->bucket_start[1 << bucket_bits] - page) +
		((Size) Min(head->bucket_start[bucket], MIH_RUN_MAX_ENTRIES) * rem_bits) / 8;
	return at < BLCKSZ - 3 * PG_CACHE_LINE_SIZE ? page + at : NULL;
}

/*
 * How far ahead (in probes) a walk asks for what a probe reads, in three
 * steps, each needing what the one before brought: the page (its buffer and
 * header), the bucket table's entry, the first entries.
 */
#define MIH_PREFETCH_PAGE 6
#define MIH_PREFETCH_BUCKET 4
#define MIH_PREFETCH_ENTRIES 2

/* The steps of the prefetch for probe i of a walk (mih_walk_run). */
static void
mih_prefetch_probes(Relation index, MihScanRun *run, const BlockNumber *first, const uint64 *los,
					int n, int i)
{
	const char *at;

	if (i + MIH_PREFETCH_PAGE < n)
		mih_prefetch_page(index, run, first[i + MIH_PREFETCH_PAGE]);
	if (i + MIH_PREFETCH_BUCKET < n &&
		(at = mih_peek(run, first[i + MIH_PREFETCH_BUCKET], los[i + MIH_PREFETCH_BUCKET], false)) != NULL)
		simhash_prefetch(at);
	if (i + MIH_PREFETCH_ENTRIES < n &&
		(at = mih_peek(run, first[i + MIH_PREFETCH_ENTRIES], los[i + MIH_PREFETCH_ENTRIES], true)) != NULL)
	{
		/* About 48 entries of 40 bits at 100M rows and k = 8: four lines. */
		for (int line = 0; line < 3; line++)
			simhash_prefetch(at + line * PG_CACHE_LINE_SIZE);
	}
}

/*
 * The probes `los` of run t (ranges [lo, lo + span], sorted and distinct),
 * in key order: pages are visited front to back, each once, and located
 * (the directory, in memory) before any is read, so that what the probes
 * read can be prefetched.  exact: each probe is a fingerprint looked up
 * (k = 0), else every entry within k bits of query.
 */
static void
mih_walk_run(MihProbe *s, int t, const uint64 *los, int n, uint64 span, bool exact,
			 uint64 query, int k)
{
	MihScanRun *run = &s->cache->sets[s->set]->runs[t];
	BlockNumber *first = palloc(sizeof(BlockNumber) * Max(n, 1));
	uint64	   *kept = NULL;

	if (run->filter_bits > 0)	/* only the probes whose prefix the run has */
	{
		int			m = 0;

		kept = palloc(sizeof(uint64) * Max(n, 1));
		for (int i = 0; i < n; i++)
			if (mih_filter_may_have(run, los[i], los[i] + span))
				kept[m++] = los[i];
		los = kept;
		n = m;
	}
	for (int i = 0; i < n; i++)
		first[i] = mih_first_page(run, los[i]);
	for (int i = 0; i < MIH_PREFETCH_PAGE && i < n; i++)
		mih_prefetch_page(s->index, run, first[i]);
	for (int i = 0; i < n && !mih_count_full(s); i++)
	{
		mih_prefetch_probes(s->index, run, first, los, n, i);
		mih_probe_range(s, t, first[i], los[i], los[i] + span, exact ? los[i] : query, exact ? 0 : k);
	}
	mih_release_held(s);
	pfree(first);
	if (kept)
		pfree(kept);
}

/* Collects a probe of the plan: the first key of its range, with its run's probes. */
static void
mih_visit(int t, int distance, uint64 flip, void *arg)
{
	MihProbe   *s = (MihProbe *) arg;
	uint64		mask = s->cache->blocks.mask[t];

	s->probes[t][s->nprobes[t]++] = lead_with((s->center ^ flip) & mask, mask);
}

/*
 * sort_keys(keys, n): PostgreSQL's quicksort with the comparison inline.
 * Through qsort's call a pair, sorting the probes was a fifth of a query's
 * time at k = 8 (profiled, 10M rows, 4 run sets, each set sorting its own).
 */
#define ST_SORT sort_keys
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) (*(a) < *(b) ? -1 : *(a) > *(b))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Sorts keys and drops repeats; returns how many are left. */
static int
sort_distinct(uint64 *keys, int n)
{
	int			kept = 0;

	sort_keys(keys, n);
	for (int i = 0; i < n; i++)
		if (kept == 0 || keys[i] != keys[kept - 1])
			keys[kept++] = keys[i];
	return kept;
}

/*
 * The probes of the plan, each run's in key order without repeats: the same
 * for every run set (they share the layout) and every pass of the scan, so
 * made once.
 */
static void
mih_make_probes(MihProbe *s)
{
	const SimhashBlocks *blocks = &s->cache->blocks;

	for (int t = 0; t < blocks->nblocks; t++)
		s->nprobes[t] = 0;
	simhash_probe_plan_visit(blocks, s->plan, mih_visit, s);
	for (int t = 0; t < blocks->nblocks; t++)
		s->nprobes[t] = sort_distinct(s->probes[t], s->nprobes[t]);
}

/*
 * Every probe of the plan in one run set: each run's probes in key order
 * (mih_walk_run), then the first run's TIDs of the fingerprints later runs
 * matched: each fingerprint once (a later run holds one entry per row, so
 * equal fingerprints of several rows were matched once each), every row of
 * it.
 */
static void
mih_probe_set(MihProbe *s)
{
	const SimhashBlocks *blocks = &s->cache->blocks;

	for (int t = 0; t < blocks->nblocks; t++)
	{
		int			width = simhash_popcount64(blocks->mask[t]);

		if (s->nprobes[t] == 0)
			continue;
		mih_walk_run(s, t, s->probes[t], s->nprobes[t], width == 64 ? 0 : ~UINT64CONST(0) >> width,
					 false, lead_with(s->center, blocks->mask[t]), s->k);
	}
	for (int i = 0; i < s->nlookups; i++)
		s->lookups[i] = lead_with(s->lookups[i], blocks->mask[0]);
	s->nlookups = sort_distinct(s->lookups, s->nlookups);
	mih_walk_run(s, 0, s->lookups, s->nlookups, 0, true, 0, 0);
	s->nlookups = 0;
}

/*
 * The scan's keys, folded: false when no row can match (a NULL key, a ball
 * of NULLs, two different values for one scope column).  Without every
 * scope column given (a query on some of them, or the scope alone), the
 * centre cannot be folded: q->folded is false and the scan returns every
 * row, for the heap to recheck.  With several balls, the probes search the
 * smallest; the others filter.
 */
bool
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
	q->scoped = true;
	for (int i = 0; i < scope.ncolumns; i++)
		q->scoped &= given[i];
	q->folded = q->scoped && nballs > 0;
	if (q->scoped)
		q->folding = mih_scope_combine(&scope, hashes);
	if (!q->folded)
	{
		q->probe.radius = SIMHASH64_BITS;
		return true;
	}
	folding = q->folding;
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

/*
 * Keeps an ordering scan's hits within their limit (mih_found): lowers
 * `high` to the farthest distance whose matches, with the nearer ones, fill
 * at most half the limit, and drops the matches beyond it.  Where the
 * nearest distance alone has more, all of them stay and the limit doubles:
 * the band cannot be narrower than one distance.
 */
void
mih_hits_shrink(MihHits *hits)
{
	int64		count[SIMHASH64_BITS + 1] = {0};
	int64		kept = 0;
	int64		n = 0;
	int			high = hits->low;

	for (int64 i = 0; i < hits->n; i++)
		count[hits->distances[i]]++;
	for (int d = hits->low + 1; d <= hits->high; d++)
	{
		if (kept + count[d] > hits->limit / 2)
			break;
		kept += count[d];
		high = d;
	}
	if (high == hits->low)
	{
		while (high < hits->high && count[high + 1] == 0)
			high++;
		high = Min(high + 1, hits->high);
		hits->limit *= 2;
	}
	for (int64 i = 0; i < hits->n; i++)
		if (hits->distances[i] <= high)
		{
			hits->tids[n] = hits->tids[i];
			hits->distances[n++] = hits->distances[i];
		}
	hits->n = n;
	hits->high = high;
}

/* Passes of a scan whose pages were recycled under it before it gives up (a hot standby's). */
#define MIH_SCAN_PASSES 3

/*
 * One pass over the layout `meta` names: every run set probed, the sealed
 * chain and the pending lanes compared (mih_scan_pending.c).
 */
static void
mih_scan_layout(MihProbe *s, const MihMeta *meta)
{
	for (s->set = 0; s->set < s->cache->nsets && !mih_count_full(s); s->set++)
	{
		if (s->plan)
			mih_probe_set(s);
		else					/* no plan: every entry of the first run, compared */
		{
			uint64		everything = 0;

			mih_walk_run(s, 0, &everything, 1, ~UINT64CONST(0), false,
						 lead_with(s->center, s->cache->blocks.mask[0]), s->k);
		}
	}
	if (!mih_count_full(s))
		mih_scan_pending_list(s, meta);
}

/*
 * A radius query over the whole index: s->center, s->k and s->query's other
 * balls, into s's bitmap or hits.  Every run set is probed with the plan
 * for k, or, where there is none (or, with entries_per_probe, where the plan
 * has more probes than the index's rows over it: reading them costs more
 * than reading every entry), the first run of each set is read whole, each
 * entry compared within whole_k bits (s->k is set to it).  Returns whether
 * it probed.
 *
 * The pin on the metapage stays until the pass is done, and the query's
 * snapshot holds recycling back (mih.h); where neither protects the pass (a
 * hot standby), a change of the recycling count means a page it read may
 * have been reused: it scans again (the bitmap keeps what it found, a
 * superset rechecked at the heap; the hits start over).
 */
bool
mih_scan_radius(MihProbe *s, double entries_per_probe, int whole_k)
{
	Relation	index = s->index;
	SimhashProbePlan plan;
	Buffer		meta_buffer;
	MihMeta		meta;
	bool		planned = false;

	s->held.run = -1;
	for (int pass = 1;; pass++)
	{
		meta_buffer = mih_pin_meta(index, &meta);
		mih_scan_guard(index, meta.nrecycles);
		s->cache = mih_cache(index, &meta);
		s->copies = s->cache->copies;
		if (pass == 1)
		{
			planned = mih_plan(&s->cache->blocks, s->k, &plan);
			if (planned && entries_per_probe > 0)
			{
				double		rows = meta.sealed_count;

				for (int i = 0; i < meta.nsets; i++)
					rows += meta.sets[i].nentries;
				for (int i = 0; i < mih_nlanes(&meta); i++)
					rows += MIH_LANE(&meta, i)->rows;
				planned = plan.nkeys * entries_per_probe <= rows;
			}
			s->plan = planned ? &plan : NULL;
			if (planned)
			{
				for (int t = 0; t < s->cache->blocks.nblocks; t++)
					s->probes[t] = palloc(sizeof(uint64) * Max(plan.nkeys, 1));
				mih_make_probes(s);
			}
			else
				s->k = whole_k;
		}
		s->found = 0;
		if (s->hits)
			s->hits->n = 0;
		mih_scan_layout(s, &meta);
		mih_scan_guard(NULL, 0);
		ReleaseBuffer(meta_buffer);
		if (mih_counts_now(index).nrecycles == meta.nrecycles)
			break;
		mih_pending_copies_forget(s->copies);	/* a page copied may have been reused under the pass */
		if (pass == MIH_SCAN_PASSES)
			ereport(ERROR,
					errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					errmsg("could not finish a scan of simhash_mih index \"%s\": its pages were recycled %d times meanwhile",
						   RelationGetRelationName(index), pass),
					errhint("Retry the query.  On a hot standby, recycling follows the primary's flushes."));
	}
	for (int t = 0; planned && t < s->cache->blocks.nblocks; t++)
		pfree(s->probes[t]);
	s->plan = NULL;
	return planned;
}

/*
 * The rows within k bits of center, counted up to `limit` (reaching it, the
 * walks stop), for the planner's estimate of a radius query whose centre it
 * knows (planner_support.c): one pass of the radius query, matches counted,
 * not kept (an entry of a later run is a row: no lookups in the first).
 * -1 where it is not answered: no plan for k within max_probes, or the
 * index's pages were recycled during the pass (a hot standby's).  An index
 * without scope columns: the centre is not folded.
 */
int64
mih_count_within(Relation index, uint64 center, int k, int64 limit, int max_probes)
{
	MihProbe	s;
	MihQuery	query;
	SimhashProbePlan plan;
	Buffer		meta_buffer;
	MihMeta		meta;
	int64		count = -1;

	if (k < 0 || k > SIMHASH64_BITS || limit <= 0)
		return -1;
	memset(&s, 0, sizeof(s));
	memset(&query, 0, sizeof(query));
	query.probe.center = center;
	query.probe.radius = k;
	s.index = index;
	s.query = &query;
	s.center = center;
	s.k = k;
	s.count_limit = limit;
	s.held.run = -1;
	meta_buffer = mih_pin_meta(index, &meta);
	mih_scan_guard(index, meta.nrecycles);
	s.cache = mih_cache(index, &meta);
	s.copies = s.cache->copies;
	if (mih_plan(&s.cache->blocks, k, &plan) && plan.nkeys <= max_probes)
	{
		s.plan = &plan;
		for (int t = 0; t < s.cache->blocks.nblocks; t++)
			s.probes[t] = palloc(sizeof(uint64) * Max(plan.nkeys, 1));
		mih_make_probes(&s);
		mih_scan_layout(&s, &meta);
		count = Min(s.found, limit);
		for (int t = 0; t < s.cache->blocks.nblocks; t++)
			pfree(s.probes[t]);
	}
	mih_scan_guard(NULL, 0);
	ReleaseBuffer(meta_buffer);
	return mih_counts_now(index).nrecycles == meta.nrecycles ? count : -1;
}

/*
 * The bitmap scan: the keys' radius query, and the rows the index does not
 * hold where they may match too (mih_scan_unindexed.c).
 */
int64
mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	MihProbe	s;
	MihQuery	query;
	int64		found;

	if (!mih_read_keys(scan, &query))
		return 0;
	memset(&s, 0, sizeof(s));
	s.index = scan->indexRelation;
	s.tbm = tbm;
	s.query = &query;
	s.center = query.probe.center;
	s.k = query.probe.radius;
	mih_scan_radius(&s, 0, s.k);
	found = s.found;
	if (!mih_holds_every_match(&query))
	{
		ItemPointerData *tids;
		int64		n = mih_unindexed_rows(scan, &tids);

		for (int64 from = 0; from < n; from += PG_INT32_MAX)
			tbm_add_tuples(tbm, tids + from, (int) Min(n - from, PG_INT32_MAX), true);
		found += n;
		pfree(tids);
	}
	return found;
}
