/*
 * planner_support.c — what the planner needs to use the GIN operator class
 * on its own, and its estimates of how many rows lie within k bits:
 *
 *  - hamming_within_support, the support function of hamming_within(a, b, k):
 *    turns hamming_within(indexed_fp, q, k) into the indexable clause
 *    indexed_fp <@ ROW(q, k)::simhash64_ball (SupportRequestIndexCondition),
 *    unless k is known to be a radius the index would answer by scanning
 *    itself whole (a sequential scan is cheaper), and estimates
 *    its selectivity (SupportRequestSelectivity);
 *  - the restriction and join estimators of the <@ operator;
 *  - the rewriting of `fp <~> q <= k` (and `< k`, `k >= fp <~> q`, ...)
 *    with k known at plan time into hamming_within(fp, q, k), the same
 *    condition, so that it gets the same estimate and the same indexes
 *    (planner_hook: no estimator of the core's integer comparisons can see
 *    the distance inside).
 *
 * The estimate of `within k bits` is the share of the column's rows within k
 * bits of a row of it, as ANALYZE measured it (pair_distances.c): the near
 * copies of clustered data, the ball's volume of random data.  It is never
 * below the share of uniformly random fingerprints within k bits of a point,
 * sum(C(64, i), i <= k) / 2^64 (tiny for small k, 1 at k = 64), which is the
 * estimate where the column has no such statistics.  A radius unknown at
 * plan time (a generic plan's parameter) is taken to be
 * SIMHASH_GENERIC_PLAN_RADIUS.
 *
 * That share is a mean over the rows: a lone row's ball holds itself where
 * the mean holds a cluster's share (13 rows against 1 at 1M rows, k = 8,
 * issue 50's data), and no statistic of the whole table serves both.  So
 * where the centre too is known at plan time (a constant, or a custom
 * plan's parameter) and the column has a simhash_mih index of its own (the
 * fingerprint its one column, not partial), the planner counts the ball
 * there, as get_actual_variable_range (selfuncs.c) reads an index for a
 * histogram's ends: the radius query itself, matches counted and not kept
 * (mih_count_within), once a planning (last_count), within
 * SIMHASH_COUNT_PROBES probes (k <= 8 with the default 3 runs: 0.1-0.2 ms
 * of planning at 1M rows) and stopping at
 * SIMHASH_COUNT_ROWS rows (past it, the larger of that and the statistic's
 * estimate).  Where the index is not usable (a generic plan's centre, a
 * radius past the probes' budget, a scoped or partial index, a hot standby,
 * whose pages the primary recycles under a scan, a user who may not read
 * every row of the column: row security, vardata's acl_ok), the statistic.
 * The count holds dead rows the index still has, as the index scan reads
 * them.
 * Layer: above simhash_mih (mih.h), which never calls this file.
 */
#include "index/planner_support.h"

#include "index/gin/gin_ops.h"
#include "index/hamming_ball.h"
#include "index/mih/mih.h"
#include "index/pair_distances.h"
#include "type/hamming.h"
#include "type/simhash64.h"

#include <math.h>

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/xlog.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/snapmgr.h"

/* Operator strategy of <@ in simhash64_ops. */
#define SIMHASH_BALL_STRATEGY 1

#define SIMHASH_BALL_TYPE_NAME "simhash64_ball"

/*
 * The radius estimated for when it is unknown at plan time: the
 * near-duplicate radius the documentation starts from.
 */
#define SIMHASH_GENERIC_PLAN_RADIUS 3

/*
 * The plan-time count of a ball (counted_share): at most this many probes
 * (the plan of k = 8 over 3 runs has 762; k = 9, 1,590), and it stops at
 * this many rows (about a millisecond of entries compared).
 */
#define SIMHASH_COUNT_PROBES 1024
#define SIMHASH_COUNT_ROWS 50000

/*
 * The last count, kept for the rest of the planning (a plan estimates the
 * same ball for the condition and again for the index's clause): forgotten
 * when the next planning starts (rewriting_planner).
 */
