/*
 * entry_sort.c — the in-place MSD radix sort of find_all's entries
 * (entry_sort.h).  Layer: the engine's base; it calls nothing of find_all.
 *
 * Digits of 8 bits from the top.  Each level counts the digits, then moves
 * every entry straight to its digit's range by following cycles (American
 * flag sort), so the sort needs no buffer beside the entries: the memory a
 * run needs stays at 16 bytes per row.  The first level over a big array is
 * the costly one (its moves miss the caches); after it, ranges of a few
 * thousand entries sort inside the caches.  A range whose values are all
 * equal stops at once, so groups of equal fingerprints cost one pass, not
 * one per remaining digit.
 */
#include "find_all/entry_sort.h"

#include "miscadmin.h"

#define DIGIT_BITS 8
#define DIGITS (1 << DIGIT_BITS)

/* Ranges this short are insertion-sorted. */
#define INSERTION_MAX 24

static pg_attribute_always_inline uint64
value_of(const SimhashEntry *entry, uint64 mask, bool by_key)
{
	return by_key ? entry->key : (entry->hash & mask) * SIMHASH_GOLDEN_RATIO_64;
}

static pg_attribute_always_inline void
insertion_sort(SimhashEntry *a, Size n, uint64 mask, bool by_key, int low)
{
	for (Size i = 1; i < n; i++)
	{
		SimhashEntry entry = a[i];
		uint64		v = value_of(&entry, mask, by_key) >> low;
		Size		j = i;

		while (j > 0 && (value_of(&a[j - 1], mask, by_key) >> low) > v)
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = entry;
	}
}

/*
 * Sorts a[0..n) by the bits [low, high) of the value (the bits from high up
 * are equal throughout), a digit of up to 8 bits at a time.
 */
static void
msd_sort(SimhashEntry *a, Size n, uint64 mask, bool by_key, int high, int low)
{
	Size		next[DIGITS];
	Size		end[DIGITS];

	for (;;)
	{
		int			width = Min(DIGIT_BITS, high - low);
		int			shift = high - width;
		uint64		digit_mask = ((uint64) 1 << width) - 1;
		uint64		first;
		uint64		differ = 0;
		Size		sum = 0;
		int			only = -1;

		if (n <= INSERTION_MAX)
		{
			insertion_sort(a, n, mask, by_key, low);
			return;
		}
		memset(next, 0, sizeof(Size) * (digit_mask + 1));
		first = value_of(&a[0], mask, by_key);
		for (Size i = 0; i < n; i++)
		{
			uint64		v = value_of(&a[i], mask, by_key);

			differ |= v ^ first;
			next[(v >> shift) & digit_mask]++;
			SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
		}
		if ((differ >> low) == 0)
			return;
		for (int d = 0; d <= (int) digit_mask; d++)
		{
			Size		count = next[d];

			if (count == n)
				only = d;
			next[d] = sum;
			sum += count;
			end[d] = sum;
		}
		if (only < 0)
		{
			/* Each entry to its digit's range, following the cycles. */
			Size		moves = 0;

			for (int d = 0; d <= (int) digit_mask; d++)
				while (next[d] < end[d])
				{
					SimhashEntry entry = a[next[d]];
					int			digit = (value_of(&entry, mask, by_key) >> shift) & digit_mask;

					while (digit != d)
					{
						SimhashEntry displaced = a[next[digit]];

						a[next[digit]++] = entry;
						entry = displaced;
						digit = (value_of(&entry, mask, by_key) >> shift) & digit_mask;
						SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(++moves);
					}
					a[next[d]++] = entry;
				}
		}
		if (shift <= low)
			return;
		if (only >= 0)
		{
			/* One digit holds everything: the next digit, same range. */
			high = shift;
			continue;
		}
		for (int d = 0; d <= (int) digit_mask; d++)
		{
			Size		start = d == 0 ? 0 : end[d - 1];

			if (end[d] - start > 1)
				msd_sort(a + start, end[d] - start, mask, by_key, shift, low);
		}
		return;
	}
}

static void
sort_by_hash(SimhashEntry *a, Size n, uint64 mask, int low)
{
	msd_sort(a, n, mask, false, SIMHASH64_BITS, low);
}

static void
sort_by_key(SimhashEntry *a, Size n, int low)
{
	msd_sort(a, n, 0, true, SIMHASH64_BITS, low);
}

/*
 * Counts of the entries of pieces entries[start[p] .. end[p]) by the top
 * bits of their sort value, turned into where each bucket starts: in
 * bucket_start (2^bits + 1 of them) and in next (2^bits), where the
 * partition then advances each bucket's cursor.
 */
static void
bucket_starts(const SimhashEntry *entries, const Size *start, const Size *end, int npieces,
			  const SimhashSortBy *by, int bits, Size *bucket_start, Size *next)
{
	Size		buckets = (Size) 1 << bits;
	int			shift = SIMHASH64_BITS - bits;
	Size		sum = 0;

	Assert(bits >= 1 && bits <= SIMHASH_PARTITION_MAX_BITS);
	memset(next, 0, sizeof(Size) * buckets);
	for (int p = 0; p < npieces; p++)
		for (Size i = start[p]; i < end[p]; i++)
			next[(simhash_sort_value(by, &entries[i]) << by->skip) >> shift]++;
	for (Size d = 0; d < buckets; d++)
	{
		Size		count = next[d];

		bucket_start[d] = next[d] = sum;
		sum += count;
	}
	bucket_start[buckets] = sum;
}

void
simhash_partition_entries(SimhashEntry *entries, Size n, const SimhashSortBy *by, int bits,
						  Size *start, Size *next)
{
	Size		buckets = (Size) 1 << bits;
	int			shift = SIMHASH64_BITS - bits;
	Size		first = 0;
	Size		moves = 0;

	bucket_starts(entries, &first, &n, 1, by, bits, start, next);
	for (Size d = 0; d < buckets; d++)
		while (next[d] < start[d + 1])
		{
			SimhashEntry entry = entries[next[d]];
			Size		digit = (simhash_sort_value(by, &entry) << by->skip) >> shift;

			while (digit != d)
			{
				SimhashEntry displaced = entries[next[digit]];

				entries[next[digit]++] = entry;
				entry = displaced;
				digit = (simhash_sort_value(by, &entry) << by->skip) >> shift;
				SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(++moves);
			}
			entries[next[d]++] = entry;
		}
}

void
simhash_scatter_pieces(const SimhashEntry *entries, const Size *start, const Size *end,
					   int npieces, const SimhashSortBy *by, int bits, SimhashEntry *out,
					   Size *out_start, Size *next)
{
	int			shift = SIMHASH64_BITS - bits;

	bucket_starts(entries, start, end, npieces, by, bits, out_start, next);
	for (int p = 0; p < npieces; p++)
		for (Size i = start[p]; i < end[p]; i++)
			out[next[(simhash_sort_value(by, &entries[i]) << by->skip) >> shift]++] = entries[i];
}

void
simhash_scatter_entries(const SimhashEntry *entries, Size n, const SimhashSortBy *by, int bits,
						SimhashEntry *out, Size *out_start, Size *next)
{
	Size		start = 0;

	simhash_scatter_pieces(entries, &start, &n, 1, by, bits, out, out_start, next);
}

void
simhash_sort_entries(SimhashEntry *entries, Size n, const SimhashSortBy *by, int bits)
{
	int			low = SIMHASH64_BITS - Min(Max(bits, 1), SIMHASH64_BITS);

	if (n < 2)
		return;
	if (by->by_key)
		sort_by_key(entries, n, low);
	else
		sort_by_hash(entries, n, by->mask, low);
}
