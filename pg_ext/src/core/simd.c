/*
 * simd.c — which copy of the vector code a call takes (simd.h).
 */
#include "core/simd.h"

SimdLevel	simhash_simd_level = SIMD_PLAIN;

SimdLevel
simhash_simd_cpu_level(void)
{
#ifdef HAVE_SIMD_COPIES
	__builtin_cpu_init();
	if (__builtin_cpu_supports("x86-64-v4"))
		return SIMD_AVX512;
	if (__builtin_cpu_supports("x86-64-v3"))
		return SIMD_AVX2;
#endif
	return SIMD_PLAIN;
}
