/*
 * text_v3.c — the text fingerprint version 3 of docs/fingerprint-spec.md §8:
 * version 2's walk with digits (text_walk.h: numbers are tokens of their
 * own), version 2's two kinds of features, and three rules of its own: runs
 * vote once (as version 2), a distinct feature votes at its first
 * V3_MAX_VOTES occurrences only, and a feature with a digit in it votes by
 * the ramp of the text's share of numbers among its words.
 *
 * The ramp is known only at the end of the text, so each kind's features
 * are voted into two tallies, with and without a digit, which the ramp then
 * weighs.  The cap counts each kind's distinct feature hashes in a table of
 * its own (FeatureCounts): its memory grows with the number of distinct
 * features, about 18 to 36 bytes each (a 1 MB text of all-distinct n-grams:
 * some 30 MB); the host's allocator refusing it is SIMHASH_NO_MEMORY.
 */
#include "core/text_walk.h"

/*
 * Version 3's rules (spec §8.3, §8.4): a distinct feature votes at most
 * V3_MAX_VOTES times; a feature without a digit votes its kind's weight x
 * V3_RAMP_STEPS, one with a digit its kind's weight x V3_NUMBER_WEIGHT x the
 * ramp, which goes from 0 at V3_NUMBER_SHARE_LOW % numbers among the words
 * to V3_RAMP_STEPS at V3_NUMBER_SHARE_HIGH %.  Python's home of the same
 * constants: pysimhash_sql/hashing.py (V3_*).
 */
#define V3_MAX_VOTES 32
#define V3_NUMBER_WEIGHT 2
#define V3_NUMBER_SHARE_LOW 15
#define V3_NUMBER_SHARE_HIGH 25
#define V3_RAMP_STEPS 16

/* The table's first size (slots), and its most load: half its slots. */
#define COUNTS_INITIAL 1024

/*
 * How many times each distinct hash was seen, by open addressing: a slot is
 * empty where its count is 0.  The slot of a hash is a mix of it with a key
 * of this table (its first address): the hashes are public (XXH3, seed 0),
 * so a text could be made of features whose hashes share their low bits;
 * the key keeps their slots apart.  The layout never changes a result.
 */
typedef struct FeatureCounts
{
	uint64_t   *hashes;
	uint8_t    *counts;
	size_t		mask;			/* slots - 1 */
	size_t		used;
	uint64_t	key;
	bool		failed;			/* the host had no memory */
} FeatureCounts;

static inline size_t
counts_slot(const FeatureCounts *table, uint64_t hash)
{
	uint64_t	h = hash ^ table->key;

	/* MurmurHash3's finaliser. */
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return (size_t) h & table->mask;
}

static bool
counts_allocate(FeatureCounts *table, size_t slots)
{
	uint64_t   *hashes = simhash_core_host.alloc(slots * sizeof(uint64_t));
	uint8_t    *counts = hashes == NULL ? NULL : simhash_core_host.alloc(slots);

	if (counts == NULL)
	{
		if (hashes != NULL)
			simhash_core_host.free(hashes);
		table->failed = true;
		return false;
	}
	memset(counts, 0, slots);
	table->hashes = hashes;
	table->counts = counts;
	table->mask = slots - 1;
	return true;
}

/* Twice the slots, every hash moved into its new slot. */
static bool
counts_grow(FeatureCounts *table)
{
	FeatureCounts old = *table;
	size_t		slots = (old.mask + 1) * 2;

	if (slots > SIZE_MAX / sizeof(uint64_t) || !counts_allocate(table, slots))
	{
		table->failed = true;
		return false;
	}
	for (size_t i = 0; i <= old.mask; i++)
	{
		if (old.counts[i] != 0)
		{
			size_t		slot = counts_slot(table, old.hashes[i]);

			while (table->counts[slot] != 0)
				slot = (slot + 1) & table->mask;
			table->hashes[slot] = old.hashes[i];
			table->counts[slot] = old.counts[i];
		}
	}
	simhash_core_host.free(old.hashes);
	simhash_core_host.free(old.counts);
	return true;
}

/* Whether a feature of this hash is among the first V3_MAX_VOTES of its hash, counting it. */
static bool
counts_allow(FeatureCounts *table, uint64_t hash)
{
	size_t		slot;

	if (table->failed)
		return false;
	if (table->hashes == NULL)
	{
		if (!counts_allocate(table, COUNTS_INITIAL))
			return false;
		table->key = (uint64_t) (uintptr_t) table->hashes;
	}
	slot = counts_slot(table, hash);
	while (table->counts[slot] != 0)
	{
		if (table->hashes[slot] == hash)
		{
			if (table->counts[slot] == V3_MAX_VOTES)
				return false;
			table->counts[slot]++;
			return true;
		}
		slot = (slot + 1) & table->mask;
	}
	table->hashes[slot] = hash;
	table->counts[slot] = 1;
	if (++table->used > (table->mask + 1) / 2)
		return counts_grow(table);
	return true;
}

static void
counts_free(FeatureCounts *table)
{
	if (table->hashes != NULL)
	{
		simhash_core_host.free(table->hashes);
		simhash_core_host.free(table->counts);
	}
}

/* The ramp (spec §8.3): 0 .. V3_RAMP_STEPS, by the share of numbers among the words. */
static int64_t
number_ramp(const TextCounts *counts)
{
	int64_t		words = counts->tokens - counts->solo_following;
	int64_t		above = 100 * counts->numbers - V3_NUMBER_SHARE_LOW * words;

	if (words <= 0 || above <= 0)
		return 0;
	return SH_MIN(V3_RAMP_STEPS,
				  V3_RAMP_STEPS * above / ((V3_NUMBER_SHARE_HIGH - V3_NUMBER_SHARE_LOW) * words));
}

