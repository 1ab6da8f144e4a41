/*
 * find_all.c — every pair of fingerprints within k bits (see find_all.h).
 *
 * Manku's scheme, as simhash-cpp does it: for each table (a choice of
 * blocks - k of the blocks, permute.h) bring together the fingerprints that
 * agree on the table's blocks, and compare only those.  Where simhash-cpp
 * permutes and comparison-sorts all fingerprints per table and keeps a set of
 * the pairs found, this file
 *   - sorts by a hash of the table's key with a two-pass LSD radix sort, so
 *     equal keys land in the same short bucket, in O(n) per table;
 *   - moves 12-byte (fingerprint, row) entries, so the scan of a bucket reads
 *     memory sequentially;
 *   - reports a pair only from the first table both fingerprints agree on
 *     (simhash_first_table), so each pair comes out once with no set of pairs.
 */
#include "find_all.h"

#include <math.h>

#include "miscadmin.h"
#include "permute.h"

/* Odd multiplier of Fibonacci hashing: spreads any set of keys over buckets. */
#define GOLDEN_RATIO_64 UINT64CONST(0x9E3779B97F4A7C15)

/* Radix digits of up to 12 bits: the counts fit in L1 cache. */
#define RADIX_DIGIT_MAX_BITS 12
#define BUCKET_MAX_BITS (2 * RADIX_DIGIT_MAX_BITS)

/*
 * A bucket bigger than this that holds several keys is sorted by key before
 * its pairs are compared, so that colliding keys cannot make the scan
 * quadratic.
 */
#define SMALL_BUCKET 64

/*
 * The cost model of simhash_choose_blocks(), in nanoseconds of backend CPU
 * time measured with bench/bench_find_all.py's table (1M rows, distance 3):
 * radix-sorting and scanning one row for one table (about 22 ms per table),
 * and comparing one pair of rows that share a key (4 blocks, whose 16-bit
 * keys give 7.6M such pairs per table, cost 40 ms per table more).
 */
#define COST_ROW_PER_TABLE 22.0
#define COST_PAIR 5.0

/* A fingerprint split in halves so that entries pack into 12 bytes. */
typedef struct TableEntry
{
	uint32		hash_lo;
	uint32		hash_hi;
	uint32		row;
} TableEntry;

/* One table's pass: what its key is and where the pairs go. */
typedef struct TableScan
{
	const SimhashBlocks *layout;
	uint32		table;			/* block bitmap, as simhash_tables() gives it */
	uint64		mask;			/* the table's key bits */
	int			k;
	int			bucket_bits;
	SimhashPairFn emit;
	void	   *arg;
} TableScan;

StaticAssertDecl(sizeof(TableEntry) * 2 == SIMHASH_FIND_PAIRS_BYTES_PER_ROW,
				 "SIMHASH_FIND_PAIRS_BYTES_PER_ROW must match the sort buffers");

static inline uint64
entry_hash(const TableEntry *entry)
{
	return ((uint64) entry->hash_hi << 32) | entry->hash_lo;
}

static inline uint32
bucket_of(const TableScan *scan, uint64 hash)
{
	return (uint32) (((hash & scan->mask) * GOLDEN_RATIO_64) >> (64 - scan->bucket_bits));
}

void
simhash_check_distance(int k)
{
	simhash_check_radius(k);
	if (k >= SIMHASH_MAX_BLOCKS)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_distance %d is too large", k),
				errdetail("Pairs can be searched for within at most %d bits.",
						  SIMHASH_MAX_BLOCKS - 1));
}

void
simhash_check_blocks(int k, int blocks)
{
	uint32	   *tables;

	simhash_check_distance(k);
	if (blocks <= k)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blocks must be greater than max_distance, got blocks %d and max_distance %d",
					   blocks, k),
				errdetail("Fingerprints within k bits agree on at least blocks - k blocks; "
						  "the search needs at least one."),
				errhint("Leave blocks NULL to let the function choose."));
	/* The remaining limits (at most 32 blocks, not too many tables) live there. */
	simhash_tables(blocks, k, &tables);
	pfree(tables);
}

