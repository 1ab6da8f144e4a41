/*
 * core.h — the base of the fingerprint core: portable C11 with no PostgreSQL
 * dependency, compiled from the same files into the extension (whose
 * fingerprint/ files are a thin fmgr layer over it) and into the Python
 * package's module pysimhash_sql._simhash_core (pysimhash_sql/_core.c).
 *
 * What the core needs from its host comes through SimhashCoreHost, set once
 * before the first call (simhash_core_init): memory (PostgreSQL: palloc in
 * the current memory context; Python: PyMem_RawMalloc, the GIL being
 * released) and an optional check for interrupts, which long loops call every
 * SIMHASH_CORE_CHECK_BYTES bytes (PostgreSQL: CHECK_FOR_INTERRUPTS).  Errors
 * are returned as SimhashStatus codes, which the host turns into its own
 * (ereport with a SQLSTATE, a Python exception).
 */
#ifndef SIMHASH_CORE_H
#define SIMHASH_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SIMHASH64_BITS 64

typedef enum SimhashStatus
{
	SIMHASH_OK = 0,
	SIMHASH_NO_MEMORY,			/* the host's allocator returned NULL */
	SIMHASH_BAD_SHINGLE_SIZE,	/* a shingle size below 1 */
	SIMHASH_BAD_WEIGHT,			/* a weight that is not finite */
} SimhashStatus;

typedef struct SimhashCoreHost
{
	/* NULL where there is no memory (or never returns, as palloc). */
	void	   *(*alloc) (size_t size);
	void	   *(*realloc) (void *pointer, size_t size);
	void		(*free) (void *pointer);
	/* Called every SIMHASH_CORE_CHECK_BYTES bytes of work, or NULL. */
	void		(*check_interrupts) (void);

	/*
	 * Scratch memory kept across calls (so that a text's working memory is
	 * not fresh pages each time), or NULL: scratch_take returns a block of
	 * at least size bytes (at most SIMHASH_CORE_SCRATCH_LIMIT), or NULL where
	 * the host has none (the caller allocates then); scratch_give hands it
	 * back when the call is done.  One block at a time per thread.
	 */
	void	   *(*scratch_take) (size_t size);
	void		(*scratch_give) (void *block);
} SimhashCoreHost;

/* The most scratch memory a call asks its host for (larger needs allocate and free). */
#define SIMHASH_CORE_SCRATCH_LIMIT ((size_t) 4 << 20)

extern SimhashCoreHost simhash_core_host;

/* Bytes of input (or of features hashed) between two checks for interrupts. */
#define SIMHASH_CORE_CHECK_BYTES 65536

/* Sets the host and fills the core's tables; once, before any other call. */
extern void simhash_core_init(const SimhashCoreHost *host);

static inline void
simhash_core_check_interrupts(void)
{
	if (simhash_core_host.check_interrupts != NULL)
		simhash_core_host.check_interrupts();
}

/* What the compiler offers, named once for the core's files. */
#if defined(__GNUC__) || defined(__clang__)
#define SH_ALWAYS_INLINE inline __attribute__((always_inline))
#define SH_NOINLINE __attribute__((noinline))
#define SH_RIGHTMOST_ONE_POS64(x) __builtin_ctzll(x)
#else
#define SH_ALWAYS_INLINE inline
#define SH_NOINLINE
static inline int
SH_RIGHTMOST_ONE_POS64(uint64_t x)
{
	int			n = 0;

	while ((x & 1) == 0)
		x >>= 1, n++;
	return n;
}
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define SH_BIG_ENDIAN 1
#endif

#define SH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SH_MAX(a, b) ((a) > (b) ? (a) : (b))

#ifdef SIMHASH_CORE_ASSERTS
#include <assert.h>
#define SH_ASSERT(condition) assert(condition)
#else
#define SH_ASSERT(condition) ((void) 0)
#endif

#endif							/* SIMHASH_CORE_H */
