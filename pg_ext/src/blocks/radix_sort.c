/*
 * radix_sort.c — sorting 64-bit keys in O(n) (radix_sort.h).
 *
 * find_all.c has a second LSD radix sort (sort_by_bucket), on purpose: it
 * sorts packed 12-byte entries by a hashed bucket of a table's key, with
 * digits sized to the bucket count, and is where a find_all run spends most
 * of its time; this one sorts (key, value) arrays of ids and fingerprints by
 * bytes, skipping the bytes all keys share.  One generic sort would cost the
 * hot loop its packed entries.
 */
#include "blocks/radix_sort.h"

#include "miscadmin.h"
#include "utils/memutils.h"

static inline void
swap_buffers(uint64 **a, uint64 **b)
{
	uint64	   *t = *a;

	*a = *b;
	*b = t;
}

/*
 * A byte per pass, least significant first.  Passes on a byte all keys share
 * are skipped, so ids 1..n take about log256(n) passes.
 */
void
simhash_radix_sort(uint64 *keys, uint64 *values, uint32 n)
{
	uint64	   *key_buf;
	uint64	   *value_buf = NULL;

	if (n < 2)
		return;
	key_buf = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * (Size) n);
	if (values)
		value_buf = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * (Size) n);
	simhash_radix_sort_with(keys, values, n, key_buf, value_buf);
	pfree(key_buf);
	if (value_buf)
		pfree(value_buf);
}

/*
 * One pass: the entries of src in the order of the byte at `shift`, into dst,
 * from each digit's first place next[].  Without values, a loop of its own:
 * the keys-only sorts of a build's later runs need no second store.
 */
static void
radix_pass(const uint64 *src_keys, const uint64 *src_values, uint64 *dst_keys, uint64 *dst_values,
		   uint32 n, int shift, uint32 *next)
{
	if (src_values)
		for (uint32 i = 0; i < n; i++)
		{
			uint32		to = next[(src_keys[i] >> shift) & 0xFF]++;

			dst_keys[to] = src_keys[i];
			dst_values[to] = src_values[i];
			SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
		}
	else
		for (uint32 i = 0; i < n; i++)
		{
			dst_keys[next[(src_keys[i] >> shift) & 0xFF]++] = src_keys[i];
			SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
		}
}

/* simhash_radix_sort with the caller's scratch: n entries each (value_buf only with values). */
void
simhash_radix_sort_with(uint64 *keys, uint64 *values, uint32 n, uint64 *key_buf, uint64 *value_buf)
{
	uint32		counts[8][256] = {{0}};
	uint64	   *src_keys = keys,
			   *src_values = values,
			   *dst_keys = key_buf,
			   *dst_values = values ? value_buf : NULL;	/* a keys-only sort moves no values */

	if (n < 2)
		return;
	for (uint32 i = 0; i < n; i++)
		for (int byte = 0; byte < 8; byte++)
			counts[byte][(keys[i] >> (8 * byte)) & 0xFF]++;

	for (int byte = 0; byte < 8; byte++)
	{
		uint32		next[256];
		uint32		sum = 0;
		int			shift = 8 * byte;

		if (counts[byte][(keys[0] >> shift) & 0xFF] == n)
			continue;
		for (int d = 0; d < 256; d++)
		{
			next[d] = sum;
			sum += counts[byte][d];
		}
		radix_pass(src_keys, src_values, dst_keys, dst_values, n, shift, next);
		swap_buffers(&src_keys, &dst_keys);
		swap_buffers(&src_values, &dst_values);
	}
	if (src_keys != keys)
	{
		memcpy(keys, src_keys, sizeof(uint64) * (Size) n);
		if (values)
			memcpy(values, src_values, sizeof(uint64) * (Size) n);
	}
}
