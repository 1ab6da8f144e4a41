/*
 * vote.c — counting, per bit position, how many feature hashes set it.
 *
 * This is the hot loop of every fingerprint.  The naive form touches 64
 * counters per hash with a shift, mask and add each.  Instead, each byte of a
 * hash is looked up in a table that spreads its 8 bits into the 8 bytes of a
 * uint64_t, and those are added into 8 accumulators of 8 byte-wide lanes: 8
 * loads and 8 adds per hash, no branches.  A byte lane holds at most 255, so
 * the lanes are flushed into the 64-bit counters every 255 hashes.
 *
 * Runs of 16 hashes first go through a tree of carry-save adders (Harley and
 * Seal's population count, applied to the 64 bit positions at once): 15
 * full adders of whole words leave one word of "sixteens" per 16 hashes,
 * counted in the lanes, and words of ones, twos, fours and eights that are
 * counted when the call ends.  About 5 word operations a hash instead of 16.
 */
#include "core/vote.h"

#include <math.h>


/* SPREAD(b): bit j of byte b moved to bit 8*j, i.e. into byte lane j. */
#define SPREAD_BIT(b, j)	((uint64_t) (((b) >> (j)) & 1) << (8 * (j)))
#define SPREAD(b) \
	(SPREAD_BIT(b, 0) | SPREAD_BIT(b, 1) | SPREAD_BIT(b, 2) | SPREAD_BIT(b, 3) | \
	 SPREAD_BIT(b, 4) | SPREAD_BIT(b, 5) | SPREAD_BIT(b, 6) | SPREAD_BIT(b, 7))
#define SPREAD4(b)	SPREAD(b), SPREAD((b) + 1), SPREAD((b) + 2), SPREAD((b) + 3)
#define SPREAD16(b) SPREAD4(b), SPREAD4((b) + 4), SPREAD4((b) + 8), SPREAD4((b) + 12)
#define SPREAD64(b) SPREAD16(b), SPREAD16((b) + 16), SPREAD16((b) + 32), SPREAD16((b) + 48)

static const uint64_t byte_spread[256] = {
	SPREAD64(0), SPREAD64(64), SPREAD64(128), SPREAD64(192)
};

#define LANE_CAPACITY 255

void
vote_init(SimhashVote *vote)
{
	memset(vote, 0, sizeof(*vote));
}

/* Adds the byte lanes, each lane's count weighing `weight`, and clears them. */
static inline void
vote_add_lanes(SimhashVote *vote, uint64_t *lanes, int64_t weight)
{
	for (int b = 0; b < 8; b++)
	{
		for (int j = 0; j < 8; j++)
			vote->count[8 * b + j] += weight * (int64_t) ((lanes[b] >> (8 * j)) & 0xff);
		lanes[b] = 0;
	}
}

/* Counts up to LANE_CAPACITY hashes in byte lanes, then adds them to vote. */
static void
vote_add_block(SimhashVote *vote, const uint64_t *hashes, size_t n)
{
	uint64_t		lanes[8] = {0};

	SH_ASSERT(n <= LANE_CAPACITY);
	for (size_t i = 0; i < n; i++)
	{
		uint64_t		h = hashes[i];

		for (int b = 0; b < 8; b++)
			lanes[b] += byte_spread[(h >> (8 * b)) & 0xff];
	}
	vote_add_lanes(vote, lanes, 1);
	vote->nvotes += n;
}

/* A full adder of words (or of vectors of them): high gets the carries, low the sums of a + b + c. */
#define CSA(high, low, a, b, c) \
	do { \
		__typeof__(a) u_ = (a) ^ (b); \
		(high) = ((a) & (b)) | (u_ & (c)); \
		(low) = u_ ^ (c); \
	} while (0)

/*
 * The tree of 15 full adders over d[0..15]: ones, twos, fours and eights
 * keep the counts below 16, sixteens gets one more sixteen (CSA_FOURS: the
 * fours of 4 more).  The temporaries are the caller's locals, of d's type
 * (CSA_TEMPORARIES).
 */
#define CSA_TEMPORARIES(type) \
	type		twos_a, twos_b, fours_a, fours_b, eights_a, eights_b, sixteens
#define CSA_FOURS(fours_out, d) \
	do { \
		CSA(twos_a, ones, ones, (d)[0], (d)[1]); \
		CSA(twos_b, ones, ones, (d)[2], (d)[3]); \
		CSA(fours_out, twos, twos, twos_a, twos_b); \
	} while (0)
