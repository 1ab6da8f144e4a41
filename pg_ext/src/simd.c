/*
 * simd.c — which copy of the vector code a call takes: the best this CPU
 * runs, or less where simhash.debug_simd says (tests run every copy).  The
 * setting's assign hook sets the core's level (core/simd.h).
 */
#include "simd.h"

#include "utils/guc.h"

/* What this CPU runs (simhash_simd_init), and the most simhash.debug_simd allows. */
static SimdLevel cpu_simd = SIMD_PLAIN;
static int	debug_simd = SIMD_AVX512;

static const struct config_enum_entry debug_simd_options[] = {
	{"auto", SIMD_AVX512, false},
	{"avx2", SIMD_AVX2, false},
	{"none", SIMD_PLAIN, false},
	{NULL, 0, false},
};

static void
assign_debug_simd(int newval, void *extra)
{
	simhash_simd_level = Min(cpu_simd, (SimdLevel) newval);
}

void
simhash_simd_init(void)
{
	cpu_simd = simhash_simd_cpu_level();
	DefineCustomEnumVariable("simhash.debug_simd",
							 "Uses at most this instruction set in the vector code, for tests.",
							 "auto (the default): the best this CPU runs; avx2; none. Every one gives the same "
							 "results: the fingerprints' votes and the index's comparisons of pending rows.",
							 &debug_simd, SIMD_AVX512, debug_simd_options,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, assign_debug_simd, NULL);
}