static struct
{
	bool		valid;
	Oid			index;
	uint64		center;
	int			radius;
	int64		count;
}			last_count;

static Selectivity
ball_fraction(int radius)
{
	double		count = 0;
	double		binomial = 1;	/* C(64, i) */

	if (radius < 0)
		return 0;
	for (int i = 0; i <= Min(radius, SIMHASH64_BITS); i++)
	{
		count += binomial;
		binomial = binomial * (SIMHASH64_BITS - i) / (i + 1);
	}
	/* Rounding may push the sum over 2^64 at radius 64. */
	return Min(count / ldexp(1.0, SIMHASH64_BITS), 1.0);
}

/*
 * The share of the rows of vardata's column within `radius` bits of center,
 * counted by a simhash_mih index on the column where center is known at
 * plan time (the top of this file); -1 where not counted.  *at_least: the
 * count stopped at SIMHASH_COUNT_ROWS.
 */
static double
counted_share(PlannerInfo *root, VariableStatData *vardata, Node *center, int radius, bool *at_least)
{
	Node	   *value;
	Node	   *column = (Node *) vardata->var;
	ListCell   *lc;

	*at_least = false;
	if (center == NULL || column == NULL || vardata->rel == NULL || !vardata->acl_ok ||
		vardata->rel->reloptkind != RELOPT_BASEREL || vardata->rel->tuples < 1 ||
		radius < 0 || radius > SIMHASH64_BITS || RecoveryInProgress() || !ActiveSnapshotSet())
		return -1;
	while (IsA(column, RelabelType))
		column = (Node *) ((RelabelType *) column)->arg;
	if (!IsA(column, Var) || ((Var *) column)->varlevelsup != 0)
		return -1;
	value = estimate_expression_value(root, center);
	if (!IsA(value, Const) || ((Const *) value)->constisnull)
		return -1;
	foreach(lc, vardata->rel->indexlist)
	{
		IndexOptInfo *info = (IndexOptInfo *) lfirst(lc);
		Relation	index;
		int64		count = -1;

		if (info->hypothetical || info->nkeycolumns != 1 || info->indpred != NIL ||
			info->indexkeys[0] != ((Var *) column)->varattno ||
			info->opcintype[0] != ((Const *) value)->consttype)
			continue;
		if (last_count.valid && last_count.index == info->indexoid && last_count.radius == radius &&
			last_count.center == DatumGetSimhash64(((Const *) value)->constvalue))
			count = last_count.count;
		else
		{
			/* get_relation_info locked it. */
			index = index_open(info->indexoid, NoLock);
			if (mih_is_index(index))
				count = mih_count_within(index, DatumGetSimhash64(((Const *) value)->constvalue), radius,
										 SIMHASH_COUNT_ROWS, SIMHASH_COUNT_PROBES);
			index_close(index, NoLock);
			last_count.valid = true;
			last_count.index = info->indexoid;
			last_count.center = DatumGetSimhash64(((Const *) value)->constvalue);
			last_count.radius = radius;
			last_count.count = count;
		}
		if (count >= 0)
		{
			*at_least = count >= SIMHASH_COUNT_ROWS;
			return Min(count / vardata->rel->tuples, 1.0);
		}
	}
	return -1;
}

/*
 * The share of the rows within `radius` bits: counted in an index where one
 * of the two fingerprints is an indexed column and the other known at plan
 * time, else from the statistics of the first of the fingerprints that has
 * them (the indexed column, or either side of a join), else the ball's
 * volume.
 */
static Selectivity
within_selectivity(PlannerInfo *root, List *fingerprints, int varRelid, int radius)
{
	Selectivity volume = ball_fraction(radius);
	ListCell   *lc;

	foreach(lc, fingerprints)
	{
		VariableStatData vardata;
		Node	   *other = list_length(fingerprints) != 2 ? NULL :
			(Node *) (foreach_current_index(lc) == 0 ? lsecond(fingerprints) : linitial(fingerprints));
		bool		at_least;
		double		counted;
		double		share;

		examine_variable(root, (Node *) lfirst(lc), varRelid, &vardata);
		counted = counted_share(root, &vardata, other, radius, &at_least);
		share = counted >= 0 && !at_least ? counted : Max(simhash_pair_share(&vardata, radius), counted);
		ReleaseVariableStats(vardata);
		if (share >= 0)
			return Max(share, volume);
	}
	return volume;
}