#define CSA_TREE16(d) \
	do { \
		CSA_FOURS(fours_a, (d)); \
		CSA_FOURS(fours_b, (d) + 4); \
		CSA(eights_a, fours, fours, fours_a, fours_b); \
		CSA_FOURS(fours_a, (d) + 8); \
		CSA_FOURS(fours_b, (d) + 12); \
		CSA(eights_b, fours, fours, fours_a, fours_b); \
		CSA(sixteens, eights, eights, eights_a, eights_b); \
	} while (0)

/* Adds each bit of word, counted once, to the byte lanes. */
static inline void
lanes_add_word(uint64_t *lanes, uint64_t word)
{
	for (int b = 0; b < 8; b++)
		lanes[b] += byte_spread[(word >> (8 * b)) & 0xff];
}

/*
 * Adds the bits of the words of ones, twos, fours and eights, each with its
 * weight (at most 15 a byte lane): one pass over the lanes, not four of a bit
 * each.
 */
static inline void
lanes_add_counts(uint64_t *lanes, uint64_t ones, uint64_t twos, uint64_t fours, uint64_t eights)
{
	for (int b = 0; b < 8; b++)
		lanes[b] += byte_spread[(ones >> (8 * b)) & 0xff] +
			2 * byte_spread[(twos >> (8 * b)) & 0xff] +
			4 * byte_spread[(fours >> (8 * b)) & 0xff] +
			8 * byte_spread[(eights >> (8 * b)) & 0xff];
}

/*
 * The same tree on vectors of hashes: 16 vectors per step, each word
 * operation done on every lane at once.  The words of the vectors are counted
 * into the byte lanes (a lane's count of sixteens grows by up to the vector's
 * lanes a step).  The vectors are read where the hashes lie, and each copy's
 * are as wide as its registers (8 hashes with AVX-512, 4 with AVX2, 2 with
 * SSE2): the tree's 11 vectors then stay in registers, where wider ones would
 * be spilled to the stack (AVX2 on 8 lanes: a third slower).  Each copy
 * returns how many hashes it voted, a multiple of 16 lanes; vote_add_hashes
 * votes the rest.
 */
