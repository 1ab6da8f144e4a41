/*
 * vote.h — the bitwise majority vote at the heart of simhash
 * (docs/fingerprint-spec.md §1 and §2).
 */
#ifndef SIMHASH_VOTE_H
#define SIMHASH_VOTE_H

#include "simhash.h"

/*
 * The vector code (GCC's vector extensions) is compiled once per instruction
 * set where the compiler can (x86-64, GCC 12 or later): for AVX-512
 * (TARGET_AVX512), for AVX2 (TARGET_AVX2) and plain, and each call takes the best
 * copy this CPU runs (simd_level), or the one simhash.debug_simd allows.
 * Every copy computes the same bits.
 */
#if defined(__x86_64__) && !defined(__clang__) && __GNUC__ >= 12
#define HAVE_SIMD_COPIES 1
#define TARGET_AVX512 __attribute__((target("arch=x86-64-v4")))
#define TARGET_AVX2 __attribute__((target("arch=x86-64-v3")))
#endif

typedef enum SimdLevel
{
	SIMD_PLAIN,
	SIMD_AVX2,
	SIMD_AVX512,
} SimdLevel;

extern SimdLevel simd_level(void);
/* Finds what the CPU runs, defines simhash.debug_simd (at load). */
extern void vote_simd_init(void);

/*
 * Unweighted vote.  count[i] is how many hashes had bit i set, out of
 * nvotes.  Bit i of the result is set iff 2 * count[i] > nvotes.
 */
typedef struct SimhashVote
{
	int64		nvotes;
	int64		count[SIMHASH64_BITS];
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
extern void vote_add_hashes(SimhashVote *vote, const uint64 *hashes, size_t n);
extern void vote_merge(SimhashVote *into, const SimhashVote *from);
extern void vote_merge_times(SimhashVote *into, const SimhashVote *from, int64 times);
extern simhash64 vote_result(const SimhashVote *vote);

extern void weighted_vote_init(SimhashWeightedVote *vote);
extern void weighted_vote_add(SimhashWeightedVote *vote, uint64 hash, double weight);
extern void weighted_vote_merge(SimhashWeightedVote *into, const SimhashWeightedVote *from);
extern simhash64 weighted_vote_result(const SimhashWeightedVote *vote);
extern void check_weight(double weight);

/* fingerprint.c: the tokenizer's byte tables, filled once at load. */
extern void simhash_fingerprint_init(void);

#endif							/* SIMHASH_VOTE_H */
