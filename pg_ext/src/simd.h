/*
 * simd.h — the instruction sets vector code is compiled for, and which one
 * this CPU (or simhash.debug_simd, for tests) lets a call take: the core's
 * (core/simd.h), whose level the extension sets from the setting.
 */
#ifndef SIMHASH_SIMD_H
#define SIMHASH_SIMD_H

#include "simhash.h"

#include "core/simd.h"

/* Finds what the CPU runs, defines simhash.debug_simd (from _PG_init). */
extern void simhash_simd_init(void);

#endif							/* SIMHASH_SIMD_H */
