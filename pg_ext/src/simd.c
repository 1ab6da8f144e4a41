/*
 * simd.c — which copy of the vector code a call takes: the best this CPU
 * runs, or less where simhash.debug_simd says (tests run every copy).
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

SimdLevel
simd_level(void)
{
	return Min(cpu_simd, (SimdLevel) debug_simd);
}

void
simhash_simd_init(void)
{
#ifdef HAVE_SIMD_COPIES
	__builtin_cpu_init();
	if (__builtin_cpu_supports("x86-64-v4"))
		cpu_simd = SIMD_AVX512;
	else if (__builtin_cpu_supports("x86-64-v3"))
		cpu_simd = SIMD_AVX2;
#endif
	DefineCustomEnumVariable("simhash.debug_simd",
							 "Uses at most this instruction set in the vector code, for tests.",
							 "auto (the default): the best this CPU runs; avx2; none. Every one gives the same "
							 "results: the fingerprints' votes and the index's comparisons of pending rows.",
							 &debug_simd, SIMD_AVX512, debug_simd_options,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}
