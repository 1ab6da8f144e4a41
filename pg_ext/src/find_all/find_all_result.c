/*
 * find_all_result.c — the result of a set-returning function of find_all,
 * clusters or their Citus parts (find_all_result.h).  Layer: rows out,
 * beside the reading; it calls nothing of the extension.
 */
#include "find_all/find_all_result.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "find_all/find_all_row_buffer.h"

/*
 * Sets up materialize mode (InitMaterializedSRF from PostgreSQL 15 on,
 * spelled out for 13 and 14).
 */
void
simhash_result_init(FunctionCallInfo fcinfo, SimhashResultSink *sink)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("set-valued function called in context that cannot accept a set"));
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if (get_call_result_type(fcinfo, NULL, &sink->desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	sink->store = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0,
										false, work_mem);
	sink->count = 0;
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = sink->store;
	rsinfo->setDesc = sink->desc;
	MemoryContextSwitchTo(old);
}

/* A result row: the first desc->natts of (first, second, distance). */
void
simhash_result_put(SimhashResultSink *sink, int64 first, int64 second, int distance)
{
	Datum		values[3] = {Int64GetDatum(first), Int64GetDatum(second), Int32GetDatum(distance)};
	bool		nulls[3] = {false, false, false};

	tuplestore_putvalues(sink->store, sink->desc, values, nulls);
	sink->count++;
}

int64
simhash_result_value(const SimhashResultSink *sink, uint64 key)
{
	return sink->keys_are_ids ? SIMHASH_ID_OF_KEY(key) : (int64) key;
}
