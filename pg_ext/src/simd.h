/*
 * simd.h — the instruction sets vector code is compiled for, and which one
 * this CPU (or simhash.debug_simd, for tests) lets a call take.
 *
 * Vector code is compiled once per instruction set where the compiler can
 * (x86-64, GCC 12 or later): for AVX-512 (TARGET_AVX512), for AVX2
 * (TARGET_AVX2) and plain, and each call takes the best copy this CPU runs
 * (simd_level).  Every copy computes the same result.
 */
#ifndef SIMHASH_SIMD_H
#define SIMHASH_SIMD_H

#include "simhash.h"

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
/* Finds what the CPU runs, defines simhash.debug_simd (from _PG_init). */
extern void simhash_simd_init(void);

#endif							/* SIMHASH_SIMD_H */
