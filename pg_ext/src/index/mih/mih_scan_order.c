/*
 * mih_scan_order.c — the ordering scan of simhash_mih: `ORDER BY fp <~> q`
 * (with LIMIT n: the n most similar rows), rows in increasing Hamming
 * distance from q.
 *
 * Growing radii.  After every run's block has been probed to radius s, every
 * fingerprint within m(s + 1) - 1 bits has been seen (Norouzi et al.,
 * multi-index hashing; m runs): so the scan runs the radius query of
 * mih_scan.c at k = m - 1, 2m - 1, 3m - 1, ... (its plan for k probes each
 * block to about (k + 1) / m - 1 bits: pigeonhole), and after each returns
 * the rows found at distances above the last radius and up to k, sorted by
 * distance (counting them out, 65 distances).  Each radius query reads every
 * run set and the pending list (the sealed chain, the lanes) under its own
 * pin of the metapage, with the protections of the bitmap scan (snapshot,
 * recycling count: mih_scan_radius), so a flush or merge between two radii
 * moves rows, never hides one: every row within k bits is found at k.
 *
 * Each row once.  A row found again by a later radius lies at a distance
 * returned already, which the later radius skips (its band starts beyond
 * it); the rows of one distance come in one radius, sorted by TID, so a
 * repeat among them is the row before.  But a TID may stand in the index
 * for two fingerprints: an entry a flush copied while VACUUM removed its
 * row (mih.h), whose TID a new row took since, stays while that row lives
 * (VACUUM removes dead TIDs only) or until a REINDEX; the executor,
 * rechecking the distance, would return the new row twice, or stop at
 * "index returned tuples in wrong order".  So the TIDs of the
 * distances done are kept too, packed (8 bytes a row returned), sorted, and
 * each row looked up there (a binary search); the rows of a distance join
 * them when the next distance starts.  Only where no index can hold a TID
 * twice could they be forgotten.
 *
 * Reading everything.  Where the next radius's plan has more probes than
 * the index has rows over MIH_ORDER_ENTRIES_PER_PROBE (a probe costs about
 * as much as that many entries read in order), or no plan is within
 * MIH_MAX_PROBES, the scan reads the first run of every set and the pending
 * list once, every row within the keys' bound, and returns them sorted: at
 * worst about the sequential scan and its top-N sort, the index's rows
 * being smaller than the table's.
 *
 * Memory.  A radius keeps its rows (7 bytes each, and as much again for
 * their sorted copy) in a band of distances: past a limit, the band narrows
 * to the nearest rows that fill half of it (mih_hits_shrink), and once they
 * are returned the same radius is read again for the rows beyond them, with
 * a limit MIH_ORDER_BAND_GROWTH times larger, never past work_mem.  A small
 * LIMIT reads the index once, keeping few rows; every row of a large index
 * takes a few reads.  Only the rows of one distance may exceed work_mem (they
 * are kept together), and the TIDs returned (8 bytes each: below).
 *
 * Keys.  A ball (`AND hamming_within(fp, q2, 12)`) bounds the growth: no row
 * lies further from q than d(q, q2) + 12; every row is checked against every
 * ball.  Scope columns (mih_scope.c): q is folded with the scope's hash, so
 * the rows of the query's scope are at their true distances, and another
 * scope's rows, at random ones, fail the heap's recheck of the scope
 * condition.  A query not giving every scope column cannot fold: the planner
 * never orders with it (mih_am.c), and the scan refuses it.
 *
 * Without ORDER BY (a plan the planner makes where the query's sort is not
 * the index's: mih_am.c keeps radius queries to the bitmap scan), the keys'
 * radius query, once, its rows in the runs' order.
 *
 * NULLs.  A sequential scan sorts a NULL distance last (ascending): the rows
 * with a NULL fingerprint, where the keys do not exclude them, come last,
 * from the table (mih_scan_unindexed.c); a NULL q makes every distance NULL:
 * every row, in any order.
 *
 * Rechecks.  The distances are exact, but the executor is asked to recheck
 * them (xs_recheckorderby) and the keys (xs_recheck): an entry a flush copied
 * while VACUUM removed its row (mih.h) may name a TID reused since by
 * another row, which the executor then puts in its place, and another
 * scope's rows must fail.
 *
 * Layer (mih.h): above mih_scan.c and mih_scan_unindexed.c.
 */
#include "index/mih/mih_scan.h"

#include "access/relscan.h"
#include "utils/memutils.h"

