/*
 * core.c — the core's host (core.h), its one-time set-up, and the
 * fingerprints of feature hashes the caller already has (spec §1 and §2:
 * simhash-py's compute, and weighted).
 */
#include "core/text.h"

SimhashCoreHost simhash_core_host;

void
simhash_core_init(const SimhashCoreHost *host)
{
	simhash_core_host = *host;
	text_v1_init();
	text_v2_init();
}

uint64_t
hashes_fingerprint(const uint64_t *hashes, size_t n)
{
	SimhashVote vote;

	vote_init(&vote);
	vote_add_hashes(&vote, hashes, n);
	return vote_result(&vote);
}

SimhashStatus
weighted_hashes_fingerprint(const uint64_t *hashes, const double *weights, size_t n,
							uint64_t *result)
{
	SimhashWeightedVote vote;

	weighted_vote_init(&vote);
	for (size_t i = 0; i < n; i++)
	{
		/* 64 additions per hash: a 1 GB array takes seconds, so stay cancellable. */
		if ((i & (SIMHASH_CORE_CHECK_BYTES - 1)) == 0)
			simhash_core_check_interrupts();
		if (!weight_is_valid(weights[i]))
			return SIMHASH_BAD_WEIGHT;
		weighted_vote_add(&vote, hashes[i], weights[i]);
	}
	*result = weighted_vote_result(&vote);
	return SIMHASH_OK;
}