#define VOTE_VECTORS(name, nlanes) \
typedef uint64_t name##_lanes __attribute__((vector_size((nlanes) * sizeof(uint64_t)), aligned(sizeof(uint64_t)))); \
static SH_ALWAYS_INLINE size_t \
name(SimhashVote *vote, const uint64_t *hashes, size_t n) \
{ \
	name##_lanes ones = {0}, \
				twos = {0}, \
				fours = {0}, \
				eights = {0}; \
	uint64_t		lanes[8] = {0}; \
	int			in_lanes = 0; \
	size_t		i = 0; \
\
	for (; i + 16 * (nlanes) <= n; i += 16 * (nlanes)) \
	{ \
		const name##_lanes *d = (const name##_lanes *) (hashes + i); \
		CSA_TEMPORARIES(name##_lanes); \
\
		CSA_TREE16(d); \
		for (int k = 0; k < (nlanes); k++) \
			lanes_add_word(lanes, sixteens[k]); \
		in_lanes += (nlanes); \
		if (in_lanes > LANE_CAPACITY - (nlanes)) \
		{ \
			vote_add_lanes(vote, lanes, 16); \
			in_lanes = 0; \
		} \
	} \
	vote_add_lanes(vote, lanes, 16); \
	/* Each vector lane's ones, twos, fours and eights: at most 8 * 15 a byte lane. */ \
	for (int k = 0; k < (nlanes); k++) \
		lanes_add_counts(lanes, ones[k], twos[k], fours[k], eights[k]); \
	vote_add_lanes(vote, lanes, 1); \
	vote->nvotes += i; \
	return i; \
}

VOTE_VECTORS(vote_add_hash_vectors2, 2)
VOTE_VECTORS(vote_add_hash_vectors4, 4)
VOTE_VECTORS(vote_add_hash_vectors8, 8)

/* The fewest hashes any copy votes in vectors. */
#define VOTE_VECTORS_MIN (16 * 2)

#ifdef HAVE_SIMD_COPIES
TARGET_AVX512
static size_t
vote_add_hash_vectors_avx512(SimhashVote *vote, const uint64_t *hashes, size_t n)
{
	return vote_add_hash_vectors8(vote, hashes, n);
}

TARGET_AVX2
static size_t
vote_add_hash_vectors_avx2(SimhashVote *vote, const uint64_t *hashes, size_t n)
{
	return vote_add_hash_vectors4(vote, hashes, n);
}
#endif

static size_t
vote_add_hash_vectors(SimhashVote *vote, const uint64_t *hashes, size_t n)
{
#ifdef HAVE_SIMD_COPIES
	switch (simd_level())
	{
		case SIMD_AVX512:
			return vote_add_hash_vectors_avx512(vote, hashes, n);
		case SIMD_AVX2:
			return vote_add_hash_vectors_avx2(vote, hashes, n);
		case SIMD_PLAIN:
			break;
	}
#endif
	return vote_add_hash_vectors2(vote, hashes, n);
}

void
vote_add_hashes(SimhashVote *vote, const uint64_t *hashes, size_t n)
{
	uint64_t		ones = 0,
				twos = 0,
				fours = 0,
				eights = 0;
	uint64_t		lanes[8] = {0};
	int			in_lanes = 0;
	size_t		i = 0;

	/* Long runs of hashes: most of them in vectors. */
	if (n >= VOTE_VECTORS_MIN)
	{
		size_t		done = vote_add_hash_vectors(vote, hashes, n);

		hashes += done;
		n -= done;
	}
	/* One hash at a time (an aggregate's): the lanes alone. */
	if (n < 16)
	{
		vote_add_block(vote, hashes, n);
		return;
	}
	for (; i + 16 <= n; i += 16)
	{
		const uint64_t *d = hashes + i;
		CSA_TEMPORARIES(uint64_t);

		CSA_TREE16(d);
		lanes_add_word(lanes, sixteens);
		if (++in_lanes == LANE_CAPACITY)
		{
			vote_add_lanes(vote, lanes, 16);
			in_lanes = 0;
		}
	}
	vote_add_lanes(vote, lanes, 16);
	lanes_add_counts(lanes, ones, twos, fours, eights);
	vote_add_lanes(vote, lanes, 1);
	vote->nvotes += i;
	/* The last n % 16 hashes. */
	if (i < n)
		vote_add_block(vote, hashes + i, n - i);
}

void
vote_merge(SimhashVote *into, const SimhashVote *from)
{
	vote_merge_times(into, from, 1);
}

/* Adds the votes of from, each counted `times` times (an integer weight). */
void
vote_merge_times(SimhashVote *into, const SimhashVote *from, int64_t times)
{
	into->nvotes += times * from->nvotes;
	for (int i = 0; i < SIMHASH64_BITS; i++)
		into->count[i] += times * from->count[i];
}

/* Adds one hash's vote `times` times (fewer where times < 0: version 3's cap takes votes back). */
void
vote_add_hash_times(SimhashVote *vote, uint64_t hash, int64_t times)
{
	vote->nvotes += times;
	for (int i = 0; i < SIMHASH64_BITS; i++)
		vote->count[i] += times * (int64_t) ((hash >> i) & 1);
}

uint64_t
vote_result(const SimhashVote *vote)
{
	uint64_t	result = 0;

	for (int i = 0; i < SIMHASH64_BITS; i++)
		result |= (uint64_t) (2 * vote->count[i] > vote->nvotes) << i;
	return result;
}

void
weighted_vote_init(SimhashWeightedVote *vote)
{
	memset(vote, 0, sizeof(*vote));
}

bool
weight_is_valid(double weight)
{
	return isfinite(weight);
}

/*
 * Adding w * 0.0 instead of skipping the add leaves each sum bit-identical
 * to the spec's "add w where the bit is set" (x + 0.0 == x), without a branch.
 */
void
weighted_vote_add(SimhashWeightedVote *vote, uint64_t hash, double weight)
{
	for (int i = 0; i < SIMHASH64_BITS; i++)
	{
		double		bit = (double) ((hash >> i) & 1);

		vote->sum_set[i] += weight * bit;
		vote->sum_clear[i] += weight * (1.0 - bit);
	}
}

void
weighted_vote_merge(SimhashWeightedVote *into, const SimhashWeightedVote *from)
{
	for (int i = 0; i < SIMHASH64_BITS; i++)
	{
		into->sum_set[i] += from->sum_set[i];
		into->sum_clear[i] += from->sum_clear[i];
	}
}

uint64_t
weighted_vote_result(const SimhashWeightedVote *vote)
{
	uint64_t	result = 0;

	for (int i = 0; i < SIMHASH64_BITS; i++)
		result |= (uint64_t) (vote->sum_set[i] > vote->sum_clear[i]) << i;
	return result;
}
