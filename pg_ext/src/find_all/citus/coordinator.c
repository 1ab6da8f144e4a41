/*
 * coordinator.c — the SQL functions the coordinator runs for
 * simhash_find_all_distributed() and simhash_clusters_distributed()
 * (docs/citus.md): the distributed find_all itself, the buckets' packed
 * pairs unpacked (simhash_unpack_pairs), and the connected components of
 * the edges the buckets found (simhash_components).  Layer: SQL entry
 * points, the top of citus/.
 */
#include "simhash.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "blocks/radix_sort.h"
#include "find_all/citus/batches.h"
#include "find_all/citus/results.h"
#include "find_all/clusters.h"
#include "find_all/find_all_query.h"

/* simhash_unpack_pairs(batch): the (id1, id2, distance) rows of a batch of pairs. */
PG_FUNCTION_INFO_V1(simhash_unpack_pairs);
Datum
simhash_unpack_pairs(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;

	simhash_result_init(fcinfo, &sink);
	if (!PG_ARGISNULL(0))
		simhash_pairs_unpack(PG_GETARG_BYTEA_PP(0), &sink);
	return (Datum) 0;
}

/* A relation's name as regclass prints it: quoted, qualified where the search path needs it. */
static char *
regclass_name(Oid relation)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relation)));
}

/*
 * The DestReceiver of the coordinator's last query: each row into the
 * function's result, as a row (unpacking false) or as the pairs of a batch
 * in its first column.
 */
typedef struct ResultReceiver
{
	DestReceiver pub;
	SimhashResultSink *sink;
	bool		unpacking;
} ResultReceiver;

static bool
result_receiver_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ResultReceiver *receiver = (ResultReceiver *) self;

	if (!receiver->unpacking)
	{
		tuplestore_puttupleslot(receiver->sink->store, slot);
		return true;
	}
	slot_getsomeattrs(slot, 1);
	if (!slot->tts_isnull[0])
	{
		bytea	   *batch = DatumGetByteaPP(slot->tts_values[0]);

		simhash_pairs_unpack(batch, receiver->sink);
		if ((Pointer) batch != DatumGetPointer(slot->tts_values[0]))
			pfree(batch);
	}
	return true;
}

static void
result_receiver_startup(DestReceiver *self, int operation, TupleDesc desc)
{
}

/* Runs query (its $1.. args) through SPI, its rows into the sink. */
static void
run_into_result(const char *query, int nargs, Oid *argtypes, Datum *args, SimhashResultSink *sink,
				bool unpacking)
{
	ResultReceiver receiver = {
		.pub = {.receiveSlot = result_receiver_receive, .rStartup = result_receiver_startup},
		.sink = sink,
		.unpacking = unpacking,
	};

	simhash_citus_run_query(query, nargs, argtypes, args, &receiver.pub);
}

/*
 * simhash_find_all_distributed(relation, id_column, fingerprint_column,
 * max_distance): simhash_partition_rows() sends the rows to the buckets (or
 * says Citus does not shard the relation: simhash_find_all then runs here),
 * each bucket's pairs come back packed and go into the result unpacked,
 * with no table of rows between them, and the work table is dropped.
 */
