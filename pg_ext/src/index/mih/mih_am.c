/*
 * mih_am.c — the top layer of simhash_mih (design and the files' layers:
 * mih.h): its handler, which gives PostgreSQL the access method's routine
 * (the entry points of the files below), and its costs for the planner.
 * Its option and settings are registered in mih_utils.c.
 *
 * Layer (mih.h): the top: above the files whose entry points its routine
 * names (mih_build.c, mih_insert.c, mih_scan.c, mih_vacuum.c) and
 * mih_utils.c (mih_options).
 */
#include "index/mih/mih.h"

#include "access/relscan.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/selfuncs.h"

/* What a scoped path's index cost is taken to be of an unscoped one's (mih_costestimate). */
#define MIH_SCOPED_COST_SHARE 0.99

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

/*
 * Whether the path's clauses give every scope column by equality and the
 * fingerprint a radius: otherwise the scan cannot fold its scope into the
 * centre and reads the whole index (mih_scan.c).
 */
static bool
mih_clauses_complete(IndexPath *path)
{
	int			ncolumns = path->indexinfo->nkeycolumns;
	bool		given[INDEX_MAX_KEYS] = {false};
	ListCell   *lc;

	foreach(lc, path->indexclauses)
		given[((IndexClause *) lfirst(lc))->indexcol] = true;
	for (int i = 0; i < ncolumns; i++)
		if (!given[i])
			return false;
	return true;
}

/*
 * The scope clauses of a complete path: evaluated once, folded into the
 * centre, never per entry as genericcostestimate charges them.
 */
static int
mih_scope_clauses(IndexPath *path)
{
	int			n = 0;
	ListCell   *lc;

	foreach(lc, path->indexclauses)
		if (((IndexClause *) lfirst(lc))->indexcol < path->indexinfo->nkeycolumns - 1)
			n += list_length(((IndexClause *) lfirst(lc))->indexquals);
	return n;
}

static void
mih_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	GenericCosts costs = {0};

	/* Pages read grow with the rows returned, as genericcostestimate assumes. */
	genericcostestimate(root, path, loop_count, &costs);
	if (!mih_clauses_complete(path))
	{
		/* Every row of the index, at every page, all to the heap: what it really costs. */
		costs.indexSelectivity = 1.0;
		costs.numIndexPages = path->indexinfo->pages;
		costs.indexTotalCost = costs.indexStartupCost + path->indexinfo->pages * random_page_cost +
			path->indexinfo->tuples * cpu_index_tuple_cost;
	}
	else if (path->indexinfo->nkeycolumns > 1)
	{
		costs.indexTotalCost -= costs.numIndexTuples * cpu_operator_cost * mih_scope_clauses(path);
		/*
		 * The probes of a scoped path read only their scope's share of what
		 * the same probes read in an index without scope (the other scopes'
		 * near-duplicates are elsewhere), which the estimates, one row each
		 * at near-duplicate radii, cannot show: the scoped index wins the tie.
		 */
		costs.indexTotalCost *= MIH_SCOPED_COST_SHARE;
	}
	*indexStartupCost = costs.indexStartupCost;
	*indexTotalCost = costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = costs.indexCorrelation;
	*indexPages = costs.numIndexPages;
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
	am->amsupport = 1;			/* a scope column's hash (mih_scope.c) */
	am->amcanmulticol = true;	/* scope columns, then the fingerprint */
	am->amoptsprocnum = 0;
	am->amoptionalkey = false;
	am->amkeytype = InvalidOid;
	am->ambuild = mih_build;
	simhash_am_builds_in_parallel(am);
	am->ambuildphasename = mih_build_phase_name;
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