/*
 * Entries a probe costs about as much as, read in order (mih_scan_radius's
 * entries_per_probe): past a plan of rows / this many probes the scan reads
 * every entry instead.  It also prices the radii that find too few rows and
 * are followed by the whole read anyway.  Retuned after the band (a whole
 * read that keeps few rows) at 1M rows, interleaved (docs/design/mih.md):
 * top-10 of random rows 36.1 ms at 16, 27.4 at 64, 22.3 at 256 (the index
 * read whole after k = 8 rather than k = 14); lone rows of clustered data
 * 34.1, 25.7, 20.5 ms; members unchanged.  At 256 the plans of k = 11
 * (4,918 probes) and 14 (24,203) are probed from 1.3M and 6.2M rows on.
 */
#define MIH_ORDER_ENTRIES_PER_PROBE 256.0

/*
 * The hits the first band of a scan keeps before narrowing (28 kB), each
 * next band MIH_ORDER_BAND_GROWTH times as many, up to work_mem.  Keeping
 * every row of a whole read costs more than reading it (1M random rows,
 * top-10: 96 ms keeping all, 40 ms keeping 4,681): a small LIMIT takes one
 * read with a small band, every row of the index a few reads.
 */
#define MIH_ORDER_FIRST_BAND_HITS 4096
/* The distance of no group of rows (mih_order_close_group): not a distance, nor a NULL's -1. */
#define MIH_ORDER_NO_GROUP (-2)
#define MIH_ORDER_BAND_GROWTH 4

typedef enum MihOrderPhase
{
	MIH_ORDER_START,
	MIH_ORDER_INDEX,			/* radii of the index */
	MIH_ORDER_UNINDEXED,		/* the rows the index does not hold */
	MIH_ORDER_DONE
} MihOrderPhase;

/* An ordering scan's state (scan->opaque), from one rescan to the next. */
typedef struct MihOrderScan
{
	MemoryContext context;		/* the scan's, reset by each rescan */
	MemoryContext radius_context;	/* one radius's rows, reset by the next */
	MihOrderPhase phase;
	MihQuery	keys;
	bool		unordered;		/* no ORDER BY: the keys' radius query, one pass */
	bool		null_distance;	/* q is NULL */
	uint64		center;			/* q, folded */
	int			bound;			/* no row the keys match is further */
	int			step;			/* the next radius's s: k = m(s + 1) - 1 */
	int			done_radius;	/* every row within it was returned (-1: none) */
	int64		band_hits;		/* the next band's hits before it narrows (work_mem bounds it too) */
	/* The rows found at the last radius beyond done_radius, sorted. */
	ItemPointerData *rows;
	uint8	   *distances;
	int64		nrows;
	int64		next;
	/* The rows of the distance being returned: rows[group_start..next), at group_distance. */
	int64		group_start;
	int			group_distance;
	/* The TIDs of the distances before it, packed (mih_tid_pack), sorted, distinct. */
	uint64	   *returned;
	int64		nreturned;
} MihOrderScan;

IndexScanDesc
mih_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	MihOrderScan *so = palloc0(sizeof(MihOrderScan));

	so->context = AllocSetContextCreate(CurrentMemoryContext, "simhash_mih ordering scan", ALLOCSET_DEFAULT_SIZES);
	so->radius_context = AllocSetContextCreate(so->context, "simhash_mih ordering radius", ALLOCSET_DEFAULT_SIZES);
	so->phase = MIH_ORDER_START;
	scan->opaque = so;
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(sizeof(Datum) * norderbys);
		scan->xs_orderbynulls = palloc(sizeof(bool) * norderbys);
	}
	return scan;
}

void
mih_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys, ScanKey orderbys, int norderbys)
{
	MihOrderScan *so = (MihOrderScan *) scan->opaque;

	if (scankey && scan->numberOfKeys > 0)
		memcpy(scan->keyData, scankey, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memcpy(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));
	MemoryContextReset(so->context);
	so->radius_context = AllocSetContextCreate(so->context, "simhash_mih ordering radius", ALLOCSET_DEFAULT_SIZES);
	so->phase = MIH_ORDER_START;
	so->returned = NULL;
	so->nreturned = 0;
	so->nrows = so->next = so->group_start = 0;
}

void
mih_endscan(IndexScanDesc scan)
{
	MihOrderScan *so = (MihOrderScan *) scan->opaque;

	MemoryContextDelete(so->context);
	pfree(so);
}

