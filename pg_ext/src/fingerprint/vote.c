/*
 * vote.c — counting, per bit position, how many feature hashes set it.
 *
 * This is the hot loop of every fingerprint.  The naive form touches 64
 * counters per hash with a shift, mask and add each.  Instead, each byte of a
 * hash is looked up in a table that spreads its 8 bits into the 8 bytes of a
 * uint64, and those are added into 8 accumulators of 8 byte-wide lanes: 8
 * loads and 8 adds per hash, no branches.  A byte lane holds at most 255, so
 * the lanes are flushed into the 64-bit counters every 255 hashes.
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
	for (int b = 0; b < 8; b++)
		for (int j = 0; j < 8; j++)
			vote->count[8 * b + j] += (lanes[b] >> (8 * j)) & 0xff;
	vote->nvotes += n;
}

void
vote_add_hashes(SimhashVote *vote, const uint64 *hashes, size_t n)
{
	while (n > 0)
	{
		size_t		block = Min(n, LANE_CAPACITY);

		vote_add_block(vote, hashes, block);
		hashes += block;
		n -= block;
	}
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
