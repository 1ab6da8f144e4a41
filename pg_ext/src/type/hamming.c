/*
 * hamming.c — Hamming distance between fingerprints.
 */
#include "simhash.h"

#ifdef SIMHASH_POPCNT_CHECKED
#include <cpuid.h>

bool		simhash_cpu_has_popcnt = false;
#endif

/* cpuid as PostgreSQL's own check: header-only, with GCC and clang alike. */
void
simhash_popcount_init(void)
{
#ifdef SIMHASH_POPCNT_CHECKED
	unsigned int eax,
				ebx,
				ecx,
				edx;

	simhash_cpu_has_popcnt = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_POPCNT) != 0;
#endif
}

PG_FUNCTION_INFO_V1(simhash64_hamming_distance);
Datum
simhash64_hamming_distance(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash64_distance(PG_GETARG_SIMHASH64(0),
									   PG_GETARG_SIMHASH64(1)));
}

/* Raises the error every radius-taking function gives for k outside 0..64. */
void
simhash_check_radius(int32 k)
{
	if (k < 0 || k > SIMHASH64_BITS)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("Hamming distance %d is out of range", k),
				errdetail("A distance between simhash64 values is between 0 and 64."));
}

PG_FUNCTION_INFO_V1(simhash64_hamming_within);
Datum
simhash64_hamming_within(PG_FUNCTION_ARGS)
{
	int32		k = PG_GETARG_INT32(2);

	simhash_check_radius(k);
	PG_RETURN_BOOL(simhash64_distance(PG_GETARG_SIMHASH64(0),
									  PG_GETARG_SIMHASH64(1)) <= k);
}
