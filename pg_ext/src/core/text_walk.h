/*
 * text_walk.h — the walk over a text's normalised tokens that versions 2 and
 * 3 share (text_v2.c: docs/fingerprint-spec.md §6.1-§6.3, and §8.2 with
 * digits), its parts, and the features they have in common (§6.4, §8.4).
 */
#ifndef SIMHASH_CORE_TEXT_WALK_H
#define SIMHASH_CORE_TEXT_WALK_H

#include "core/text.h"

/*
 * The features of version 2 (spec §6.4): shingles of V2_TOKEN_SHINGLE tokens,
 * each voting V2_TOKEN_WEIGHT times, and n-grams of V2_CHAR_GRAM characters of
 * the tokens joined by single spaces, each voting V2_CHAR_WEIGHT times (a size
 * of 0 leaves that part out); with V2_RUNS_ONCE, a feature whose hash is the
 * hash of the feature of its part just before it does not vote.  Python's home
 * of the same constants: pysimhash_sql/hashing.py.
 */
#define V2_TOKEN_SHINGLE 3
#define V2_TOKEN_WEIGHT 1
#define V2_CHAR_GRAM 5
#define V2_CHAR_WEIGHT 2
#define V2_RUNS_ONCE true

/* What a walk with digits counts (spec §8.3). */
typedef struct TextCounts
{
	int64_t		tokens;
	int64_t		numbers;		/* tokens of digits */
	int64_t		solo_following; /* SOLO characters right after a SOLO character */
} TextCounts;

/*
 * What a walk over a text emits: the features of each part (size 0: none).
 * Every function of the walk takes it as an argument of its own, never inside
 * the TokenWriter (whose address escapes): so, inlined into a caller whose
 * parts are a const local, the sizes and callbacks are constants.
 */
typedef struct FeatureParts
{
	int32_t		token_size;		/* shingles of this many tokens */
	int32_t		char_size;		/* n-grams of this many characters */
	/* With vote_ascii, unused: the features go straight to the parts (text_v2.c). */
	FeatureCallback emit_token;
	FeatureCallback emit_char;
	void	   *token_arg;
	void	   *char_arg;
	/* Called with each arg before the buffer moves, and at the end (or NULL). */
	void		(*settle) (void *arg);
	/*
	 * The fingerprint's parts (token_arg and char_arg are PartVotes of the
	 * V2_* sizes): runs of ASCII go through ascii_run_voting.
	 */
	bool		vote_ascii;
	/*
	 * Version 3's tokens (spec §8.2): a digit 0-9 the normalisation makes is a
	 * token character of its own kind (numbers are tokens apart from words),
	 * and the walk counts what counts hold (or NULL).
	 */
	bool		digits;
	TextCounts *counts;
} FeatureParts;

/* Whether a feature has a digit 0-9 in it (spec §8.4: its votes follow the ramp). */
static inline bool
has_digit(const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char) (data[i] - '0') < 10)
			return true;
	return false;
}

/* The walk of for_each_feature_v2 (text_v2.c) with parts->digits set, whatever given says. */
extern SimhashStatus text_walk_numbers(const char *text, size_t len, const FeatureParts *given);

/*
 * Version 3's fingerprint walk (spec §8.2, §8.4): each kind's features that
 * the runs rule leaves hashed into batches, [0] the token shingles without a
 * digit, [1] with one, [2] and [3] the character n-grams so; ASCII without
 * digits through version 2's fast path.  counts gets what the ramp needs.
 */
extern SimhashStatus text_walk_numbers_voting(const char *text, size_t len, HashBatch batches[4],
											  TextCounts *counts);

#endif							/* SIMHASH_CORE_TEXT_WALK_H */
