/*
 * fingerprint.h — what the text fingerprints of every spec version share
 * (docs/fingerprint-spec.md §3 and §6): the text argument as UTF-8, features
 * handed to a callback, their hashes voted in batches, and the SQL arrays of
 * tokens and features.
 */
#ifndef SIMHASH_FINGERPRINT_H
#define SIMHASH_FINGERPRINT_H

#include "fingerprint/vote.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Receives one feature: len bytes at data. */
typedef void (*FeatureCallback) (const char *data, Size len, void *arg);

/*
 * Calls emit for every feature of a text (UTF-8, len bytes), in order, for
 * shingles of `size` tokens (1: the tokens themselves).
 */
typedef void (*FeatureWalk) (const char *text, int len, int32 size,
							 FeatureCallback emit, void *arg);

/*
 * Feature hashes are voted in batches of this many: each call of the vote
 * ends by adding its partial counts into the 64 counters, which a big batch
 * pays for rarely (8 kB on the stack).
 */
#define HASH_BATCH 1024

typedef struct HashBatch
{
	SimhashVote vote;
	int			n;
	uint64		hashes[HASH_BATCH];
} HashBatch;

static inline void
hash_batch_init(HashBatch *batch)
{
	vote_init(&batch->vote);
	batch->n = 0;
}

static inline void
hash_batch_add(HashBatch *batch, uint64 hash)
{
	batch->hashes[batch->n++] = hash;
	if (batch->n == HASH_BATCH)
	{
		vote_add_hashes(&batch->vote, batch->hashes, batch->n);
		batch->n = 0;
	}
}

/* A FeatureCallback: hashes the feature (spec §3.4) into the batch of arg. */
static inline void
batch_feature(const char *data, Size len, void *arg)
{
	hash_batch_add((HashBatch *) arg, XXH3_64bits(data, len));
}

/* Votes the hashes still waiting: batch->vote then holds every feature's. */
static inline void
hash_batch_flush(HashBatch *batch)
{
	vote_add_hashes(&batch->vote, batch->hashes, batch->n);
	batch->n = 0;
}

static inline simhash64
hash_batch_result(HashBatch *batch)
{
	hash_batch_flush(batch);
	return vote_result(&batch->vote);
}

/* The tokenizer's byte tables, filled once at load (from _PG_init). */
extern void simhash_fingerprint_init(void);

/* The text argument as UTF-8 bytes (converted from the database encoding). */
extern const char *text_arg_utf8(FunctionCallInfo fcinfo, int argno, int *len);

/* text_v2.c: the ASCII fast path's table, derived from the Unicode tables (from _PG_init). */
extern void simhash_text_v2_init(void);

/* The features of the text argument 0 as a text[], in the server encoding. */
extern Datum features_array(FunctionCallInfo fcinfo, FeatureWalk walk, int32 size);

#endif							/* SIMHASH_FINGERPRINT_H */
