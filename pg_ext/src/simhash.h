/*
 * simhash.h — the simhash64 type as C sees it, shared by every source file.
 *
 * A simhash64 is an unsigned 64-bit integer stored in a Datum by value.  The
 * fmgr only knows signed int64, so these macros carry the bit pattern across
 * unchanged.
 */
#ifndef SIMHASH_H
#define SIMHASH_H

#include "pg_compat.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"

typedef uint64 simhash64;

#define SIMHASH64_BITS 64

#define DatumGetSimhash64(d)	((simhash64) DatumGetInt64(d))
#define Simhash64GetDatum(v)	Int64GetDatum((int64) (v))
#define PG_GETARG_SIMHASH64(n)	DatumGetSimhash64(PG_GETARG_DATUM(n))
#define PG_RETURN_SIMHASH64(v)	return Simhash64GetDatum(v)

/*
 * The bits set in a word, inline.  On x86-64 PostgreSQL's pg_popcount64 is a
 * call through a pointer chosen at startup (it checks the CPU for POPCNT):
 * about 2 ns a call, most of what comparing one stored fingerprint costs (a
 * query reading 200,000 pending rows: 540 us with it, 170 us with the
 * instruction inline).  Here the instruction is inline behind a flag set at
 * load from cpuid (simhash_popcount_init, type/hamming.h), a branch that always goes the
 * same way.
 * aarch64's is inline from the compiler; elsewhere PostgreSQL's function.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(HAVE_X86_64_POPCNTQ) && \
	defined(HAVE__GET_CPUID) && !defined(__POPCNT__)
#define SIMHASH_POPCNT_CHECKED 1
/*
 * Exported (PGDLLEXPORT: PGXS hides symbols from PostgreSQL 16 on): JIT
 * inlining copies functions that read it into JIT code, which finds it by
 * name in the loaded libraries.
 */
extern PGDLLEXPORT bool simhash_cpu_has_popcnt;
#endif

static inline int
simhash_popcount64(uint64 word)
{
#if defined(__POPCNT__) || defined(__aarch64__)
	return __builtin_popcountll(word);
#elif defined(SIMHASH_POPCNT_CHECKED)
	if (likely(simhash_cpu_has_popcnt))
	{
		uint64		count;

		/* volatile: never run ahead of the check; "r": clang spills "rm" to memory */
		__asm__ __volatile__("popcntq %1, %0":"=r"(count):"r"(word):"cc");
		return (int) count;
	}
	return pg_popcount64(word);
#else
	return pg_popcount64(word);
#endif
}

static inline int
simhash64_distance(simhash64 a, simhash64 b)
{
	return simhash_popcount64(a ^ b);
}

/* A hint to bring memory into the CPU's cache, where the compiler has one. */
#if defined(__GNUC__) || defined(__clang__)
#define simhash_prefetch(address) __builtin_prefetch(address)
#else
#define simhash_prefetch(address) ((void) (address))
#endif

/*
 * Stay cancellable in long loops without paying for the check on every
 * iteration: CHECK_FOR_INTERRUPTS every 65,536 iterations of counter i.
 */
#define SIMHASH_INTERRUPT_EVERY_MASK 0xFFFF
#define SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i) \
	do { \
		if (((i) & SIMHASH_INTERRUPT_EVERY_MASK) == 0) \
			CHECK_FOR_INTERRUPTS(); \
	} while (0)

#endif							/* SIMHASH_H */
