/*
 * mih_am.c — the index access method simhash_mih (design: mih.h): its
 * handler, its option `runs`, its settings (simhash.mih_pending_limit,
 * mih_background_merges, mih_merge_nice; the tests' debug_busy_tails), and
 * its costs for the planner.
 */
#include "index/mih/mih_build.h"

#include "access/reloptions.h"
#include "access/relscan.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/guc.h"
#include "utils/selfuncs.h"

/* WITH (runs = m): how many runs (blocks) the index keeps. */
typedef struct MihOptions
{
	int32		vl_len_;
	int			runs;
} MihOptions;

/* What a scoped path's index cost is taken to be of an unscoped one's (mih_costestimate). */
#define MIH_SCOPED_COST_SHARE 0.99

static relopt_kind mih_relopt_kind;
int			mih_pending_limit = 65536;
bool		mih_debug_busy_tails = false;

/* Called from _PG_init: the index option, the pending-list and worker settings. */
void
simhash_mih_init(void)
{
	mih_relopt_kind = add_reloption_kind();
	add_int_reloption(mih_relopt_kind, "runs",
					  "Sorted runs (blocks) of a simhash_mih index: more is faster at large radii, larger.",
					  MIH_DEFAULT_RUNS, 1, MIH_MAX_TABLES, AccessExclusiveLock);
	DefineCustomIntVariable("simhash.mih_pending_limit",
							"Rows a simhash_mih index keeps unsorted before an insert sorts them into a run set.",
							"Every query reads the unsorted rows whole.",
							&mih_pending_limit, 65536, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("simhash.mih_background_merges",
							 "Whether simhash_mih flushes its pending list, merges run sets and recycles retired pages in background workers.",
							 "Off, or where no worker can start, the insert that fills the pending list flushes it itself, and runs one merge if that made one due; off, inserts recycle.",
							 &mih_background_merges, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("simhash.mih_merge_nice",
							"How much lower than the server's the CPU priority of simhash_mih's merge workers is (a nice increment).",
							"On a server with every core busy, queries and inserts then take a core before a merge does; 0 leaves merges at the server's priority.  Workers read it as they start: set it in the configuration or with ALTER DATABASE.",
							&mih_merge_nice, MIH_MERGE_NICE_DEFAULT, 0, 19,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("simhash.debug_busy_tails",
							 "For tests: simhash_mih scans take every pending lane's tail for one a writer holds.",
							 "They read such tails after every other page, as they do those a writer holds.",
							 &mih_debug_busy_tails, false,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

static bytea *
mih_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt parse[] = {{"runs", RELOPT_TYPE_INT, offsetof(MihOptions, runs)}};

	return (bytea *) build_reloptions(reloptions, validate, mih_relopt_kind,
									  sizeof(MihOptions), parse, lengthof(parse));
}

int
mih_runs_of(Relation index)
{
	return index->rd_options ? ((MihOptions *) index->rd_options)->runs : MIH_DEFAULT_RUNS;
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
