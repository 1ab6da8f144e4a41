/*
 * mih_scan.h — a radius query's state on simhash_mih, shared by the probes
 * of the run sets (mih_scan.c) and the reading of the pending list
 * (mih_scan_pending.c).
 */
#ifndef SIMHASH_MIH_SCAN_H
#define SIMHASH_MIH_SCAN_H

#include "index/mih/mih_page.h"

#include "nodes/tidbitmap.h"

#include "index/hamming_ball.h"
#include "index/probe_plan.h"

/*
 * What a scan's keys ask, the scope folded in (mih_scope.c): the ball the
 * probes search, and any further balls every match must also lie in.
 */
typedef struct MihQuery
{
	bool		scoped;			/* every scope column given: `folding` is their hash */
	bool		folded;			/* scoped, and a ball given: centres folded */
	uint64		folding;
	SimhashBall probe;
	int			nothers;
	SimhashBall *others;
} MihQuery;

/*
 * Where an ordering scan's probes put their matches (mih_scan_order.c):
 * each TID with its distance from the centre, in the order found, of the
 * matches in the band of distances (low, high].  Past `limit` kept (the
 * scan's share of work_mem), mih_hits_shrink lowers `high`, dropping the
 * farthest: what is kept is then every match in the narrower band, and the
 * scan reads the index again for the band beyond it.
 */
typedef struct MihHits
{
	ItemPointerData *tids;
	uint8	   *distances;
	int64		n;
	int64		room;
	int			low;			/* matches within low bits are not kept (returned already) */
	int			high;			/* nor those beyond high bits */
	int64		limit;			/* the most kept before high is lowered; 0: no limit */
} MihHits;

/* Bytes a hit takes, in the hits and in the sorted copy the scan returns from. */
#define MIH_HIT_BYTES (sizeof(ItemPointerData) + sizeof(uint8))

/* mih_scan.c */
extern void mih_hits_shrink(MihHits *hits);

/*
 * The run page a walk has locked, kept while the next probes (in key order)
 * land on it: at 100M rows and k = 8 about a third of the probes of a run
 * share a page with the one before.
 */
typedef struct MihHeldPage
{
	int			run;			/* -1: none held */
	BlockNumber p;				/* its place in the run's directory */
	Buffer		buffer;
	MihRunView	view;
} MihHeldPage;

typedef struct MihProbe
{
	Relation	index;
	struct MihCache *cache;	/* the run sets' directories (mih_scan.c) */
	const SimhashProbePlan *plan;	/* NULL when reading the first run whole */
	int			set;
	TIDBitmap  *tbm;			/* the matches go here, or (NULL) to hits, or (both NULL) only counted */
	MihHits    *hits;
	int64		count_limit;	/* counting (mih_count_within): stop once found reaches it; 0: no limit */
	uint64		center;
	int			k;
	const MihQuery *query;
	int64		found;
	MihHeldPage held;
	/* Fingerprints matched in later runs, whose TIDs the first run holds. */
	uint64	   *lookups;
	int			nlookups;
	int			maxlookups;
	/* The probes of the plan, run by run: the first key of each range. */
	uint64	   *probes[MIH_MAX_TABLES];
	int			nprobes[MIH_MAX_TABLES];
	/* The pending list (mih_scan_pending.c): the pages copied so far; lane tails a writer held, read last. */
	struct MihPendingCopies *copies;
	BlockNumber busy_tails[MIH_LANES];
	int			nbusy_tails;
} MihProbe;

/* Whether fp lies in every other ball of the query (several radius conditions on one column). */
static inline bool
mih_in_other_balls(const MihProbe *s, uint64 fp)
{
	for (int i = 0; i < s->query->nothers; i++)
		if (simhash_popcount64(fp ^ s->query->others[i].center) > s->query->others[i].radius)
			return false;
	return true;
}

/* Whether a count has reached its limit (mih_count_within): the walks stop. */
static inline bool
mih_count_full(const MihProbe *s)
{
	return s->count_limit > 0 && s->found >= s->count_limit;
}

/* A match: into the bitmap, or with its distance into the hits. */
static inline void
mih_found(MihProbe *s, ItemPointer tid, uint64 fp)
{
	MihHits    *hits = s->hits;

	int			distance;

	s->found++;
	if (s->tbm)
	{
		tbm_add_tuples(s->tbm, tid, 1, true);
		return;
	}
	if (hits == NULL)
		return;					/* counted only */
	distance = simhash_popcount64(fp ^ s->center);
	if (distance <= hits->low || distance > hits->high)
		return;
	if (hits->limit > 0 && hits->n >= hits->limit)
	{
		mih_hits_shrink(hits);
		if (distance > hits->high)
			return;
	}
	if (hits->n == hits->room)
	{
		hits->room = Max(1024, hits->room * 2);
		if (hits->limit > 0)
			hits->room = Max(Min(hits->room, hits->limit), hits->n + 1);
		hits->tids = hits->tids ? repalloc_huge(hits->tids, hits->room * sizeof(ItemPointerData)) :
			palloc_extended(hits->room * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
		hits->distances = hits->distances ? repalloc_huge(hits->distances, hits->room) :
			palloc_extended(hits->room, MCXT_ALLOC_HUGE);
	}
	hits->tids[hits->n] = *tid;
	hits->distances[hits->n++] = (uint8) distance;
}

/* mih_scan_pending.c */
extern struct MihPendingCopies *mih_pending_copies_create(MemoryContext parent);
extern void mih_pending_copies_adopt(struct MihPendingCopies *copies, MemoryContext parent);
extern void mih_pending_copies_forget(struct MihPendingCopies *copies);
extern void mih_scan_pending_list(MihProbe *s, const MihMeta *meta);

/* mih_scan_unindexed.c */
extern bool mih_holds_every_match(const MihQuery *q);
extern int64 mih_unindexed_rows(IndexScanDesc scan, ItemPointerData **tids);

/* mih_scan.c */
extern bool mih_read_keys(IndexScanDesc scan, MihQuery *q);
extern bool mih_scan_radius(MihProbe *s, double entries_per_probe, int whole_k);

#endif							/* SIMHASH_MIH_SCAN_H */
