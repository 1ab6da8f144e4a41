/*
 * simd.h — the instruction sets the core's vector code is compiled for, and
 * which copy a call takes.
 *
 * Vector code is compiled once per instruction set where the compiler can
 * (x86-64, GCC 12 or later): for AVX-512 (TARGET_AVX512), for AVX2
 * (TARGET_AVX2) and plain, and each call takes the copy simhash_simd_level
 * names.  The host sets it once (and again when it changes), never above what
 * simhash_simd_cpu_level() found: the extension from the setting
 * simhash.debug_simd (pg_ext/src/simd.c), the Python module from the
 * environment variable PYSIMHASH_SQL_SIMD (pysimhash_sql/_core.c).  Every
 * copy computes the same result.
 */
#ifndef SIMHASH_CORE_SIMD_H
#define SIMHASH_CORE_SIMD_H

#include "core/core.h"

#if defined(__x86_64__) && !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12
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

/* The copy calls take: SIMD_PLAIN until the host sets it. */
extern SimdLevel simhash_simd_level;

/* The best level this CPU runs (and this build has copies for). */
extern SimdLevel simhash_simd_cpu_level(void);

static inline SimdLevel
simd_level(void)
{
	return simhash_simd_level;
}

#endif							/* SIMHASH_CORE_SIMD_H */
