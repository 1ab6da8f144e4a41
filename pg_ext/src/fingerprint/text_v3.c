/*
 * text_v3.c — the text fingerprint version 3 of docs/fingerprint-spec.md §8
 * in SQL: simhash_v3(text), its tokens, and its features with their votes,
 * over the core's (core/text_v3.c).
 */
#include "fingerprint/fingerprint.h"

#include "find_all/find_all_result.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(simhash_text_v3);
Datum
simhash_text_v3(PG_FUNCTION_ARGS)
{
	return text_fingerprint_datum(fcinfo, text_v3_fingerprint);
}

PG_FUNCTION_INFO_V1(simhash_v3_tokens);
Datum
simhash_v3_tokens(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, text_v3_walk_tokens, 1);
}

/* A row (feature, votes) of simhash_v3_features. */
static void
put_weighted_feature(const char *data, size_t len, int64_t votes, void *arg)
{
	SimhashResultSink *sink = (SimhashResultSink *) arg;
	/* A feature is a slice of the text's normalisation: below MaxAllocSize, an int. */
	int			bytes = (int) len;
	/* Returns its input, not NUL-terminated, when no conversion is needed. */
	char	   *server = pg_any_to_server(data, bytes, PG_UTF8);
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = PointerGetDatum(server == data ? cstring_to_text_with_len(data, bytes)
								: cstring_to_text(server));
	/* At most the largest kind weight x V3_NUMBER_WEIGHT x V3_RAMP_STEPS. */
	values[1] = Int32GetDatum((int32) votes);
	tuplestore_putvalues(sink->store, sink->desc, values, nulls);
	pfree(DatumGetPointer(values[0]));
	if (server != data)
		pfree(server);
	sink->count++;
}

/* The features that vote, with their votes: rows in a tuplestore (spilled past work_mem). */
PG_FUNCTION_INFO_V1(simhash_v3_features);
Datum
simhash_v3_features(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;
	int			len;
	const char *data = text_arg_utf8(fcinfo, 0, &len);

	simhash_result_init(fcinfo, &sink);
	report_core_status(text_v3_walk_features(data, len, put_weighted_feature, &sink));
	return (Datum) 0;
}
