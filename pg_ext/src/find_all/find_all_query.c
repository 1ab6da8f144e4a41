/*
 * find_all_query.c — the rows of a query, for find_all, clusters and their
 * Citus parts (find_all_query.h).  Layer: reading, above the heap read
 * (find_all_read.c), to which a plain read of a table is handed, and the
 * row buffer, which the rows go into.
 *
 * The query is prepared through SPI and its columns checked before it runs.
 * The rows are read by a DestReceiver of our own, straight from the
 * executor's slots (no copy of each tuple, as SPI's cursors make).  Each
 * row's key is its id (sign bit flipped, SIMHASH_KEY_OF_ID).
 */
#include "find_all/find_all_query.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"

#include "find_all/find_all_read.h"
#include "find_all/progress.h"

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


/* The DestReceiver that adds each row the query returns to the rows. */
typedef struct RowReceiver
{
	DestReceiver pub;
	SimhashRows *rows;
	Oid			second_type;	/* as simhash_read_query's */
	Oid			id_type;
	Oid			second_id_type; /* InvalidOid: the second column is a fingerprint */
} RowReceiver;

static void
receiver_startup(DestReceiver *self, int operation, TupleDesc desc)
{
	RowReceiver *receiver = (RowReceiver *) self;

	/* Checked before the query ran (simhash_read_query); the plan may have been replanned since. */
	check_query_columns(desc, receiver->second_type, receiver->rows->caller);
	receiver->id_type = getBaseType(TupleDescAttr(desc, 0)->atttypid);
	receiver->second_id_type = OidIsValid(receiver->second_type) ? InvalidOid :
		getBaseType(TupleDescAttr(desc, 1)->atttypid);
}

static bool
receiver_receive(TupleTableSlot *slot, DestReceiver *self)
{
	RowReceiver *receiver = (RowReceiver *) self;
	SimhashRows *rows = receiver->rows;

	slot_getsomeattrs(slot, 2);
	if (slot->tts_isnull[0] || (slot->tts_isnull[1] && OidIsValid(receiver->second_id_type)))
		simhash_null_id_error(rows->caller);
	/* No fingerprint, nothing to match: the row is skipped. */
	if (slot->tts_isnull[1])
		return true;
	simhash_rows_add(rows, SIMHASH_KEY_OF_ID(simhash_id_datum(slot->tts_values[0], receiver->id_type)),
					 OidIsValid(receiver->second_id_type) ?
					 (uint64) simhash_id_datum(slot->tts_values[1], receiver->second_id_type) :
					 DatumGetSimhash64(slot->tts_values[1]));
	if (rows->count % SIMHASH_ROWS_CHUNK == 0)
		simhash_progress_at(SIMHASH_STAGE_READ, rows->count, 0);
	return true;
}

static void
receiver_nothing(DestReceiver *self)
{
}

/* With direct, a plain read of a table reads its heap (find_all_read.c), with up to `workers`. */
static void
read_query(text *sql, Oid second_type, bool direct, int workers, SimhashRows *rows)
{
	char	   *query = text_to_cstring(sql);
	SPIPlanPtr	plan;
	RowReceiver receiver = {
		.pub = {
			.receiveSlot = receiver_receive,
			.rStartup = receiver_startup,
			.rShutdown = receiver_nothing,
			.rDestroy = receiver_nothing,
			.mydest = DestNone,
		},
		.rows = rows,
		.second_type = second_type,
	};
	SPIExecuteOptions options = {.dest = &receiver.pub};
	CachedPlanSource *source;
	int			result;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/*
	 * No parallel plan (CURSOR_OPT_PARALLEL_OK): a Gather of the table's
	 * rows measured slower than the backend reading them itself (10M rows:
	 * 0.49 s against 0.31 s), as every row still passes through it.
	 */
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s: the query must be one statement that returns rows, such as a SELECT",
					   rows->caller));
	/* Wrong columns are the caller's mistake, not the query's: no SQL statement context. */
	source = linitial(SPI_plan_get_plan_sources(plan));
	check_query_columns(source->resultDesc, second_type, rows->caller);
	if (!direct || !simhash_read_table(source, workers, rows))
	{
		result = SPI_execute_plan_extended(plan, &options);
		if (result < 0)
			elog(ERROR, "SPI_execute_plan_extended failed: %s", SPI_result_code_string(result));
	}
	SPI_finish();
}

void
simhash_read_query(text *sql, Oid second_type, SimhashRows *rows)
{
	read_query(sql, second_type, false, 0, rows);
}

void
simhash_read_query_rows(text *sql, Oid fingerprint_type, int workers, SimhashRows *rows)
{
	read_query(sql, fingerprint_type, true, workers, rows);
}
