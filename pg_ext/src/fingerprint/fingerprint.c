/*
 * fingerprint.c — the text fingerprint of docs/fingerprint-spec.md §3:
 * tokenize, shingle, hash each shingle with XXH3-64, vote.
 *
 * One pass over the UTF-8 bytes writes the normalized text: the lowercased
 * tokens joined by single spaces.  A shingle of s tokens is then a contiguous
 * slice of that buffer, from the start of its first token to the end of its
 * last, so shingles are hashed in place and never copied.
 */
#include "fingerprint/fingerprint.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* token_byte[c]: c belongs to a token; lowered[c]: c with ASCII A-Z lowercased. */
static bool token_byte[256];
static unsigned char lowered[256];

/* Fills the byte tables above; module.c's _PG_init calls it. */
void
simhash_fingerprint_init(void)
{
	for (int c = 0; c < 256; c++)
	{
		token_byte[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			(c >= 'A' && c <= 'Z') || c >= 0x80;
		lowered[c] = (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
	}
}

static void
check_shingle_size(int32 shingle_size)
{
	if (shingle_size < 1)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("shingle_size must be at least 1, got %d", shingle_size));
}

const char *
text_arg_utf8(FunctionCallInfo fcinfo, int argno, int *len)
{
	text	   *t = PG_GETARG_TEXT_PP(argno);
	const char *data = VARDATA_ANY(t);

	*len = VARSIZE_ANY_EXHDR(t);
	if (GetDatabaseEncoding() == PG_UTF8)
		return data;
	{
		/* Returns its input, not NUL-terminated, when no conversion is needed. */
		const char *converted = pg_server_to_any(data, *len, PG_UTF8);

		if (converted != data)
			*len = strlen(converted);
		return converted;
	}
}

/*
 * The start offsets in norm of the last RECENT_TOKENS tokens.  A shingle of
 * up to that many tokens looks its first token up here; a longer one (rare,
 * and hashing it costs far more) walks its start past one token per step.
 */
#define RECENT_TOKENS 256		/* a power of two */

/*
 * Calls emit for every feature of the text, in order.  Inlined into each
 * caller, so the hot path pays no indirect call.
 */
static inline void
for_each_feature(const char *text, int len, int32 shingle_size,
				 FeatureCallback emit, void *arg)
{
	const unsigned char *in = (const unsigned char *) text;
	char	   *norm = palloc(len + 1);
	int			recent[RECENT_TOKENS];
	int64		ntokens = 0;
	int			first = 0;		/* where the current shingle starts in norm */
	int			pos = 0;
	int			i = 0;

	for (;;)
	{
		while (i < len && !token_byte[in[i]])
			i++;
		if (i == len)
			break;
		if (ntokens > 0)
			norm[pos++] = ' ';
		recent[ntokens % RECENT_TOKENS] = pos;
		while (i < len && token_byte[in[i]])
			norm[pos++] = lowered[in[i++]];

		ntokens++;
		if (ntokens >= shingle_size)
		{
			if (shingle_size <= RECENT_TOKENS)
				first = recent[(ntokens - shingle_size) % RECENT_TOKENS];
			else if (ntokens > shingle_size)
			{
				/* Drop the shingle's first token. */
				while (norm[first] != ' ')
					first++;
				first++;
			}
			emit(norm + first, pos - first, arg);
		}
		/* A big shingle_size makes the features quadratic in len: stay cancellable. */
		CHECK_FOR_INTERRUPTS();
	}
	if (ntokens > 0 && ntokens < shingle_size)
		emit(norm, pos, arg);

	pfree(norm);
}

/* ---------- simhash(text, shingle_size) ---------- */

PG_FUNCTION_INFO_V1(simhash_text);
Datum
simhash_text(PG_FUNCTION_ARGS)
{
	int32		shingle_size = PG_GETARG_INT32(1);
	int			len;
	const char *data;
	HashBatch	batch;

	check_shingle_size(shingle_size);
	data = text_arg_utf8(fcinfo, 0, &len);
	hash_batch_init(&batch);
	for_each_feature(data, len, shingle_size, batch_feature, &batch);
	PG_RETURN_SIMHASH64(hash_batch_result(&batch));
}

/* ---------- the steps, exposed: tokens, shingles, feature hash ---------- */

static void
collect_feature(const char *data, Size len, void *arg)
{
	ArrayBuildState **result = (ArrayBuildState **) arg;
	/* check_features_fit keeps every feature below MaxAllocSize: an int. */
	int			bytes = (int) len;
	/* Returns its input, not NUL-terminated, when no conversion is needed. */
	char	   *server = pg_any_to_server(data, bytes, PG_UTF8);
	text	   *feature = server == data ? cstring_to_text_with_len(data, bytes)
		: cstring_to_text(server);

	*result = accumArrayResult(*result, PointerGetDatum(feature),
							   false, TEXTOID, CurrentMemoryContext);
}

/* What a feature costs the result: its text in the array, and a Datum while it is built. */
static void
count_feature_bytes(const char *data, Size len, void *arg)
{
	*(Size *) arg += sizeof(Datum) + INTALIGN(VARHDRSZ + len);
}

/*
 * A big shingle_size makes the features quadratic in the text (n shingles of
 * n tokens): measure them first, so a result no array can hold fails at once
 * instead of after gigabytes of allocation.  At 16 bytes or more a feature,
 * this also keeps the builder's Datum array under MaxAllocSize.  The count is
 * in UTF-8; where the server encoding is longer, construct_md_array's own
 * size check still stops the result.
 */
static void
check_features_fit(const char *data, int len, FeatureWalk walk, int32 shingle_size)
{
	Size		bytes = 0;

	walk(data, len, shingle_size, count_feature_bytes, &bytes);
	if (bytes > MaxAllocSize)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("the features of this text with shingle_size %d are too big for an array",
					   shingle_size),
				errdetail("They need %zu bytes; an array holds at most %zu.",
						  bytes, (Size) MaxAllocSize),
				errhint("Use a smaller shingle_size, or simhash() to fingerprint the text."));
}

Datum
features_array(FunctionCallInfo fcinfo, FeatureWalk walk, int32 shingle_size)
{
	ArrayBuildState *result = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	int			len;
	const char *data;

	check_shingle_size(shingle_size);
	data = text_arg_utf8(fcinfo, 0, &len);
	check_features_fit(data, len, walk, shingle_size);
	walk(data, len, shingle_size, collect_feature, &result);
	PG_RETURN_DATUM(makeArrayResult(result, CurrentMemoryContext));
}

/* for_each_feature as a FeatureWalk, for the arrays of version 1. */
static void
walk_features(const char *text, int len, int32 shingle_size, FeatureCallback emit, void *arg)
{
	for_each_feature(text, len, shingle_size, emit, arg);
}

/* Tokens are exactly the features of shingle size 1. */
PG_FUNCTION_INFO_V1(simhash_tokens);
Datum
simhash_tokens(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, walk_features, 1);
}

PG_FUNCTION_INFO_V1(simhash_shingles);
Datum
simhash_shingles(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, walk_features, PG_GETARG_INT32(1));
}

PG_FUNCTION_INFO_V1(simhash_feature_hash);
Datum
simhash_feature_hash(PG_FUNCTION_ARGS)
{
	int			len;
	const char *data = text_arg_utf8(fcinfo, 0, &len);

	PG_RETURN_INT64((int64) XXH3_64bits(data, len));
}
