/*
 * mih_scan_unindexed.c — the rows a simhash_mih index does not hold, for
 * the queries they may match.
 *
 * A row with a NULL fingerprint, or a NULL in a scope column, has no place
 * in the index (mih_fold).  No radius can match such a row, nor can a scope
 * column compared by equality: a query with both keys (every scope column
 * and a ball) reaches every row it may return through the index.  Any other
 * query may also return such rows: an ordering scan without a ball (`ORDER
 * BY fp <~> q`, whose NULL distances come last, as a sequential scan and its
 * sort give them), a scan of part of the scope or of no key (a partial
 * index).  Those scans find them by reading the table once, with the scan's
 * snapshot, through the table access method's index build scan (which
 * forms the index's values, expressions and predicate included, and gives
 * each row the TID an index would hold: a HOT chain's root); the heap
 * rechecks the query's keys on each.
 *
 * Layer (mih.h): above mih_utils.c; below mih_scan.c and
 * mih_scan_order.c, which call it.
 */
#include "index/mih/mih_scan.h"

#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "utils/snapmgr.h"

/* The TIDs collected by the table's scan. */
typedef struct MihUnindexed
{
	ItemPointerData *tids;
	int64		n;
	int64		room;
} MihUnindexed;

/* Whether every row the query may return is one the index holds (a NULL in its keys' columns returns none). */
bool
mih_holds_every_match(const MihQuery *q)
{
	return q->folded;
}

/* Keeps a row with a NULL in any of the index's columns. */
static void
mih_collect_unindexed(Relation index, ItemPointer tid, Datum *values, bool *isnull, bool alive, void *arg)
{
	MihUnindexed *u = (MihUnindexed *) arg;

	for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(index); i++)
		if (isnull[i])
		{
			if (u->n == u->room)
			{
				u->room *= 2;
				u->tids = repalloc_huge(u->tids, u->room * sizeof(ItemPointerData));
			}
			u->tids[u->n++] = *tid;
			return;
		}
}

/*
 * The TIDs of the rows the scan's snapshot sees that the index does not
 * hold (a palloc'd array in *tids); how many.
 */
int64
mih_unindexed_rows(IndexScanDesc scan, ItemPointerData **tids)
{
	Relation	index = scan->indexRelation;
	Relation	heap = table_open(index->rd_index->indrelid, AccessShareLock);
	IndexInfo  *info = BuildIndexInfo(index);
	MihUnindexed u = {0};
	TableScanDesc heap_scan;

	if (scan->xs_snapshot == NULL || !IsMVCCSnapshot(scan->xs_snapshot))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("simhash_mih index \"%s\" can only be scanned with an MVCC snapshot here",
					   RelationGetRelationName(index)));
	u.room = 64;
	u.tids = palloc(u.room * sizeof(ItemPointerData));
	/* The scan's own snapshot: the build scan then takes no horizon (a concurrent build's way). */
	info->ii_Concurrent = true;
	heap_scan = table_beginscan_strat(heap, scan->xs_snapshot, 0, NULL, true, true);
	table_index_build_scan(heap, index, info, true, false, mih_collect_unindexed, &u, heap_scan);
	table_close(heap, AccessShareLock);
	*tids = u.tids;
	return u.n;
}
