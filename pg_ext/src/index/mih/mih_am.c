/*
 * mih_am.c — the top layer of simhash_mih (design and the files' layers:
 * mih.h): its handler, which gives PostgreSQL the access method's routine
 * (the entry points of the files below), its costs for the planner and the
 * planner's view of its indexes (which may be scanned without a key).  Its
 * option and settings are registered in mih_utils.c.
 *
 * Layer (mih.h): the top: above the files whose entry points its routine
 * names (mih_build.c, mih_insert.c, mih_scan.c, mih_scan_order.c,
 * mih_vacuum.c) and mih_utils.c (mih_options).
 */
#include "index/mih/mih.h"

#include "access/relscan.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/plancat.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

/* What a scoped path's index cost is taken to be of an unscoped one's (mih_costestimate). */
#define MIH_SCOPED_COST_SHARE 0.99

/*
 * Whether the path's clauses give each of the index's first `ncolumns`
 * columns: all of them (every scope column by equality and the fingerprint
 * a radius) or the scope's (nkeycolumns - 1).  Without every scope column
 * the scan cannot fold its scope into the centre (mih_scan.c): a radius
 * query reads the whole index, an ordering scan cannot run.
 */
static bool
mih_columns_given(IndexPath *path, int ncolumns)
{
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

/*
 * What reading the table once for the rows the index does not hold costs
 * (mih_scan_unindexed.c): a scan whose keys do not exclude them.
 */
static Cost
mih_unindexed_cost(IndexPath *path)
{
	RelOptInfo *rel = path->indexinfo->rel;

	return rel->pages * seq_page_cost + rel->tuples * cpu_tuple_cost;
}

/*
 * An ordering scan (mih_scan_order.c).  Its first row comes after the radii
 * grow to the nearest one: at worst (random fingerprints, whose nearest
 * neighbours lie at about half the bits of a block per run) after the whole
 * index is read, at best (a near-duplicate) after a few probes; the planner
 * is told the worst, or the keys' radius query where it costs less.  Each
 * row after it costs what a sort's comparisons would (the radii read their
 * inner balls again; read whole, every row is compared and counted out), so
 * that without a LIMIT, or a LIMIT of a good part of the table, the
 * sequential scan and its sort, about as fast, are taken.
 */
static void
mih_order_costs(IndexPath *path, GenericCosts *costs)
{
	IndexOptInfo *info = path->indexinfo;
	double		tuples = Max(info->tuples, 2.0);
	Cost		whole = info->pages * seq_page_cost + info->tuples * cpu_operator_cost;
	Cost		first = Min(whole, mih_columns_given(path, info->nkeycolumns) ? costs->indexTotalCost : whole);

	costs->indexStartupCost += first;
	costs->indexTotalCost = costs->indexStartupCost +
		costs->numIndexTuples * (cpu_index_tuple_cost + 2.0 * cpu_operator_cost * log2(tuples));
	if (!mih_columns_given(path, info->nkeycolumns))
		costs->indexTotalCost += mih_unindexed_cost(path);
}

static void
mih_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	GenericCosts costs = {0};
	int			ncolumns = path->indexinfo->nkeycolumns;

	/* Pages read grow with the rows returned, as genericcostestimate assumes. */
	genericcostestimate(root, path, loop_count, &costs);
	if (path->indexorderbys != NIL && !mih_columns_given(path, ncolumns - 1))
	{
		/* An ordering scan without its scope folded: the distances would be wrong. */
		costs.indexStartupCost = costs.indexTotalCost = get_float8_infinity();
		simhash_disable_path(&path->path);
	}
	else if (path->indexorderbys != NIL)
		mih_order_costs(path, &costs);
	else if (!mih_columns_given(path, ncolumns))
	{
		/*
		 * Every row of the index, at every page, all to the heap, and the
		 * table read for the rows the index does not hold: what it really
		 * costs.
		 */
		costs.indexSelectivity = 1.0;
		costs.numIndexPages = path->indexinfo->pages;
		costs.indexTotalCost = costs.indexStartupCost + path->indexinfo->pages * random_page_cost +
			path->indexinfo->tuples * cpu_index_tuple_cost + mih_unindexed_cost(path);
	}
	else if (ncolumns > 1)
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

/*
 * Whether the query sorts by an ordering operator of the index's
 * fingerprint column (`ORDER BY fp <~> q`, or q <~> fp).
 */
static bool
mih_query_orders_by(PlannerInfo *root, IndexOptInfo *info)
{
	Oid			family = info->opfamily[info->nkeycolumns - 1];
	ListCell   *lc;

	foreach(lc, root->parse->sortClause)
	{
		Node	   *expr = get_sortgroupclause_expr((SortGroupClause *) lfirst(lc), root->parse->targetList);

		if (IsA(expr, OpExpr) && OidIsValid(get_op_opfamily_sortfamily(((OpExpr *) expr)->opno, family)))
			return true;
	}
	return false;
}

/*
 * The planner's view of each simhash_mih index (get_relation_info_hook).
 * Its rows come one by one (amgettuple) for an ordering scan alone: a
 * query that does not sort by distance gets its bitmap scan, as before
 * ordering scans (a radius query's rows come in the runs' order, which a
 * bitmap puts in the table's).  An index without scope may be scanned with
 * no key for ORDER BY fp <~> q alone (amoptionalkey), while a scoped one
 * needs its first scope column (the routine's amoptionalkey, false):
 * without it, it could only read every row, which a plan without the index
 * reads better.
 */
static get_relation_info_hook_type mih_next_relation_info = NULL;

static void
mih_relation_info(PlannerInfo *root, Oid relationObjectId, bool inhparent, RelOptInfo *rel)
{
	ListCell   *lc;

	if (mih_next_relation_info)
		mih_next_relation_info(root, relationObjectId, inhparent, rel);
	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *info = (IndexOptInfo *) lfirst(lc);

		if (info->amcostestimate != mih_costestimate)
			continue;
		if (!mih_query_orders_by(root, info))
			info->amhasgettuple = false;
		else if (info->nkeycolumns == 1)
			info->amoptionalkey = true;
	}
}

/* Called from _PG_init. */
void
simhash_mih_planner_init(void)
{
	mih_next_relation_info = get_relation_info_hook;
	get_relation_info_hook = mih_relation_info;
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

	am->amstrategies = 2;		/* 1: <@ a ball; 2: ORDER BY <~> */
	am->amsupport = 1;			/* a scope column's hash (mih_scope.c) */
	am->amcanmulticol = true;	/* scope columns, then the fingerprint */
	am->amcanorderbyop = true;	/* ORDER BY fp <~> q (mih_scan_order.c) */
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
	am->amgettuple = mih_gettuple;
	am->amgetbitmap = mih_getbitmap;
	am->amendscan = mih_endscan;
	PG_RETURN_POINTER(am);
}
