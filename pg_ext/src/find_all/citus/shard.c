/*
 * shard.c — the SQL functions each shard's node runs for
 * simhash_find_all_distributed() and simhash_clusters_distributed()
 * (docs/citus.md): its rows as batches (simhash_partition_batches), the
 * empty results of a run (simhash_prepare_results), a shard's batches into
 * them (simhash_write_shard).  Layer: SQL entry points, the top of citus/.
 */
#include "simhash.h"

#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "find_all/citus/batches.h"
#include "find_all/citus/results.h"
#include "type/simhash64.h"

/*
 * simhash_partition_batches(sql, max_distance, rows, buckets): the query's
 * (id, fingerprint) rows as batches of entries, each row in the part of
 * each pass (TABLE(part integer, batch bytea)); rows is the number of rows
 * of the whole run, which sets the layout.  Value per call, so that the
 * batches stream on as they fill (a set-returning function in the select
 * list; in FROM they would first be stored whole).
 */
PG_FUNCTION_INFO_V1(simhash_partition_batches);
Datum
simhash_partition_batches(PG_FUNCTION_ARGS)
{
	FuncCallContext *call;
	SimhashScatter *scatter;
	int			part;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;

		call = SRF_FIRSTCALL_INIT();
		if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
			SRF_RETURN_DONE(call);
		old = MemoryContextSwitchTo(call->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		call->tuple_desc = BlessTupleDesc(desc);
		call->user_fctx = palloc(sizeof(SimhashScatter));
		simhash_scatter_init(call->user_fctx, PG_GETARG_TEXT_PP(0), simhash_type_oid(fcinfo),
							 PG_GETARG_INT32(1), PG_GETARG_INT64(2), PG_GETARG_INT32(3));
		MemoryContextSwitchTo(old);
	}
	call = SRF_PERCALL_SETUP();
	scatter = call->user_fctx;
	if (scatter != NULL && (part = simhash_scatter_next(scatter)) >= 0)
	{
		SimhashBatch *batch = &scatter->batches[part];
		bytea	   *data = (bytea *) (batch->buffer + SIMHASH_BATCH_PREFIX_BYTES - VARHDRSZ);
		Datum		values[2];
		bool		nulls[2] = {false, false};
		HeapTuple	tuple;

		SET_VARSIZE(data, VARHDRSZ + simhash_batch_bytes(batch));
		values[0] = Int32GetDatum(part);
		values[1] = PointerGetDatum(data);
		tuple = heap_form_tuple(call->tuple_desc, values, nulls);
		simhash_scatter_sent(scatter, part);
		SRF_RETURN_NEXT(call, HeapTupleGetDatum(tuple));
	}
	if (scatter != NULL)
		simhash_scatter_end(scatter);
	SRF_RETURN_DONE(call);
}

/*
 * simhash_prepare_results(prefixes, max_distance, buckets): empty results
 * <prefix>_<bucket> for every prefix and bucket, on this node, for the
 * shards of the relation here (simhash_write_shard() writes over those of
 * the shards with rows; the others stay empty, so that every result named
 * in the SQL exists).  The first through Citus, which creates the
 * directory; the others directly when they can be found there.
 */
PG_FUNCTION_INFO_V1(simhash_prepare_results);
Datum
simhash_prepare_results(PG_FUNCTION_ARGS)
{
	SimhashSearch passes;
	SimhashStripes none;
	Datum	   *prefixes;
	int			nprefixes;
	int			buckets;
	char	   *directory;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_VOID();
	simhash_require_citus("simhash_prepare_results");
	simhash_citus_passes(PG_GETARG_INT32(1), 0, &passes, &none, NULL, 0, NULL, NULL);
	buckets = PG_GETARG_INT32(2);
	simhash_check_buckets(buckets, passes.npasses);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT, &prefixes, NULL, &nprefixes);
	if (nprefixes == 0)
		PG_RETURN_VOID();
	for (int i = 0; i < nprefixes; i++)
		simhash_checked_result_id(TextDatumGetCString(prefixes[i]));
	simhash_citus_results(TextDatumGetCString(prefixes[0]), SIMHASH_NO_BATCHES, buckets, passes.npasses);
	directory = simhash_result_directory();
	if (!simhash_results_in(directory, TextDatumGetCString(prefixes[0])))
		directory = NULL;
	for (int i = 1; i < nprefixes; i++)
	{
		char	   *prefix = TextDatumGetCString(prefixes[i]);

		if (directory == NULL)
		{
			simhash_citus_results(prefix, SIMHASH_NO_BATCHES, buckets, passes.npasses);
			continue;
		}
		for (int bucket = 0; bucket < buckets; bucket++)
		{
			char	   *path = simhash_result_path(directory, prefix, bucket);

			simhash_result_close(simhash_result_open(path), path);
		}
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_VOID();
}

