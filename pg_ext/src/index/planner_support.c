/*
 * planner_support.c — what the planner needs to use the GIN operator class
 * on its own:
 *
 *  - hamming_within_support, the support function of hamming_within(a, b, k):
 *    turns hamming_within(indexed_fp, q, k) into the indexable clause
 *    indexed_fp <@ ROW(q, k)::simhash64_ball (SupportRequestIndexCondition),
 *    unless k is known to be a radius the index would answer by scanning
 *    itself whole (a sequential scan is cheaper), and estimates
 *    its selectivity (SupportRequestSelectivity);
 *  - the restriction and join estimators of the <@ operator.
 *
 * The estimate is the fraction of uniformly random fingerprints within k bits
 * of a point, sum(C(64, i), i <= k) / 2^64: tiny for small k, so the planner
 * prefers the index for near-duplicate queries, and 1 at k = 64.
 */
#include "index/gin/gin_ops.h"
#include "index/hamming_ball.h"
#include "type/simhash64.h"

#include <math.h>

#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

/* Operator strategy of <@ in simhash64_ops. */
#define SIMHASH_BALL_STRATEGY 1

#define SIMHASH_BALL_TYPE_NAME "simhash64_ball"

/* Radius unknown at plan time: the usual guess for a range-like condition. */
#define SIMHASH_UNKNOWN_RADIUS_SEL DEFAULT_RANGE_INEQ_SEL

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

static Selectivity
radius_selectivity(PlannerInfo *root, Node *radius)
{
	Node	   *value = estimate_expression_value(root, radius);

	if (!IsA(value, Const))
		return SIMHASH_UNKNOWN_RADIUS_SEL;
	if (((Const *) value)->constisnull)
		return 0;
	return ball_fraction(DatumGetInt32(((Const *) value)->constvalue));
}

/* The selectivity of fp <@ ball, for a ball given as a constant or ROW(q, k). */
static Selectivity
ball_selectivity(PlannerInfo *root, List *args)
{
	Node	   *ball = estimate_expression_value(root, lsecond(args));

	if (IsA(ball, RowExpr))
		return radius_selectivity(root, lsecond(((RowExpr *) ball)->args));
	if (IsA(ball, Const))
	{
		bool		isnull;
		Datum		radius;

		if (((Const *) ball)->constisnull)
			return 0;
		radius = GetAttributeByNum(DatumGetHeapTupleHeader(((Const *) ball)->constvalue),
								   SIMHASH_BALL_RADIUS_ATTNUM, &isnull);
		return isnull ? 0 : ball_fraction(DatumGetInt32(radius));
	}
	return SIMHASH_UNKNOWN_RADIUS_SEL;
}

PG_FUNCTION_INFO_V1(simhash64_ball_restrict);
Datum
simhash64_ball_restrict(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(ball_selectivity((PlannerInfo *) PG_GETARG_POINTER(0),
									  (List *) PG_GETARG_POINTER(2)));
}

PG_FUNCTION_INFO_V1(simhash64_ball_joinsel);
Datum
simhash64_ball_joinsel(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(ball_selectivity((PlannerInfo *) PG_GETARG_POINTER(0),
									  (List *) PG_GETARG_POINTER(2)));
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
		req->selectivity = radius_selectivity(req->root, lthird(req->args));
		PG_RETURN_POINTER(req);
	}
	PG_RETURN_POINTER(NULL);
}
