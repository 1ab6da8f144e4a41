/*
 * mih_am.c — the index access method simhash_mih (design: mih.h): its
 * handler, its option `runs`, the setting simhash.mih_pending_limit, and
 * its costs for the planner.
 */
#include "index/mih/mih.h"

#include "access/reloptions.h"
#include "access/relscan.h"
#include "nodes/pathnodes.h"
#include "utils/guc.h"
#include "utils/selfuncs.h"

/* WITH (runs = m): how many runs (blocks) the index keeps. */
typedef struct MihOptions
{
	int32		vl_len_;
	int			runs;
} MihOptions;

static relopt_kind mih_relopt_kind;
int			mih_pending_limit = 65536;

/* Called from _PG_init: the index option and the pending-list setting. */
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

static void
mih_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	GenericCosts costs = {0};

	/* Pages read grow with the rows returned, as genericcostestimate assumes. */
	genericcostestimate(root, path, loop_count, &costs);
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