/*
 * The scan's keys and q: false when no row can come (a NULL key or
 * contradictory scope values).  The bound: the nearest of the balls' far
 * sides.
 */
static bool
mih_order_start(IndexScanDesc scan, MihOrderScan *so)
{
	ScanKey		order = scan->orderByData;

	if (!mih_read_keys(scan, &so->keys))
		return false;
	so->unordered = scan->numberOfOrderBys == 0;
	if (so->unordered)
	{
		so->center = so->keys.probe.center;
		so->bound = so->keys.probe.radius;
	}
	else if (!so->keys.scoped)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("simhash_mih index \"%s\" orders by distance only with every scope column given by equality",
					   RelationGetRelationName(scan->indexRelation)));
	else
	{
		so->null_distance = (order->sk_flags & SK_ISNULL) != 0;
		so->center = so->null_distance ? 0 : (uint64) DatumGetSimhash64(order->sk_argument) ^ so->keys.folding;
		so->bound = SIMHASH64_BITS;
	}
	if (so->keys.folded && !so->unordered)
	{
		/* Every ball: the probe's, then the others (mih_read_keys sorted them). */
		SimhashBall *balls = palloc((so->keys.nothers + 1) * sizeof(SimhashBall));

		balls[0] = so->keys.probe;
		memcpy(balls + 1, so->keys.others, so->keys.nothers * sizeof(SimhashBall));
		so->keys.others = balls;
		so->keys.nothers++;
		for (int i = 0; i < so->keys.nothers && !so->null_distance; i++)
			so->bound = Min(so->bound, simhash_popcount64(so->center ^ balls[i].center) + balls[i].radius);
	}
	so->step = 0;
	so->done_radius = -1;
	so->band_hits = MIH_ORDER_FIRST_BAND_HITS;
	so->returned = NULL;
	so->nreturned = 0;
	so->group_start = 0;
	so->group_distance = MIH_ORDER_NO_GROUP;
	return true;
}

/*
 * The rows of the distance returned last, rows[group_start..end) (sorted by
 * TID, repeats allowed), merged into the TIDs returned before; the next
 * distance starts at end.
 */
static void
mih_order_close_group(MihOrderScan *so, int64 end)
{
	int64		i = 0,
				j = so->group_start,
				n = 0;
	uint64	   *merged;

	if (end > so->group_start)
	{
		merged = MemoryContextAllocHuge(so->context, (so->nreturned + end - so->group_start) * sizeof(uint64));
		while (i < so->nreturned || j < end)
		{
			uint64		next = j == end || (i < so->nreturned && so->returned[i] <= mih_tid_pack(&so->rows[j])) ?
				so->returned[i++] : mih_tid_pack(&so->rows[j++]);

			if (n == 0 || merged[n - 1] != next)
				merged[n++] = next;
		}
		if (so->returned)
			pfree(so->returned);
		so->returned = merged;
		so->nreturned = n;
	}
	so->group_start = end;
	so->group_distance = MIH_ORDER_NO_GROUP;
}

/* Whether a distance done (before the current one) returned the TID. */
static bool
mih_order_returned_before(const MihOrderScan *so, ItemPointer tid)
{
	uint64		packed = mih_tid_pack(tid);
	int64		lo = 0,
				hi = so->nreturned;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (so->returned[mid] < packed)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < so->nreturned && so->returned[lo] == packed;
}