/* The same, for a radius given as an expression. */
static Selectivity
radius_selectivity(PlannerInfo *root, List *fingerprints, int varRelid, Node *radius)
{
	Node	   *value = estimate_expression_value(root, radius);

	if (!IsA(value, Const))
		return within_selectivity(root, fingerprints, varRelid, SIMHASH_GENERIC_PLAN_RADIUS);
	if (((Const *) value)->constisnull)
		return 0;
	return within_selectivity(root, fingerprints, varRelid, DatumGetInt32(((Const *) value)->constvalue));
}

/* The selectivity of fp <@ ball, for a ball given as a constant or ROW(q, k). */
static Selectivity
ball_selectivity(PlannerInfo *root, List *args, int varRelid)
{
	Node	   *ball = estimate_expression_value(root, lsecond(args));

	if (IsA(ball, RowExpr) && list_length(((RowExpr *) ball)->args) == 2)
		return radius_selectivity(root, list_make2(linitial(args), linitial(((RowExpr *) ball)->args)),
								  varRelid, lsecond(((RowExpr *) ball)->args));
	if (IsA(ball, Const))
	{
		bool		isnull;
		Datum		radius;

		bool		center_isnull;
		Datum		center;

		if (((Const *) ball)->constisnull)
			return 0;
		radius = GetAttributeByNum(DatumGetHeapTupleHeader(((Const *) ball)->constvalue),
								   SIMHASH_BALL_RADIUS_ATTNUM, &isnull);
		center = GetAttributeByNum(DatumGetHeapTupleHeader(((Const *) ball)->constvalue),
								   SIMHASH_BALL_CENTER_ATTNUM, &center_isnull);
		if (isnull || center_isnull)
			return 0;
		return within_selectivity(root, list_make2(linitial(args),
												   makeConst(exprType(linitial(args)), -1, InvalidOid,
															 sizeof(simhash64), center, false, true)),
								  varRelid, DatumGetInt32(radius));
	}
	return within_selectivity(root, list_make1(linitial(args)), varRelid, SIMHASH_GENERIC_PLAN_RADIUS);
}

PG_FUNCTION_INFO_V1(simhash64_ball_restrict);
Datum
simhash64_ball_restrict(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(ball_selectivity((PlannerInfo *) PG_GETARG_POINTER(0),
									  (List *) PG_GETARG_POINTER(2), PG_GETARG_INT32(3)));
}

PG_FUNCTION_INFO_V1(simhash64_ball_joinsel);
Datum
simhash64_ball_joinsel(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(ball_selectivity((PlannerInfo *) PG_GETARG_POINTER(0),
									  (List *) PG_GETARG_POINTER(2), 0));
}

/*
 * True when the radius is known at plan time and a GIN index would scan
 * itself whole for it.  A simhash_mih index answers every radius by probes.
 */
static bool
beyond_lookups(PlannerInfo *root, Node *radius, IndexOptInfo *index, int indexcol)
{
	Node	   *value = estimate_expression_value(root, radius);
	const bytea *options = index->opclassoptions ? index->opclassoptions[indexcol] : NULL;

	return index->relam == GIN_AM_OID && IsA(value, Const) && !((Const *) value)->constisnull &&
		!simhash_gin_looks_up(options, DatumGetInt32(((Const *) value)->constvalue));
}

/*
 * hamming_within(a, b, k) with a (or b) on an index of simhash64_ops becomes
 * a <@ ROW(b, k)::simhash64_ball.  That clause is exactly equivalent, so it
 * replaces the call (lossy = false); the index itself asks for the recheck.
 */