/* A kind's votes per feature, with and without a digit in it. */
static inline int64_t
feature_votes(int64_t weight, bool digit, int64_t ramp)
{
	return weight * (digit ? V3_NUMBER_WEIGHT * ramp : V3_RAMP_STEPS);
}

static inline bool
has_digit(const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char) (data[i] - '0') < 10)
			return true;
	return false;
}

/*
 * One kind of features: the runs rule, the cap, then either the tallies of
 * the fingerprint (plain, digit) or, with the ramp known, emit.
 */
typedef struct KindVotes
{
	uint64_t	last;			/* the hash of the kind's feature just before */
	bool		any;			/* there was one */
	FeatureCounts counts;
	HashBatch  *plain;			/* the fingerprint's tallies, or NULL */
	HashBatch  *digit;
	int64_t		weight;			/* the walk's: emit's votes */
	int64_t		ramp;
	WeightedFeatureCallback emit;
	void	   *arg;
} KindVotes;

static void
kind_feature(const char *data, size_t len, void *arg)
{
	KindVotes  *kind = (KindVotes *) arg;
	uint64_t	hash = feature_hash(data, len);
	bool		digit;

	if (kind->any && hash == kind->last)
		return;
	kind->any = true;
	kind->last = hash;
	if (!counts_allow(&kind->counts, hash))
		return;
	digit = has_digit(data, len);
	if (kind->plain != NULL)
		hash_batch_add(digit ? kind->digit : kind->plain, hash);
	else
	{
		int64_t		votes = feature_votes(kind->weight, digit, kind->ramp);

		if (votes > 0)
			kind->emit(data, len, votes, kind->arg);
	}
}

static SimhashStatus
kinds_done(SimhashStatus status, KindVotes *tokens, KindVotes *chars)
{
	bool		failed = tokens->counts.failed || chars->counts.failed;

	counts_free(&tokens->counts);
	counts_free(&chars->counts);
	return status == SIMHASH_OK && failed ? SIMHASH_NO_MEMORY : status;
}

/* ---------- the fingerprint ---------- */

SimhashStatus
text_v3_fingerprint(const char *text, size_t len, uint64_t *result)
{
	HashBatch	batches[4];
	KindVotes	tokens = {.plain = &batches[0],.digit = &batches[1]};
	KindVotes	chars = {.plain = &batches[2],.digit = &batches[3]};
	TextCounts	counts = {0};
	const FeatureParts parts = {V2_TOKEN_SHINGLE, V2_CHAR_GRAM, kind_feature, kind_feature,
	&tokens, &chars, NULL, false, true, &counts};
	SimhashVote vote;
	SimhashStatus status;
	int64_t		ramp;

	for (int k = 0; k < 4; k++)
		hash_batch_init(&batches[k]);
	status = kinds_done(text_walk_numbers(text, len, &parts), &tokens, &chars);
	for (int k = 0; k < 4; k++)
		hash_batch_flush(&batches[k]);
	ramp = number_ramp(&counts);
	vote_init(&vote);
	vote_merge_times(&vote, &batches[0].vote, feature_votes(V2_TOKEN_WEIGHT, false, ramp));
	vote_merge_times(&vote, &batches[1].vote, feature_votes(V2_TOKEN_WEIGHT, true, ramp));
	vote_merge_times(&vote, &batches[2].vote, feature_votes(V2_CHAR_WEIGHT, false, ramp));
	vote_merge_times(&vote, &batches[3].vote, feature_votes(V2_CHAR_WEIGHT, true, ramp));
	*result = vote_result(&vote);
	return status;
}

/* ---------- the steps: tokens and features ---------- */

static void
ignore_feature(const char *data, size_t len, void *arg)
{
	(void) data, (void) len, (void) arg;
}

SimhashStatus
text_v3_walk_tokens(const char *text, size_t len, int64_t unused, FeatureCallback emit, void *arg)
{
	const FeatureParts parts = {1, 0, emit, emit, arg, arg, NULL, false, true, NULL};

	(void) unused;
	return text_walk_numbers(text, len, &parts);
}

/*
 * The features that vote with their votes, the token shingles first: one
 * walk counts the words and numbers (the ramp), one a kind.
 */
SimhashStatus
text_v3_walk_features(const char *text, size_t len, WeightedFeatureCallback emit, void *arg)
{
	TextCounts	counts = {0};
	const FeatureParts counting = {0, 0, ignore_feature, ignore_feature, NULL, NULL, NULL, false, true, &counts};
	SimhashStatus status = text_walk_numbers(text, len, &counting);
	int64_t		ramp = number_ramp(&counts);
	KindVotes	tokens = {.weight = V2_TOKEN_WEIGHT,.ramp = ramp,.emit = emit,.arg = arg};
	KindVotes	chars = {.weight = V2_CHAR_WEIGHT,.ramp = ramp,.emit = emit,.arg = arg};
	const FeatureParts token_parts = {V2_TOKEN_SHINGLE, 0, kind_feature, kind_feature,
	&tokens, &tokens, NULL, false, true, NULL};
	const FeatureParts char_parts = {0, V2_CHAR_GRAM, kind_feature, kind_feature,
	&chars, &chars, NULL, false, true, NULL};

	if (status == SIMHASH_OK)
		status = text_walk_numbers(text, len, &token_parts);
	if (status == SIMHASH_OK)
		status = text_walk_numbers(text, len, &char_parts);
	return kinds_done(status, &tokens, &chars);
}
