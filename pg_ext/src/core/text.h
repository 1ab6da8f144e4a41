/*
 * text.h — the text fingerprints of every spec version (docs/fingerprint-spec.md
 * §3, §6 and §8): their entry points, and what they share: features handed to a
 * callback, XXH3-64 (xxhash.h, inlined), their hashes voted in batches.
 */
#ifndef SIMHASH_CORE_TEXT_H
#define SIMHASH_CORE_TEXT_H

#include "core/vote.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Receives one feature: len bytes at data. */
typedef void (*FeatureCallback) (const char *data, size_t len, void *arg);

/*
 * Calls emit for every feature of a text (UTF-8, len bytes), in order, for
 * shingles of `size` tokens (1: the tokens themselves; version 2's walks
 * take no size).
 */
typedef SimhashStatus (*FeatureWalk) (const char *text, size_t len, int64_t size,
									  FeatureCallback emit, void *arg);

/* The feature hash of spec §3.4: XXH3-64, seed 0. */
static inline uint64_t
feature_hash(const char *data, size_t len)
{
	return XXH3_64bits(data, len);
}

/* Version 1 (text_v1.c): the fingerprint of shingles of shingle_size tokens, and its features. */
extern SimhashStatus text_v1_fingerprint(const char *text, size_t len, int64_t shingle_size,
										 uint64_t *result);
extern SimhashStatus text_v1_walk(const char *text, size_t len, int64_t shingle_size,
								  FeatureCallback emit, void *arg);

/* Version 2 (text_v2.c): the fingerprint; the tokens; the features that vote (size unused). */
extern SimhashStatus text_v2_fingerprint(const char *text, size_t len, uint64_t *result);
extern SimhashStatus text_v2_walk_tokens(const char *text, size_t len, int64_t unused,
										 FeatureCallback emit, void *arg);
extern SimhashStatus text_v2_walk_features(const char *text, size_t len, int64_t unused,
										   FeatureCallback emit, void *arg);

/* Receives one feature that votes, with its votes (version 3's walk of features). */
typedef void (*WeightedFeatureCallback) (const char *data, size_t len, int64_t votes, void *arg);

/*
 * Version 3 (text_v3.c): the fingerprint; the tokens (size unused); the
 * features that vote with their votes, the token shingles first.
 */
extern SimhashStatus text_v3_fingerprint(const char *text, size_t len, uint64_t *result);
extern SimhashStatus text_v3_walk_tokens(const char *text, size_t len, int64_t unused,
										 FeatureCallback emit, void *arg);
extern SimhashStatus text_v3_walk_features(const char *text, size_t len,
										   WeightedFeatureCallback emit, void *arg);

/* The fingerprint of feature hashes (spec §1, simhash-py's compute), and weighted (§2). */
extern uint64_t hashes_fingerprint(const uint64_t *hashes, size_t n);
extern SimhashStatus weighted_hashes_fingerprint(const uint64_t *hashes, const double *weights,
												 size_t n, uint64_t *result);

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
	/* Shown every hash as it is voted, with seen_arg (or NULL): version 3's cap (text_v3.c). */
	void		(*seen) (const uint64_t *hashes, size_t n, void *arg);
	void	   *seen_arg;
	uint64_t	hashes[HASH_BATCH];
} HashBatch;

static inline void
hash_batch_init(HashBatch *batch)
{
	vote_init(&batch->vote);
	batch->n = 0;
	batch->seen = NULL;
	batch->seen_arg = NULL;
}

/* The batch's first n hashes are voted (and shown to seen); the batch is then empty. */
static inline void
hash_batch_vote(HashBatch *batch, int n)
{
	vote_add_hashes(&batch->vote, batch->hashes, n);
	if (batch->seen != NULL)
		batch->seen(batch->hashes, n, batch->seen_arg);
	batch->n = 0;
}

static inline void
hash_batch_add(HashBatch *batch, uint64_t hash)
{
	batch->hashes[batch->n++] = hash;
	if (batch->n == HASH_BATCH)
		hash_batch_vote(batch, batch->n);
}

/* A FeatureCallback: hashes the feature (spec §3.4) into the batch of arg. */
static inline void
batch_feature(const char *data, size_t len, void *arg)
{
	hash_batch_add((HashBatch *) arg, feature_hash(data, len));
}

/* Votes the hashes still waiting: batch->vote then holds every feature's. */
static inline void
hash_batch_flush(HashBatch *batch)
{
	hash_batch_vote(batch, batch->n);
}

static inline uint64_t
hash_batch_result(HashBatch *batch)
{
	hash_batch_flush(batch);
	return vote_result(&batch->vote);
}

/* text_v1.c's and text_v2.c's tables, filled once (simhash_core_init). */
extern void text_v1_init(void);
extern void text_v2_init(void);

#endif							/* SIMHASH_CORE_TEXT_H */
