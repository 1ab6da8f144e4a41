/*
 * text_v1.c — the text fingerprint of docs/fingerprint-spec.md §3:
 * tokenize, shingle, hash each shingle with XXH3-64, vote.
 *
 * One pass over the UTF-8 bytes writes the normalized text: the lowercased
 * tokens joined by single spaces.  A shingle of s tokens is then a contiguous
 * slice of that buffer, from the start of its first token to the end of its
 * last, so shingles are hashed in place and never copied.
 */
#include "core/text.h"

/* token_byte[c]: c belongs to a token; lowered[c]: c with ASCII A-Z lowercased. */
static bool token_byte[256];
static unsigned char lowered[256];

void
text_v1_init(void)
{
	for (int c = 0; c < 256; c++)
	{
		token_byte[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			(c >= 'A' && c <= 'Z') || c >= 0x80;
		lowered[c] = (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
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
static inline SimhashStatus
for_each_feature(const char *text, size_t len, int64_t shingle_size,
				 FeatureCallback emit, void *arg)
{
	const unsigned char *in = (const unsigned char *) text;
	char	   *norm;
	size_t		recent[RECENT_TOKENS];
	int64_t		ntokens = 0;
	size_t		first = 0;		/* where the current shingle starts in norm */
	size_t		pos = 0;
	size_t		i = 0;
	/* Bytes read and hashed since the last check for interrupts. */
	size_t		work = 0;

	if (shingle_size < 1)
		return SIMHASH_BAD_SHINGLE_SIZE;
	norm = simhash_core_host.alloc(len + 1);
	if (norm == NULL)
		return SIMHASH_NO_MEMORY;
	for (;;)
	{
		size_t		token_start;

		while (i < len && !token_byte[in[i]])
			i++;
		if (i == len)
			break;
		if (ntokens > 0)
			norm[pos++] = ' ';
		recent[ntokens % RECENT_TOKENS] = pos;
		token_start = i;
		while (i < len && token_byte[in[i]])
			norm[pos++] = lowered[in[i++]];

		ntokens++;
		work += i - token_start;
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
			work += pos - first;
		}
		/* A big shingle_size makes the features quadratic in len: stay cancellable. */
		if (work >= SIMHASH_CORE_CHECK_BYTES)
		{
			simhash_core_check_interrupts();
			work = 0;
		}
	}
	if (ntokens > 0 && ntokens < shingle_size)
		emit(norm, pos, arg);

	simhash_core_host.free(norm);
	return SIMHASH_OK;
}

SimhashStatus
text_v1_fingerprint(const char *text, size_t len, int64_t shingle_size, uint64_t *result)
{
	HashBatch	batch;
	SimhashStatus status;

	hash_batch_init(&batch);
	status = for_each_feature(text, len, shingle_size, batch_feature, &batch);
	*result = hash_batch_result(&batch);
	return status;
}

SimhashStatus
text_v1_walk(const char *text, size_t len, int64_t shingle_size, FeatureCallback emit, void *arg)
{
	return for_each_feature(text, len, shingle_size, emit, arg);
}