int
simhash_choose_blocks(int k, uint32 n)
{
	int			best = k + 1;
	double		best_cost = INFINITY;

	for (int blocks = k + 1; blocks <= SIMHASH_MAX_BLOCKS; blocks++)
	{
		int64		tables = simhash_table_count(blocks, k);
		double		key_bits = (double) SIMHASH64_BITS * (blocks - k) / blocks;
		/* Random fingerprints share a key of b bits with chance 2^-b. */
		double		pairs = (double) n * n / 2 * pow(2.0, -key_bits);
		double		cost;

		/* C(blocks, k) only grows with blocks. */
		if (tables > SIMHASH_MAX_TABLES)
			break;
		cost = tables * (n * COST_ROW_PER_TABLE + pairs * COST_PAIR);
		if (cost < best_cost)
		{
			best = blocks;
			best_cost = cost;
		}
	}
	return best;
}

/* Bits of bucket number: about two buckets per row, so few share one. */
static int
bucket_bits_for(uint32 n)
{
	return Min(pg_leftmost_one_pos32(Max(n, 1)) + 2, BUCKET_MAX_BITS);
}

/*
 * Puts the rows into out[] ordered by bucket: an LSD radix sort in one pass
 * (through tmp[] in two when the bucket number has more than one digit).
 */
