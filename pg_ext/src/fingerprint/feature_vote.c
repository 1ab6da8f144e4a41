/*
 * feature_vote.c — fingerprints of feature hashes the caller already has:
 * simhash(bigint[]), simhash(bigint[], float8[]) and the aggregates
 * simhash_agg(bigint) and simhash_agg(bigint, float8), which support parallel
 * aggregation through combine / serialize / deserialize functions.
 */
#include "fingerprint/fingerprint.h"

#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/array.h"

/* Returns the elements of a bigint[] or float8[] argument; NULLs are an error. */
static const void *
array_elements(ArrayType *array, Oid elemtype, const char *argname, int *count)
{
	if (ARR_ELEMTYPE(array) != elemtype)
		elog(ERROR, "%s: unexpected array element type %u", argname, ARR_ELEMTYPE(array));
	if (array_contains_nulls(array))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not contain NULL elements", argname));
	*count = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	return ARR_DATA_PTR(array);
}

static void
check_weight(double weight)
{
	if (!weight_is_valid(weight))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash weight must be finite, got %g", weight));
}

PG_FUNCTION_INFO_V1(simhash_from_hashes);
Datum
simhash_from_hashes(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	int			n;
	const uint64 *hashes = array_elements(array, INT8OID, "feature hashes", &n);

	PG_RETURN_SIMHASH64(hashes_fingerprint(hashes, n));
}

PG_FUNCTION_INFO_V1(simhash_from_weighted_hashes);
Datum
simhash_from_weighted_hashes(PG_FUNCTION_ARGS)
{
	ArrayType  *hash_array = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *weight_array = PG_GETARG_ARRAYTYPE_P(1);
	int			nhashes,
				nweights;
	const uint64 *hashes = array_elements(hash_array, INT8OID, "feature hashes", &nhashes);
	const float8 *weights = array_elements(weight_array, FLOAT8OID, "weights", &nweights);
	simhash64	result;

	if (nhashes != nweights)
		ereport(ERROR,
				errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("got %d feature hashes but %d weights", nhashes, nweights),
				errdetail("Every feature hash needs exactly one weight."));
	for (int i = 0; i < nweights; i++)
		check_weight(weights[i]);
	report_core_status(weighted_hashes_fingerprint(hashes, weights, nhashes, &result));
	PG_RETURN_SIMHASH64(result);
}

/* ---------- aggregates ---------- */


static MemoryContext
aggregate_context(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext context;

	if (!AggCheckCallContext(fcinfo, &context))
		elog(ERROR, "%s called in non-aggregate context", fname);
	return context;
}

/* A fresh zeroed state of the given size, living as long as the aggregate. */
static void *
new_state(FunctionCallInfo fcinfo, const char *fname, Size size)
{
	return MemoryContextAllocZero(aggregate_context(fcinfo, fname), size);
}

PG_FUNCTION_INFO_V1(simhash_agg_transfn);
Datum
simhash_agg_transfn(PG_FUNCTION_ARGS)
{
	SimhashVote *state = PG_ARGISNULL(0) ? NULL : (SimhashVote *) PG_GETARG_POINTER(0);

	if (state == NULL)
		state = new_state(fcinfo, "simhash_agg_transfn", sizeof(SimhashVote));
	if (!PG_ARGISNULL(1))
	{
		uint64		hash = (uint64) PG_GETARG_INT64(1);

		vote_add_hashes(state, &hash, 1);
	}
	PG_RETURN_POINTER(state);
}

PG_FUNCTION_INFO_V1(simhash_agg_combinefn);
Datum
simhash_agg_combinefn(PG_FUNCTION_ARGS)
{
	SimhashVote *into = PG_ARGISNULL(0) ? NULL : (SimhashVote *) PG_GETARG_POINTER(0);

	if (into == NULL)
		into = new_state(fcinfo, "simhash_agg_combinefn", sizeof(SimhashVote));
	if (!PG_ARGISNULL(1))
		vote_merge(into, (SimhashVote *) PG_GETARG_POINTER(1));
	PG_RETURN_POINTER(into);
}