PG_FUNCTION_INFO_V1(simhash_find_all_distributed);
Datum
simhash_find_all_distributed(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;
	const char *schema;
	Oid			argtypes[5] = {REGCLASSOID, NAMEOID, NAMEOID, INT4OID, TEXTOID};
	Datum		args[5];
	Datum		work;
	bool		isnull;

	simhash_result_init(fcinfo, &sink);
	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			return (Datum) 0;
	schema = quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
	for (int i = 0; i < 4; i++)
		args[i] = PG_GETARG_DATUM(i);
	args[4] = CStringGetTextDatum("simhash_find_all_distributed");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(psprintf("SELECT %s.simhash_partition_rows($1, $2, $3, $4, $5)", schema),
							  5, argtypes, args, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "simhash: simhash_partition_rows failed");
	work = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
	{
		/* Not sharded (or no rows): simhash_find_all here, on the rows as Citus gives them. */
		Oid			query_types[2] = {TEXTOID, INT4OID};
		Datum		query_args[2];

		query_args[0] = CStringGetTextDatum(psprintf("SELECT %s, %s FROM %s",
													 quote_identifier(NameStr(*PG_GETARG_NAME(1))),
													 quote_identifier(NameStr(*PG_GETARG_NAME(2))),
													 regclass_name(PG_GETARG_OID(0))));
		query_args[1] = PG_GETARG_DATUM(3);
		run_into_result(psprintf("SELECT * FROM %s.simhash_find_all($1, $2)", schema), 2, query_types,
						query_args, &sink, false);
	}
	else
	{
		char	   *table = regclass_name(DatumGetObjectId(work));

		run_into_result(psprintf("SELECT (%s.simhash_find_all_batches(batches, %d, rows, results)).batch"
								 " FROM %s WHERE batches IS NOT NULL", schema, PG_GETARG_INT32(3), table),
						0, NULL, NULL, &sink, true);
		if (SPI_execute(psprintf("DROP TABLE %s", table), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "simhash: could not drop %s", table);
	}
	SPI_finish();
	return (Datum) 0;
}

/* The index of id among the sorted, distinct nodes[0..n). */
static uint32
node_index(const int64 *nodes, uint32 n, int64 id)
{
	uint32		low = 0;
	uint32		high = n;

	while (low < high)
	{
		uint32		mid = low + (high - low) / 2;

		if (nodes[mid] < id)
			low = mid + 1;
		else
			high = mid;
	}
	return low;
}

/*
 * Every id of the edges (entries: the first id's key, the second id in the
 * hash), once each, in increasing order; returns how many.
 */
static uint32
distinct_nodes(const SimhashEntry *edges, uint32 nedges, int64 *nodes)
{
	uint64	   *keys = (uint64 *) nodes;
	uint32		n = 0;

	/* Keys of ids: unsigned order is the ids' order. */
	for (uint32 i = 0; i < nedges; i++)
	{
		keys[2 * i] = edges[i].key;
		keys[2 * i + 1] = SIMHASH_KEY_OF_ID(edges[i].hash);
	}
	simhash_radix_sort(keys, NULL, 2 * nedges);
	for (uint32 i = 0; i < 2 * nedges; i++)
		if (n == 0 || keys[n - 1] != keys[i])
			keys[n++] = keys[i];
	for (uint32 i = 0; i < n; i++)
		nodes[i] = SIMHASH_ID_OF_KEY(keys[i]);
	return n;
}

/*
 * simhash_components(sql): the connected components of the graph whose edges
 * are the query's (id, id) rows (a row (id, id) puts a lone id in): every id
 * with the smallest id of its component.
 */
PG_FUNCTION_INFO_V1(simhash_components);
Datum
simhash_components(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;
	SimhashRows rows;
	SimhashEntry *edges;
	uint32		nedges;
	MemoryContext work;
	MemoryContext old;
	int64	   *nodes;
	uint32	   *parent;
	uint32		n;

	simhash_result_init(fcinfo, &sink);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	work = AllocSetContextCreate(CurrentMemoryContext, "simhash components", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	/*
	 * Per edge, beyond the edge itself: its two nodes, their parents and the
	 * radix sort's buffer (40 bytes).
	 */
	simhash_rows_init(&rows, "simhash_clusters_distributed",
					  2 * (sizeof(int64) + sizeof(uint64) + sizeof(uint32)), false);
	simhash_read_query(PG_GETARG_TEXT_PP(0), InvalidOid, &rows);
	if (rows.count > PG_UINT32_MAX / 2)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s: more than %u edges", rows.caller, PG_UINT32_MAX / 2));
	nedges = (uint32) rows.count;
	edges = simhash_rows_to_array(&rows);
	nodes = MemoryContextAllocHuge(work, sizeof(int64) * 2 * (Size) Max(nedges, 1));
	n = distinct_nodes(edges, nedges, nodes);
	parent = MemoryContextAllocHuge(work, sizeof(uint32) * (Size) Max(n, 1));
	for (uint32 i = 0; i < n; i++)
		parent[i] = i;
	for (uint32 i = 0; i < nedges; i++)
	{
		simhash_union(parent, node_index(nodes, n, SIMHASH_ID_OF_KEY(edges[i].key)),
					  node_index(nodes, n, (int64) edges[i].hash));
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
	}
	simhash_resolve_roots(parent, n);
	for (uint32 i = 0; i < n; i++)
		simhash_result_put(&sink, nodes[i], nodes[parent[i]], 0);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}
