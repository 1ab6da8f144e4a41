/*
 * hamming.c — Hamming distance between fingerprints.
 */
#include "type/hamming.h"

#include "simd.h"

#ifdef HAVE_SIMD_COPIES
#include <immintrin.h>
#endif

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

/* simhash_within_many from position `from` on, the hits after `found` of them. */
static int
within_many_plain(const uint64 *fps, int stride, int from, int n, uint64 centre, int k, int *hits, int found)
{
	for (int j = from; j < n; j++)
		if (simhash64_distance(fps[(Size) j * stride], centre) <= k)
			hits[found++] = j;
	return found;
}

#ifdef HAVE_SIMD_COPIES
/*
 * Four fingerprints: consecutive words (stride 1), or the first word of four
 * pairs (stride 2: find_all's entries, a fingerprint and its row's key).
 */
static inline TARGET_AVX2 __m256i
load4_avx2(const uint64 *fps, int stride)
{
	__m256i		a = _mm256_loadu_si256((const __m256i *) fps);

	if (stride == 1)
		return a;
	/* a = f0 x0 f1 x1, b = f2 x2 f3 x3: unpacked f0 f2 f1 f3, permuted in order */
	return _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, _mm256_loadu_si256((const __m256i *) (fps + 4))),
									_MM_SHUFFLE(3, 1, 2, 0));
}

/*
 * Four distances at once: each byte's bits counted by a table of the 16
 * nibbles (vpshufb), the bytes of each 64-bit lane summed (vpsadbw), each
 * sum compared with k; bit i of the result set when fingerprint i is beyond.
 */
static inline TARGET_AVX2 int
over_mask_avx2(__m256i words, __m256i centre, __m256i k)
{
	const __m256i nibbles = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
											 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
	const __m256i low = _mm256_set1_epi8(0x0f);
	__m256i		x = _mm256_xor_si256(words, centre);
	__m256i		bytes = _mm256_add_epi8(_mm256_shuffle_epi8(nibbles, _mm256_and_si256(x, low)),
										_mm256_shuffle_epi8(nibbles, _mm256_and_si256(_mm256_srli_epi16(x, 4), low)));
	__m256i		counts = _mm256_sad_epu8(bytes, _mm256_setzero_si256());

	return _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(counts, k)));
}

/* Eight fingerprints a step, where nearly every step finds none (a query's matches are few). */
static inline TARGET_AVX2 int
within_many_avx2(const uint64 *fps, int stride, int n, uint64 centre, int k, int *hits)
{
	const __m256i c = _mm256_set1_epi64x((int64) centre);
	const __m256i kk = _mm256_set1_epi64x(k);
	int			found = 0;
	int			j = 0;

	for (; j + 8 <= n; j += 8)
	{
		const uint64 *at = fps + (Size) j * stride;
		int			within = 0xff & ~(over_mask_avx2(load4_avx2(at, stride), c, kk) |
									  over_mask_avx2(load4_avx2(at + 4 * stride, stride), c, kk) << 4);

		while (within != 0)
		{
			hits[found++] = j + __builtin_ctz(within);
			within &= within - 1;
		}
	}
	return within_many_plain(fps, stride, j, n, centre, k, hits, found);
}

/* One copy per stride, each with its loads fixed. */
static TARGET_AVX2 int
within_many_avx2_stride1(const uint64 *fps, int n, uint64 centre, int k, int *hits)
{
	return within_many_avx2(fps, 1, n, centre, k, hits);
}

static TARGET_AVX2 int
within_many_avx2_stride2(const uint64 *fps, int n, uint64 centre, int k, int *hits)
{
	return within_many_avx2(fps, 2, n, centre, k, hits);
}
#endif

int
simhash_within_many(const uint64 *fps, int stride, int n, uint64 centre, int k, int *hits)
{
	Assert(stride == 1 || stride == 2);
#ifdef HAVE_SIMD_COPIES
	if (simd_level() >= SIMD_AVX2)
		return stride == 1 ? within_many_avx2_stride1(fps, n, centre, k, hits) :
			within_many_avx2_stride2(fps, n, centre, k, hits);
#endif
	return within_many_plain(fps, stride, 0, n, centre, k, hits, 0);
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