static int
mih_tid_order(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * The next radius: every row within it found, those beyond done_radius
 * sorted by distance into so->rows.  The last one (the bound, or the whole
 * index read) moves the scan on to the rows the index does not hold.
 */
static void
mih_order_next_radius(IndexScanDesc scan, MihOrderScan *so)
{
	MemoryContext old;
	MihProbe	s;
	MihHits		hits = {0};
	int64		count[SIMHASH64_BITS + 2] = {0};
	int			m = Max(mih_runs_of(scan->indexRelation), 1);
	int			k = so->null_distance || so->unordered ? so->bound : Min(m * (so->step + 1) - 1, so->bound);
	int			top;
	bool		probed;

	mih_order_close_group(so, so->nrows);
	MemoryContextReset(so->radius_context);
	old = MemoryContextSwitchTo(so->radius_context);
	memset(&s, 0, sizeof(s));
	s.index = scan->indexRelation;
	s.hits = &hits;
	s.query = &so->keys;
	s.center = so->center;
	s.k = k;
	hits.low = so->done_radius;
	hits.high = SIMHASH64_BITS;
	hits.limit = Max(Min((int64) work_mem * 1024 / 2 / MIH_HIT_BYTES, so->band_hits), MIH_ORDER_FIRST_BAND_HITS / 4);
	probed = mih_scan_radius(&s, so->unordered ? 0 : MIH_ORDER_ENTRIES_PER_PROBE, so->bound);
	k = s.k;
	top = Min(hits.high, k);
	/* Counting sort by distance of the rows beyond done_radius. */
	for (int64 i = 0; i < hits.n; i++)
		if (hits.distances[i] > so->done_radius)
			count[hits.distances[i] + 1]++;
	for (int d = 1; d <= SIMHASH64_BITS + 1; d++)
		count[d] += count[d - 1];
	so->nrows = count[SIMHASH64_BITS + 1];
	so->rows = palloc_extended(Max(so->nrows, 1) * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	so->distances = palloc_extended(Max(so->nrows, 1), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < hits.n; i++)
		if (hits.distances[i] > so->done_radius)
		{
			int64		at = count[hits.distances[i]]++;

			so->rows[at] = hits.tids[i];
			so->distances[at] = hits.distances[i];
		}
	if (hits.tids)
	{
		pfree(hits.tids);
		pfree(hits.distances);
	}
	/* Each distance's rows by TID: a repeat is the row before (mih_order_return). */
	for (int d = 0; d <= SIMHASH64_BITS; d++)
	{
		int64		start = d == 0 ? 0 : count[d - 1];

		if (count[d] - start > 1)
			qsort(so->rows + start, count[d] - start, sizeof(ItemPointerData), mih_tid_order);
	}
	MemoryContextSwitchTo(old);
	so->next = so->group_start = 0;
	so->done_radius = Max(so->done_radius, top);
	if (top < k)
	{
		/* The band was narrowed: this radius again, beyond it, a wider band. */
		so->band_hits = Min(so->band_hits * MIH_ORDER_BAND_GROWTH, MaxAllocHugeSize / MIH_HIT_BYTES);
		return;
	}
	so->step++;
	if (!probed || k >= so->bound)
		so->phase = MIH_ORDER_UNINDEXED;
}

/*
 * Returns row i unless it was returned already: the row before it at its
 * distance (they are sorted by TID), or at a distance before.
 */
static bool
mih_order_return(IndexScanDesc scan, MihOrderScan *so, int64 i, int group, int distance)
{
	ItemPointer tid = &so->rows[i];

	if (group != so->group_distance)
	{
		mih_order_close_group(so, i);
		so->group_distance = group;
	}
	else if (ItemPointerEquals(&so->rows[i - 1], tid))
		return false;
	if (mih_order_returned_before(so, tid))
		return false;
	scan->xs_heaptid = *tid;
	scan->xs_recheck = true;
	if (so->unordered)
		return true;
	scan->xs_recheckorderby = true;
	scan->xs_orderbyvals[0] = Int32GetDatum(distance);
	scan->xs_orderbynulls[0] = distance < 0;
	return true;
}

bool
mih_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	MihOrderScan *so = (MihOrderScan *) scan->opaque;

	if (so->phase == MIH_ORDER_START)
		so->phase = mih_order_start(scan, so) ? MIH_ORDER_INDEX : MIH_ORDER_DONE;
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		while (so->next < so->nrows)
		{
			int64		i = so->next++;
			int			group = so->phase == MIH_ORDER_DONE ? -1 : so->distances[i];

			if (mih_order_return(scan, so, i, group, so->null_distance ? -1 : group))
				return true;
		}
		switch (so->phase)
		{
			case MIH_ORDER_INDEX:
				mih_order_next_radius(scan, so);
				break;
			case MIH_ORDER_UNINDEXED:
				mih_order_close_group(so, so->nrows);
				MemoryContextReset(so->radius_context);
				so->phase = MIH_ORDER_DONE;
				so->next = so->nrows = so->group_start = 0;
				if (!mih_holds_every_match(&so->keys))
				{
					MemoryContext old = MemoryContextSwitchTo(so->radius_context);

					so->nrows = mih_unindexed_rows(scan, &so->rows);
					if (so->nrows > 1)
						qsort(so->rows, so->nrows, sizeof(ItemPointerData), mih_tid_order);
					MemoryContextSwitchTo(old);
				}
				break;
			default:
				return false;
		}
	}
}
