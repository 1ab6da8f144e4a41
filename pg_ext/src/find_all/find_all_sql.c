/*
 * find_all_sql.c — simhash_find_all() and simhash_clusters() as SQL
 * functions: reading the rows (from a query run through SPI, or from an
 * array), choosing the blocks, and returning the result in a tuplestore,
 * which spills to disk past work_mem.
 *
 * The query variants order the rows by id and the array variants order the
 * distinct fingerprints; either way row order is output order, so a pair
 * (row1 < row2) comes out as (smaller, larger) with no further work.
 */
#include "simhash.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "find_all/clusters.h"
#include "find_all/find_all.h"
#include "find_all/find_all_row_buffer.h"
#include "find_all/find_all_sql.h"

/* Rows fetched from the query at a time. */
#define FETCH_ROWS 10000

typedef enum FindAllInput
{
	FROM_QUERY,					/* rows (id, fingerprint) from SQL text */
	FROM_ARRAY					/* a simhash64[]: distinct fingerprints */
} FindAllInput;

typedef enum FindAllOutput
{
	PAIRS,						/* (id1, id2, distance) */
	CLUSTERS					/* (id, cluster_id) */
} FindAllOutput;

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
}

static void
put_pair(void *arg, uint32 row1, uint32 row2, int distance)
{
	SimhashResultSink *sink = arg;

	simhash_result_put(sink, sink->keys[row1], sink->keys[row2], distance);
}

Oid
simhash_type_oid(FunctionCallInfo fcinfo)
{
	Oid			type = simhash_extension_type(fcinfo->flinfo->fn_oid, "simhash64");

	/* Its owner can rename it: a user error, not an internal one. */
	if (!OidIsValid(type))
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("type simhash64 not found in schema %s, where the simhash extension is",
					   get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))));
	return type;
}

static bool
is_integer_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* second_type: simhash64's oid, or InvalidOid for a second integer id. */
static void
check_query_columns(TupleDesc desc, Oid second_type, const char *caller)
{
	Oid			id_type;
	Oid			hash_type;

	if (desc->natts != 2)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				OidIsValid(second_type) ?
				errmsg("%s: the query must return 2 columns, an integer id and a simhash64 fingerprint, but it returns %d",
					   caller, desc->natts) :
				errmsg("%s: the query must return 2 columns, two integer ids, but it returns %d",
					   caller, desc->natts));
	id_type = getBaseType(TupleDescAttr(desc, 0)->atttypid);
	hash_type = getBaseType(TupleDescAttr(desc, 1)->atttypid);
	if (!is_integer_type(id_type))
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("%s: the query's first column must be an id of type smallint, integer or bigint, not %s",
					   caller, format_type_be(TupleDescAttr(desc, 0)->atttypid)));
	if (!OidIsValid(second_type) && !is_integer_type(hash_type))
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("%s: the query's second column must be an id of type smallint, integer or bigint, not %s",
					   caller, format_type_be(TupleDescAttr(desc, 1)->atttypid)));
	if (OidIsValid(second_type) && hash_type != second_type)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("%s: the query's second column must be a simhash64 fingerprint, not %s",
					   caller, format_type_be(TupleDescAttr(desc, 1)->atttypid)),
				errhint("Cast it: SELECT id, fingerprint::simhash64 ..."));
}

static int64
id_datum(Datum value, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

/*
 * Adds the rows of one batch fetched from the query: (id, fingerprint), or
 * (id, id) when second_id_type is the second id's type (it goes into hashes[]).
 */
static void
add_fetched_rows(SimhashRows *rows, Oid id_type, Oid second_id_type)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		id_null;
		bool		hash_null;
		Datum		id = SPI_getbinval(tuple, desc, 1, &id_null);
		Datum		hash = SPI_getbinval(tuple, desc, 2, &hash_null);

		if (id_null || (hash_null && OidIsValid(second_id_type)))
			ereport(ERROR,
					errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("%s: the query returned a NULL id", rows->caller));
		/* No fingerprint, nothing to match: the row is skipped. */
		if (hash_null)
			continue;
		if (OidIsValid(second_id_type))
			simhash_rows_add(rows, id_datum(id, id_type), (uint64) id_datum(hash, second_id_type));
		else
			simhash_rows_add(rows, id_datum(id, id_type), DatumGetSimhash64(hash));
	}
}