static void
sort_by_bucket(const TableScan *scan, const uint64 *hashes, uint32 n,
			   TableEntry *tmp, TableEntry *out)
{
	int			low_bits = scan->bucket_bits;
	uint32		low_next[1 << RADIX_DIGIT_MAX_BITS] = {0};
	uint32		high_next[1 << RADIX_DIGIT_MAX_BITS] = {0};
	uint32		low_mask;
	uint32		low_sum = 0;
	uint32		high_sum = 0;
	bool		two_passes = low_bits > RADIX_DIGIT_MAX_BITS;
	TableEntry *first = two_passes ? tmp : out;

	if (two_passes)
		low_bits = (scan->bucket_bits + 1) / 2;
	low_mask = ((uint32) 1 << low_bits) - 1;

	for (uint32 i = 0; i < n; i++)
	{
		uint32		bucket = bucket_of(scan, hashes[i]);

		low_next[bucket & low_mask]++;
		high_next[bucket >> low_bits]++;
	}
	/* Counts to the position where each digit's next entry goes. */
	for (uint32 d = 0; d < (1 << RADIX_DIGIT_MAX_BITS); d++)
	{
		uint32		low_count = low_next[d];
		uint32		high_count = high_next[d];

		low_next[d] = low_sum;
		high_next[d] = high_sum;
		low_sum += low_count;
		high_sum += high_count;
	}

	for (uint32 i = 0; i < n; i++)
	{
		TableEntry *entry = &first[low_next[bucket_of(scan, hashes[i]) & low_mask]++];

		entry->hash_lo = (uint32) hashes[i];
		entry->hash_hi = (uint32) (hashes[i] >> 32);
		entry->row = i;
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (!two_passes)
		return;
	for (uint32 i = 0; i < n; i++)
	{
		out[high_next[bucket_of(scan, entry_hash(&tmp[i])) >> low_bits]++] = tmp[i];
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/* Reports a pair within k bits if this table is the first it collides in. */
static void
report_if_first(const TableScan *scan, const TableEntry *a, const TableEntry *b, int distance)
{
	uint64		hash_a = entry_hash(a);
	uint64		hash_b = entry_hash(b);
	uint32		agreeing = simhash_blocks_agreeing(scan->layout, hash_a, hash_b);

	if (simhash_first_table(agreeing, scan->layout->nblocks, scan->k) != scan->table)
		return;
	scan->emit(scan->arg, Min(a->row, b->row), Max(a->row, b->row), distance);
}

/* Compares every pair of entries with equal keys among entries[0..count). */
static void
compare_all(const TableScan *scan, const TableEntry *entries, uint32 count)
{
	for (uint32 i = 0; i + 1 < count; i++)
	{
		uint64		hash_i = entry_hash(&entries[i]);

		for (uint32 j = i + 1; j < count; j++)
		{
			uint64		diff = hash_i ^ entry_hash(&entries[j]);
			int			distance;

			if ((diff & scan->mask) != 0)
				continue;
			distance = pg_popcount64(diff);
			if (distance <= scan->k)
				report_if_first(scan, &entries[i], &entries[j], distance);
		}
		/* Many equal keys make this loop quadratic: stay cancellable. */
		if ((i & 0xFF) == 0xFF)
			CHECK_FOR_INTERRUPTS();
	}
}

static int
compare_keys(const void *a, const void *b, void *mask)
{
	uint64		key_a = entry_hash(a) & *(const uint64 *) mask;
	uint64		key_b = entry_hash(b) & *(const uint64 *) mask;

	return (key_a > key_b) - (key_a < key_b);
}

static bool
keys_all_equal(const TableScan *scan, const TableEntry *entries, uint32 count)
{
	uint64		key = entry_hash(&entries[0]) & scan->mask;

	for (uint32 i = 1; i < count; i++)
		if ((entry_hash(&entries[i]) & scan->mask) != key)
			return false;
	return true;
}

/*
 * The pairs in one bucket.  A big bucket holding several keys (colliding
 * keys, or adversarial input) is sorted by key first and each run of one
 * key compared on its own.
 */
static void
scan_bucket(const TableScan *scan, TableEntry *entries, uint32 count)
{
	uint64		mask = scan->mask;
	uint32		start = 0;

	if (count <= SMALL_BUCKET || keys_all_equal(scan, entries, count))
	{
		compare_all(scan, entries, count);
		return;
	}
	qsort_arg(entries, count, sizeof(TableEntry), compare_keys, &mask);
	for (uint32 i = 1; i <= count; i++)
	{
		if (i < count && compare_keys(&entries[start], &entries[i], &mask) == 0)
			continue;
		compare_all(scan, entries + start, i - start);
		start = i;
	}
}

static void
scan_buckets(const TableScan *scan, TableEntry *sorted, uint32 n)
{
	uint32		start = 0;

	while (start < n)
	{
		uint32		bucket = bucket_of(scan, entry_hash(&sorted[start]));
		uint32		end = start + 1;

		while (end < n && bucket_of(scan, entry_hash(&sorted[end])) == bucket)
			end++;
		if (end - start > 1)
			scan_bucket(scan, sorted + start, end - start);
		start = end;
		CHECK_FOR_INTERRUPTS();
	}
}

void
simhash_find_pairs(const uint64 *hashes, uint32 n, int k, int blocks,
				   SimhashPairFn emit, void *arg)
{
	SimhashBlocks layout;
	uint32	   *tables;
	int			ntables;
	TableEntry *tmp;
	TableEntry *sorted;
	TableScan	scan = {.layout = &layout, .k = k, .emit = emit, .arg = arg};

	simhash_check_blocks(k, blocks);
	if (n < 2)
		return;
	simhash_blocks_init(&layout, blocks);
	ntables = simhash_tables(blocks, k, &tables);
	scan.bucket_bits = bucket_bits_for(n);
	tmp = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(TableEntry) * (Size) n);
	sorted = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(TableEntry) * (Size) n);

	for (int t = 0; t < ntables; t++)
	{
		scan.table = tables[t];
		scan.mask = simhash_table_mask(&layout, tables[t]);
		sort_by_bucket(&scan, hashes, n, tmp, sorted);
		scan_buckets(&scan, sorted, n);
	}
	pfree(tmp);
	pfree(sorted);
	pfree(tables);
}
