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

static inline int
simhash64_distance(simhash64 a, simhash64 b)
{
	return pg_popcount64(a ^ b);
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

/*
 * simhash64.c: the OID of one of the extension's types, found by name in the
 * schema of one of its functions (where CREATE EXTENSION put both);
 * InvalidOid when its owner renamed or dropped it.
 */
extern Oid	simhash_extension_type(Oid function, const char *type_name);

/* hamming.c */
extern void simhash_check_radius(int32 k);

#endif							/* SIMHASH_H */