void
simhash_read_query(text *sql, Oid second_type, SimhashRows *rows)
{
	char	   *query = text_to_cstring(sql);
	SPIPlanPtr	plan;
	Portal		portal;
	Oid			id_type;
	Oid			second_id_type = InvalidOid;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s: the query must be one statement that returns rows, such as a SELECT",
					   rows->caller));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);
	check_query_columns(portal->tupDesc, second_type, rows->caller);
	id_type = getBaseType(TupleDescAttr(portal->tupDesc, 0)->atttypid);
	if (!OidIsValid(second_type))
		second_id_type = getBaseType(TupleDescAttr(portal->tupDesc, 1)->atttypid);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		add_fetched_rows(rows, id_type, second_id_type);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
}

static void
read_array(ArrayType *array, SimhashRows *rows)
{
	ArrayIterator iterator = array_create_iterator(array, 0, NULL);
	Datum		value;
	bool		isnull;

	while (array_iterate(iterator, &value, &isnull))
		if (!isnull)
			simhash_rows_add(rows, 0, DatumGetSimhash64(value));
	array_free_iterator(iterator);
}

static void
put_clusters(SimhashResultSink *sink, const SimhashRows *rows, int k, int blocks,
			 bool include_singletons)
{
	SimhashClusters clusters;

	simhash_find_clusters(rows->hashes, rows->count, k, blocks, &clusters);
	for (uint32 i = 0; i < rows->count; i++)
	{
		if (include_singletons || clusters.has_pair[i])
			simhash_result_put(sink, sink->keys[i], sink->keys[clusters.leader[i]], 0);
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
	}
}

/*
 * The body of all four functions.  Like a STRICT function a NULL argument
 * gives no rows, except blocks, where NULL asks for the fastest choice.
 */
/* The arguments of simhash_find_all and simhash_clusters, by position. */
#define ARG_INPUT 0				/* SQL text or simhash64[] */
#define ARG_MAX_DISTANCE 1
#define ARG_BLOCKS 2			/* NULL: the function chooses */
#define ARG_INCLUDE_SINGLETONS 3	/* simhash_clusters only */

static Datum
run_find_all(FunctionCallInfo fcinfo, const char *caller, FindAllInput input, FindAllOutput output)
{
	int			nargs = output == CLUSTERS ? ARG_INCLUDE_SINGLETONS + 1 : ARG_BLOCKS + 1;
	SimhashResultSink	sink;
	SimhashRows rows;
	MemoryContext work;
	MemoryContext old;
	int			k;
	int			blocks;

	simhash_result_init(fcinfo, &sink);
	for (int i = 0; i < nargs; i++)
		if (i != ARG_BLOCKS && PG_ARGISNULL(i))
			return (Datum) 0;
	k = PG_GETARG_INT32(ARG_MAX_DISTANCE);
	if (PG_ARGISNULL(ARG_BLOCKS))
		simhash_check_distance(k);
	else
		simhash_check_blocks(k, PG_GETARG_INT32(ARG_BLOCKS));

	/* The big arrays go as soon as the result is out. */
	work = AllocSetContextCreate(CurrentMemoryContext, "simhash find_all", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	simhash_rows_init(&rows, caller, input == FROM_QUERY,
					  output == CLUSTERS ? SIMHASH_CLUSTERS_BYTES_PER_ROW : 0);
	if (input == FROM_QUERY)
	{
		simhash_read_query(PG_GETARG_TEXT_PP(ARG_INPUT), simhash_type_oid(fcinfo), &rows);
		simhash_rows_sort_by_id(&rows);
		sink.keys = rows.ids;
	}
	else
	{
		read_array(PG_GETARG_ARRAYTYPE_P(ARG_INPUT), &rows);
		simhash_rows_sort_unique(&rows);
		sink.keys = (const int64 *) rows.hashes;
	}
	blocks = PG_ARGISNULL(ARG_BLOCKS) ? simhash_choose_blocks(k, rows.count) : PG_GETARG_INT32(ARG_BLOCKS);

	if (output == CLUSTERS)
		put_clusters(&sink, &rows, k, blocks, PG_GETARG_BOOL(ARG_INCLUDE_SINGLETONS));
	else
		simhash_find_pairs(rows.hashes, rows.count, k, blocks, put_pair, &sink);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_find_all_query);
Datum
simhash_find_all_query(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_find_all", FROM_QUERY, PAIRS);
}

PG_FUNCTION_INFO_V1(simhash_find_all_array);
Datum
simhash_find_all_array(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_find_all", FROM_ARRAY, PAIRS);
}

PG_FUNCTION_INFO_V1(simhash_clusters_query);
Datum
simhash_clusters_query(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_clusters", FROM_QUERY, CLUSTERS);
}

PG_FUNCTION_INFO_V1(simhash_clusters_array);
Datum
simhash_clusters_array(PG_FUNCTION_ARGS)
{
	return run_find_all(fcinfo, "simhash_clusters", FROM_ARRAY, CLUSTERS);
}