static List *
index_condition(SupportRequestIndexCondition *req)
{
	FuncExpr   *call = (FuncExpr *) req->node;
	Node	   *indexed;
	Node	   *center;
	Node	   *radius;
	Oid			ball_type;
	Oid			operator;
	RowExpr    *ball;

	if (!IsA(call, FuncExpr) || list_length(call->args) != 3 || req->indexarg > 1)
		return NIL;
	indexed = list_nth(call->args, req->indexarg);
	center = list_nth(call->args, 1 - req->indexarg);
	radius = lthird(call->args);
	if (!is_pseudo_constant_for_index(req->root, center, req->index) ||
		!is_pseudo_constant_for_index(req->root, radius, req->index))
		return NIL;

	/* The ball type lives in the extension's schema, next to the function. */
	ball_type = simhash_extension_type(req->funcid, SIMHASH_BALL_TYPE_NAME);
	operator = get_opfamily_member(req->opfamily, exprType(indexed), ball_type,
								   SIMHASH_BALL_STRATEGY);
	if (!OidIsValid(operator))
		return NIL;				/* not our operator family */
	if (beyond_lookups(req->root, radius, req->index, req->indexcol))
		return NIL;

	ball = makeNode(RowExpr);
	ball->args = list_make2(center, radius);
	ball->row_typeid = ball_type;
	ball->row_format = COERCE_EXPLICIT_CAST;
	ball->colnames = list_make2(makeString(pstrdup("center")), makeString(pstrdup("radius")));
	ball->location = -1;

	req->lossy = false;
	return list_make1(make_opclause(operator, BOOLOID, false, (Expr *) indexed,
									(Expr *) ball, InvalidOid, InvalidOid));
}

PG_FUNCTION_INFO_V1(hamming_within_support);
Datum
hamming_within_support(PG_FUNCTION_ARGS)
{
	Node	   *request = (Node *) PG_GETARG_POINTER(0);

	if (IsA(request, SupportRequestIndexCondition))
		PG_RETURN_POINTER(index_condition((SupportRequestIndexCondition *) request));
	if (IsA(request, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) request;

		if (list_length(req->args) != 3)
			PG_RETURN_POINTER(NULL);
		req->selectivity = radius_selectivity(req->root, list_make2(linitial(req->args), lsecond(req->args)),
											  req->is_join ? 0 : req->varRelid, lthird(req->args));
		PG_RETURN_POINTER(req);
	}
	PG_RETURN_POINTER(NULL);
}

/*
 * The arguments of node when it calls the extension's hamming_distance (as
 * the operator <~> or the function), with the function; NIL otherwise.
 */
static List *
distance_arguments(Node *node, Oid *function)
{
	List	   *args;
	char	   *name;
	FmgrInfo	info;

	if (IsA(node, OpExpr))
	{
		set_opfuncid((OpExpr *) node);
		*function = ((OpExpr *) node)->opfuncid;
		args = ((OpExpr *) node)->args;
	}
	else if (IsA(node, FuncExpr))
	{
		*function = ((FuncExpr *) node)->funcid;
		args = ((FuncExpr *) node)->args;
	}
	else
		return NIL;
	if (list_length(args) != 2 || exprType(node) != INT4OID)
		return NIL;
	name = get_func_name(*function);
	if (name == NULL || strcmp(name, "hamming_distance") != 0)
		return NIL;
	fmgr_info(*function, &info);
	return info.fn_addr == simhash64_hamming_distance ? args : NIL;
}

/* The value of an integer known at plan time: a constant, or a custom plan's parameter. */
static bool
known_integer(Node *node, ParamListInfo bound, int64 *value)
{
	Oid			type;
	Datum		datum;

	if (IsA(node, Const) && !((Const *) node)->constisnull)
	{
		type = ((Const *) node)->consttype;
		datum = ((Const *) node)->constvalue;
	}
	else if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN && bound != NULL &&
			 ((Param *) node)->paramid > 0 && ((Param *) node)->paramid <= bound->numParams)
	{
		Param	   *param = (Param *) node;
		ParamExternData workspace;
		ParamExternData *known = bound->paramFetch ?
			bound->paramFetch(bound, param->paramid, false, &workspace) : &bound->params[param->paramid - 1];

		if (known == NULL || !(known->pflags & PARAM_FLAG_CONST) || known->isnull ||
			known->ptype != param->paramtype)
			return false;
		type = param->paramtype;
		datum = known->value;
	}
	else
		return false;
	switch (type)
	{
		case INT2OID:
			*value = DatumGetInt16(datum);
			return true;
		case INT4OID:
			*value = DatumGetInt32(datum);
			return true;
		case INT8OID:
			*value = DatumGetInt64(datum);
			return true;
		default:
			return false;
	}
}