/* The shard whose rows simhash_write_shard() last sent, in one FmgrInfo (one query). */
typedef struct ShardWritten
{
	Oid			shard;
} ShardWritten;

/*
 * simhash_write_shard(shard, id_column, fingerprint_column, max_distance,
 * rows, buckets, prefix): the rows of a shard of the relation, as
 * simhash_partition_batches' batches, into the results
 * <prefix>_<shard id>_<bucket> (those simhash_prepare_results() made);
 * returns how many rows.  Called from a query over the relation (`SELECT
 * simhash_write_shard(tableoid, ...) FROM relation LIMIT 1`), which Citus
 * runs on every shard over the connection that has the transaction's
 * writes to it; again for the same shard in the same query (without a
 * LIMIT), it does nothing.  A partition's rows go with those of the whole
 * partitioned shard.
 */
PG_FUNCTION_INFO_V1(simhash_write_shard);
Datum
simhash_write_shard(PG_FUNCTION_ARGS)
{
	ShardWritten *written = fcinfo->flinfo->fn_extra;
	Oid			shard;
	char	   *name;
	const char *suffix;
	char	   *prefix;
	char	   *sql;
	char	   *directory;
	SimhashScatter scatter;
	MemoryContext work;
	MemoryContext old;
	int			k;
	int64		rows;
	int			buckets;
	int64		sent;

	for (int i = 0; i < 7; i++)
		if (PG_ARGISNULL(i))
			PG_RETURN_INT64(0);
	shard = PG_GETARG_OID(0);
	if (get_rel_relispartition(shard))
		shard = llast_oid(get_partition_ancestors(shard));
	if (written == NULL)
		fcinfo->flinfo->fn_extra = written = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ShardWritten));
	else if (written->shard == shard)
		PG_RETURN_INT64(0);
	simhash_require_citus("simhash_write_shard");
	written->shard = shard;
	k = PG_GETARG_INT32(3);
	rows = PG_GETARG_INT64(4);
	buckets = PG_GETARG_INT32(5);

	work = AllocSetContextCreate(CurrentMemoryContext, "simhash write shard", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	/* A shard is named <relation>_<shard id> (Citus's AppendShardIdToName()). */
	name = get_rel_name(shard);
	suffix = name == NULL ? NULL : strrchr(name, '_');
	if (suffix == NULL || suffix[1] == '\0' || strspn(suffix + 1, "0123456789") != strlen(suffix + 1))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash_write_shard: %s is not the shard of a distributed table",
					   name == NULL ? "the relation" : name));
	prefix = psprintf("%s%s", simhash_checked_result_id(text_to_cstring(PG_GETARG_TEXT_PP(6))), suffix);
	sql = psprintf("SELECT %s, %s FROM %s", quote_identifier(NameStr(*PG_GETARG_NAME(1))),
				   quote_identifier(NameStr(*PG_GETARG_NAME(2))),
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(shard)), name));
	directory = simhash_result_directory();
	if (buckets <= SIMHASH_DIRECT_FILES_MAX && simhash_results_in(directory, prefix))
	{
		simhash_scatter_init(&scatter, cstring_to_text(sql), simhash_type_oid(fcinfo), k, rows, buckets);
		sent = scatter.input.count;
		simhash_write_batches(&scatter, directory, prefix);
		simhash_scatter_end(&scatter);
	}
	else
	{
		SimhashSearch passes;
		SimhashStripes none;

		simhash_citus_passes(k, rows, &passes, &none, NULL, 0, NULL, NULL);
		simhash_check_buckets(buckets, passes.npasses);
		simhash_citus_results(prefix,
							  psprintf("SELECT (b).part, (b).batch FROM (SELECT %s.simhash_partition_batches(%s, %d, "
									   INT64_FORMAT ", %d) AS b) s",
									   quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))),
									   quote_literal_cstr(sql), k, rows, buckets),
							  buckets, passes.npasses);
		sent = -1;				/* not counted there */
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	PG_RETURN_INT64(sent);
}
