/*
 * vote.h — the bitwise majority vote at the heart of simhash
 * (docs/fingerprint-spec.md §1 and §2).
 */
#ifndef SIMHASH_VOTE_H
#define SIMHASH_VOTE_H

#include "core/simd.h"

/*
 * Unweighted vote.  count[i] is how many hashes had bit i set, out of
 * nvotes.  Bit i of the result is set iff 2 * count[i] > nvotes.
 */
typedef struct SimhashVote
{
	int64_t		nvotes;
	int64_t		count[SIMHASH64_BITS];
} SimhashVote;

/*
 * Weighted vote: per bit, the weights of hashes with the bit set (sum_set)
 * and clear (sum_clear), each accumulated in input order.
 */
typedef struct SimhashWeightedVote
{
	double		sum_set[SIMHASH64_BITS];
	double		sum_clear[SIMHASH64_BITS];
} SimhashWeightedVote;

extern void vote_init(SimhashVote *vote);
extern void vote_add_hashes(SimhashVote *vote, const uint64_t *hashes, size_t n);
extern void vote_merge(SimhashVote *into, const SimhashVote *from);
extern void vote_merge_times(SimhashVote *into, const SimhashVote *from, int64_t times);
extern void vote_add_hash_times(SimhashVote *vote, uint64_t hash, int64_t times);
extern uint64_t vote_result(const SimhashVote *vote);

extern void weighted_vote_init(SimhashWeightedVote *vote);
extern void weighted_vote_add(SimhashWeightedVote *vote, uint64_t hash, double weight);
extern void weighted_vote_merge(SimhashWeightedVote *into, const SimhashWeightedVote *from);
extern uint64_t weighted_vote_result(const SimhashWeightedVote *vote);
/* A weight the vote takes: a finite one (else the host reports SIMHASH_BAD_WEIGHT). */
extern bool weight_is_valid(double weight);

#endif							/* SIMHASH_VOTE_H */
