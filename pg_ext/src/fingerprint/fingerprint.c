/*
 * fingerprint.c — the text fingerprint of docs/fingerprint-spec.md §3 in SQL
 * (simhash(text), its tokens, shingles and feature hash) over the core's
 * (core/text_v1.c), and what the SQL functions of both text versions share:
 * the core's host, its errors, the text argument, the arrays of features.
 */
#include "fingerprint/fingerprint.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* The core's memory: palloc's in the current memory context (huge: a text's buffers may pass 1 GB). */
static void *
core_alloc(size_t size)
{
	return MemoryContextAllocHuge(CurrentMemoryContext, size);
}

static void *
core_realloc(void *pointer, size_t size)
{
	return repalloc_huge(pointer, size);
}

static void
core_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

/*
 * The core's scratch memory: one block for the backend's life, in
 * TopMemoryContext, grown to the largest size asked (at most
 * SIMHASH_CORE_SCRATCH_LIMIT), so that a text's working memory is not fresh
 * pages from the system each time.  A call is never nested in another (the
 * backend runs one at a time), and a call ended by an error leaves the block
 * to the next one.
 */
static void *core_scratch;
static size_t core_scratch_size;

static void *
core_scratch_take(size_t size)
{
	if (size > core_scratch_size)
	{
		if (core_scratch != NULL)
			pfree(core_scratch);
		core_scratch = NULL;
		core_scratch_size = 0;
		core_scratch = MemoryContextAlloc(TopMemoryContext, size);
		core_scratch_size = size;
	}
	return core_scratch;
}

static void
core_scratch_give(void *block)
{
	(void) block;
}

void
simhash_fingerprint_init(void)
{
	const SimhashCoreHost host = {core_alloc, core_realloc, pfree, core_check_interrupts,
	core_scratch_take, core_scratch_give};

	simhash_core_init(&host);
}

void
report_core_status(SimhashStatus status)
{
	switch (status)
	{
		case SIMHASH_OK:
			return;
		case SIMHASH_NO_MEMORY:
			ereport(ERROR,
					errcode(ERRCODE_OUT_OF_MEMORY),
					errmsg("out of memory"));
			break;
		case SIMHASH_BAD_SHINGLE_SIZE:
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("shingle_size must be at least 1"));
			break;
		case SIMHASH_BAD_WEIGHT:
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("simhash weight must be finite"));
			break;
	}
	elog(ERROR, "unexpected status %d of the fingerprint core", (int) status);
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

/* ---------- simhash(text, shingle_size) ---------- */

PG_FUNCTION_INFO_V1(simhash_text);
Datum
simhash_text(PG_FUNCTION_ARGS)
{
	int32		shingle_size = PG_GETARG_INT32(1);
	int			len;
	const char *data;
	simhash64	result;

	check_shingle_size(shingle_size);
	data = text_arg_utf8(fcinfo, 0, &len);
	report_core_status(text_v1_fingerprint(data, len, shingle_size, &result));
	PG_RETURN_SIMHASH64(result);
}

Datum
text_fingerprint_datum(FunctionCallInfo fcinfo, TextFingerprintFunction fingerprint)
{
	int			len;
	const char *data = text_arg_utf8(fcinfo, 0, &len);
	simhash64	result;

	report_core_status(fingerprint(data, len, &result));
	PG_RETURN_SIMHASH64(result);
}

/* ---------- the steps, exposed: tokens, shingles, feature hash ---------- */

static void
collect_feature(const char *data, size_t len, void *arg)
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
count_feature_bytes(const char *data, size_t len, void *arg)
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

	report_core_status(walk(data, len, shingle_size, count_feature_bytes, &bytes));
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
	report_core_status(walk(data, len, shingle_size, collect_feature, &result));
	PG_RETURN_DATUM(makeArrayResult(result, CurrentMemoryContext));
}

/* Tokens are exactly the features of shingle size 1. */
PG_FUNCTION_INFO_V1(simhash_tokens);
Datum
simhash_tokens(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, text_v1_walk, 1);
}

PG_FUNCTION_INFO_V1(simhash_shingles);
Datum
simhash_shingles(PG_FUNCTION_ARGS)
{
	return features_array(fcinfo, text_v1_walk, PG_GETARG_INT32(1));
}

PG_FUNCTION_INFO_V1(simhash_feature_hash);
Datum
simhash_feature_hash(PG_FUNCTION_ARGS)
{
	int			len;
	const char *data = text_arg_utf8(fcinfo, 0, &len);

	PG_RETURN_INT64((int64) feature_hash(data, len));
}
