/*
 * vote.c — counting, per bit position, how many feature hashes set it.
 *
 * This is the hot loop of every fingerprint.  The naive form touches 64
 * counters per hash with a shift, mask and add each.  Instead, each byte of a
 * hash is looked up in a table that spreads its 8 bits into the 8 bytes of a
 * uint64, and those are added into 8 accumulators of 8 byte-wide lanes: 8
 * loads and 8 adds per hash, no branches.  A byte lane holds at most 255, so
 * the lanes are flushed into the 64-bit counters every 255 hashes.
 *
 * Runs of 16 hashes first go through a tree of carry-save adders (Harley and
 * Seal's population count, applied to the 64 bit positions at once): 15
 * full adders of whole words leave one word of "sixteens" per 16 hashes,
 * counted in the lanes, and words of ones, twos, fours and eights that are
 * counted when the call ends.  About 5 word operations a hash instead of 16.
 */
#include "fingerprint/vote.h"

#include <math.h>

/* SPREAD(b): bit j of byte b moved to bit 8*j, i.e. into byte lane j. */
#define SPREAD_BIT(b, j)	((uint64) (((b) >> (j)) & 1) << (8 * (j)))
#define SPREAD(b) \
	(SPREAD_BIT(b, 0) | SPREAD_BIT(b, 1) | SPREAD_BIT(b, 2) | SPREAD_BIT(b, 3) | \
	 SPREAD_BIT(b, 4) | SPREAD_BIT(b, 5) | SPREAD_BIT(b, 6) | SPREAD_BIT(b, 7))
#define SPREAD4(b)	SPREAD(b), SPREAD((b) + 1), SPREAD((b) + 2), SPREAD((b) + 3)
#define SPREAD16(b) SPREAD4(b), SPREAD4((b) + 4), SPREAD4((b) + 8), SPREAD4((b) + 12)
#define SPREAD64(b) SPREAD16(b), SPREAD16((b) + 16), SPREAD16((b) + 32), SPREAD16((b) + 48)

static const uint64 byte_spread[256] = {
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
vote_add_lanes(SimhashVote *vote, uint64 *lanes, int64 weight)
{
	for (int b = 0; b < 8; b++)
	{
		for (int j = 0; j < 8; j++)
			vote->count[8 * b + j] += weight * (int64) ((lanes[b] >> (8 * j)) & 0xff);
		lanes[b] = 0;
	}
}

/* Counts up to LANE_CAPACITY hashes in byte lanes, then adds them to vote. */
static void
vote_add_block(SimhashVote *vote, const uint64 *hashes, size_t n)
{
	uint64		lanes[8] = {0};

	Assert(n <= LANE_CAPACITY);
	for (size_t i = 0; i < n; i++)
	{
		uint64		h = hashes[i];

		for (int b = 0; b < 8; b++)
			lanes[b] += byte_spread[(h >> (8 * b)) & 0xff];
	}
	vote_add_lanes(vote, lanes, 1);
	vote->nvotes += n;
}

/* A full adder of words: high gets the carries, low the sums of a + b + c. */
#define CSA(high, low, a, b, c) \
	do { \
		uint64		u_ = (a) ^ (b); \
		(high) = ((a) & (b)) | (u_ & (c)); \
		(low) = u_ ^ (c); \
	} while (0)

void
vote_add_hashes(SimhashVote *vote, const uint64 *hashes, size_t n)
{
	uint64		ones = 0,
				twos = 0,
				fours = 0,
				eights = 0;
	uint64		lanes[8] = {0};
	int			in_lanes = 0;
	size_t		i = 0;

	/* One hash at a time (an aggregate's): the lanes alone. */
	if (n < 16)
	{
		vote_add_block(vote, hashes, n);
		return;
	}
	for (; i + 16 <= n; i += 16)
	{
		const uint64 *d = hashes + i;
		uint64		twos_a,
					twos_b,
					fours_a,
					fours_b,
					eights_a,
					eights_b,
					sixteens;

		CSA(twos_a, ones, ones, d[0], d[1]);
		CSA(twos_b, ones, ones, d[2], d[3]);
		CSA(fours_a, twos, twos, twos_a, twos_b);
		CSA(twos_a, ones, ones, d[4], d[5]);
		CSA(twos_b, ones, ones, d[6], d[7]);
		CSA(fours_b, twos, twos, twos_a, twos_b);
		CSA(eights_a, fours, fours, fours_a, fours_b);
		CSA(twos_a, ones, ones, d[8], d[9]);
		CSA(twos_b, ones, ones, d[10], d[11]);
		CSA(fours_a, twos, twos, twos_a, twos_b);
		CSA(twos_a, ones, ones, d[12], d[13]);
		CSA(twos_b, ones, ones, d[14], d[15]);
		CSA(fours_b, twos, twos, twos_a, twos_b);
		CSA(eights_b, fours, fours, fours_a, fours_b);
		CSA(sixteens, eights, eights, eights_a, eights_b);
		for (int b = 0; b < 8; b++)
			lanes[b] += byte_spread[(sixteens >> (8 * b)) & 0xff];
		if (++in_lanes == LANE_CAPACITY)
		{
			vote_add_lanes(vote, lanes, 16);
			in_lanes = 0;
		}
	}
	vote_add_lanes(vote, lanes, 16);
	/*
	 * The words of ones, twos, fours and eights, spread into byte lanes with
	 * their weights (at most 15 a lane): one pass over the counters, not four
	 * of a bit each.
	 */
	for (int b = 0; b < 8; b++)
		lanes[b] = byte_spread[(ones >> (8 * b)) & 0xff] +
			2 * byte_spread[(twos >> (8 * b)) & 0xff] +
			4 * byte_spread[(fours >> (8 * b)) & 0xff] +
			8 * byte_spread[(eights >> (8 * b)) & 0xff];
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
vote_merge_times(SimhashVote *into, const SimhashVote *from, int64 times)
{
	into->nvotes += times * from->nvotes;
	for (int i = 0; i < SIMHASH64_BITS; i++)
		into->count[i] += times * from->count[i];
}

simhash64
vote_result(const SimhashVote *vote)
{
	simhash64	result = 0;

	for (int i = 0; i < SIMHASH64_BITS; i++)
		result |= (simhash64) (2 * vote->count[i] > vote->nvotes) << i;
	return result;
}

void
weighted_vote_init(SimhashWeightedVote *vote)
{
	memset(vote, 0, sizeof(*vote));
}

void
check_weight(double weight)
{
	if (!isfinite(weight))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash weight must be finite, got %g", weight));
}

/*
 * Adding w * 0.0 instead of skipping the add leaves each sum bit-identical
 * to the spec's "add w where the bit is set" (x + 0.0 == x), without a branch.
 */
void
weighted_vote_add(SimhashWeightedVote *vote, uint64 hash, double weight)
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

simhash64
weighted_vote_result(const SimhashWeightedVote *vote)
{
	simhash64	result = 0;

	for (int i = 0; i < SIMHASH64_BITS; i++)
		result |= (simhash64) (vote->sum_set[i] > vote->sum_clear[i]) << i;
	return result;
}
