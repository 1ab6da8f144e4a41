/*
 * text_v2.c — the text fingerprint version 2 of docs/fingerprint-spec.md §6
 * in SQL: simhash_v2(text), its tokens and features, over the core's
 * (core/text_v2.c).
 */
#include "fingerprint/fingerprint.h"

PG_FUNCTION_INFO_V1(simhash_text_v2);
Datum
simhash_text_v2(PG_FUNCTION_ARGS)
{
	return text_fingerprint_datum(fcinfo, text_v2_fingerprint);
}

PG_FUNCTION_INFO_V1(simhash_v2_tokens);
Datum
simhash_v2_tokens(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, text_v2_walk_tokens, 1);
}

PG_FUNCTION_INFO_V1(simhash_v2_features);
Datum
simhash_v2_features(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, text_v2_walk_features, 1);
}