PG_FUNCTION_INFO_V1(simhash_agg_serialfn);
Datum
simhash_agg_serialfn(PG_FUNCTION_ARGS)
{
	SimhashVote *state = (SimhashVote *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, state->nvotes);
	for (int i = 0; i < SIMHASH64_BITS; i++)
		pq_sendint64(&buf, state->count[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Reads a serialized state; shared by both aggregates' deserialize functions. */
static StringInfoData
serialized_state(FunctionCallInfo fcinfo)
{
	bytea	   *serialized = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, VARDATA_ANY(serialized), VARSIZE_ANY_EXHDR(serialized));
	return buf;
}

PG_FUNCTION_INFO_V1(simhash_agg_deserialfn);
Datum
simhash_agg_deserialfn(PG_FUNCTION_ARGS)
{
	StringInfoData buf = serialized_state(fcinfo);
	SimhashVote *state = new_state(fcinfo, "simhash_agg_deserialfn", sizeof(SimhashVote));

	state->nvotes = pq_getmsgint64(&buf);
	for (int i = 0; i < SIMHASH64_BITS; i++)
		state->count[i] = pq_getmsgint64(&buf);
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

PG_FUNCTION_INFO_V1(simhash_agg_finalfn);
Datum
simhash_agg_finalfn(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH64(vote_result((SimhashVote *) PG_GETARG_POINTER(0)));
}

PG_FUNCTION_INFO_V1(simhash_wagg_transfn);
Datum
simhash_wagg_transfn(PG_FUNCTION_ARGS)
{
	SimhashWeightedVote *state =
		PG_ARGISNULL(0) ? NULL : (SimhashWeightedVote *) PG_GETARG_POINTER(0);

	if (state == NULL)
		state = new_state(fcinfo, "simhash_wagg_transfn", sizeof(SimhashWeightedVote));
	if (!PG_ARGISNULL(1) && !PG_ARGISNULL(2))
	{
		double		weight = PG_GETARG_FLOAT8(2);

		check_weight(weight);
		weighted_vote_add(state, (uint64) PG_GETARG_INT64(1), weight);
	}
	PG_RETURN_POINTER(state);
}

PG_FUNCTION_INFO_V1(simhash_wagg_combinefn);
Datum
simhash_wagg_combinefn(PG_FUNCTION_ARGS)
{
	SimhashWeightedVote *into =
		PG_ARGISNULL(0) ? NULL : (SimhashWeightedVote *) PG_GETARG_POINTER(0);

	if (into == NULL)
		into = new_state(fcinfo, "simhash_wagg_combinefn", sizeof(SimhashWeightedVote));
	if (!PG_ARGISNULL(1))
		weighted_vote_merge(into, (SimhashWeightedVote *) PG_GETARG_POINTER(1));
	PG_RETURN_POINTER(into);
}

PG_FUNCTION_INFO_V1(simhash_wagg_serialfn);
Datum
simhash_wagg_serialfn(PG_FUNCTION_ARGS)
{
	SimhashWeightedVote *state = (SimhashWeightedVote *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	for (int i = 0; i < SIMHASH64_BITS; i++)
	{
		pq_sendfloat8(&buf, state->sum_set[i]);
		pq_sendfloat8(&buf, state->sum_clear[i]);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

PG_FUNCTION_INFO_V1(simhash_wagg_deserialfn);
Datum
simhash_wagg_deserialfn(PG_FUNCTION_ARGS)
{
	StringInfoData buf = serialized_state(fcinfo);
	SimhashWeightedVote *state =
		new_state(fcinfo, "simhash_wagg_deserialfn", sizeof(SimhashWeightedVote));

	for (int i = 0; i < SIMHASH64_BITS; i++)
	{
		state->sum_set[i] = pq_getmsgfloat8(&buf);
		state->sum_clear[i] = pq_getmsgfloat8(&buf);
	}
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

PG_FUNCTION_INFO_V1(simhash_wagg_finalfn);
Datum
simhash_wagg_finalfn(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH64(weighted_vote_result((SimhashWeightedVote *) PG_GETARG_POINTER(0)));
}