/*
 * hamming_within(a, b, k) for `a <~> b <= k` and the like (an OpExpr of the
 * integer comparisons with the distance on either side), where k is known
 * and the radius lies in 0..64; NULL otherwise.  Both are strict, so they
 * are NULL together.
 */
static Node *
within_for_bound(OpExpr *op, ParamListInfo bound)
{
	int			strategy;
	bool		distance_left;
	Node	   *distance;
	List	   *args;
	Oid			function;
	int64		k;
	Oid			within;
	Oid			argtypes[3];
	FmgrInfo	info;

	if (list_length(op->args) != 2)
		return NULL;
	distance_left = !IsA(linitial(op->args), Const) && !IsA(linitial(op->args), Param);
	distance = distance_left ? linitial(op->args) : lsecond(op->args);
	if (!IsA(distance, OpExpr) && !IsA(distance, FuncExpr))
		return NULL;
	strategy = get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID);
	if (strategy == 0 || strategy == BTEqualStrategyNumber ||
		(strategy == BTLessStrategyNumber || strategy == BTLessEqualStrategyNumber) != distance_left)
		return NULL;
	if (!known_integer(distance_left ? lsecond(op->args) : linitial(op->args), bound, &k))
		return NULL;
	if (strategy == BTLessStrategyNumber || strategy == BTGreaterStrategyNumber)
		k--;
	if (k < 0 || k > SIMHASH64_BITS)
		return NULL;
	args = distance_arguments(distance, &function);
	if (args == NIL)
		return NULL;

	argtypes[0] = exprType(linitial(args));
	argtypes[1] = exprType(lsecond(args));
	argtypes[2] = INT4OID;
	within = LookupFuncName(list_make2(makeString(get_namespace_name(get_func_namespace(function))),
									   makeString("hamming_within")),
							3, argtypes, true);
	if (!OidIsValid(within))
		return NULL;
	fmgr_info(within, &info);
	if (info.fn_addr != simhash64_hamming_within)
		return NULL;
	return (Node *) makeFuncExpr(within, BOOLOID,
								 list_make3(linitial(args), lsecond(args),
											makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
													  Int32GetDatum((int32) k), false, true)),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

static bool
has_distance_bound(Node *node, ParamListInfo bound)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, has_distance_bound, bound, 0);
	if (IsA(node, OpExpr) && within_for_bound((OpExpr *) node, bound) != NULL)
		return true;
	return expression_tree_walker(node, has_distance_bound, bound);
}

static Node *
rewrite_distance_bounds(Node *node, ParamListInfo bound)
{
	Node	   *within;

	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, rewrite_distance_bounds, bound, 0);
	if (IsA(node, OpExpr) && (within = within_for_bound((OpExpr *) node, bound)) != NULL)
		return expression_tree_mutator(within, rewrite_distance_bounds, bound);
	return expression_tree_mutator(node, rewrite_distance_bounds, bound);
}

static planner_hook_type next_planner = NULL;

static PlannedStmt *
rewriting_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo bound)
{
	last_count.valid = false;
	if (parse->commandType != CMD_UTILITY && has_distance_bound((Node *) parse, bound))
		parse = (Query *) rewrite_distance_bounds((Node *) parse, bound);
	if (next_planner)
		return next_planner(parse, query_string, cursorOptions, bound);
	return standard_planner(parse, query_string, cursorOptions, bound);
}

void
simhash_planner_support_init(void)
{
	next_planner = planner_hook;
	planner_hook = rewriting_planner;
}
