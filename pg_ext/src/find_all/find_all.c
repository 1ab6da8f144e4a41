/*
 * find_all.c — every pair of fingerprints within k bits (see find_all.h).
 *
 * Manku's scheme, as simhash-cpp does it: for each table (a choice of
 * blocks - k of the blocks, permute.h) bring together the fingerprints that
 * agree on the table's blocks, and compare only those.  Where simhash-cpp
 * permutes and comparison-sorts all fingerprints per table and keeps a set of
 * the pairs found, this file
 *   - sorts by a hash of the table's key with an LSD radix sort (two passes
 *     up to 2M rows, three beyond), so equal keys land in the same short
 *     bucket, in O(n) per table;
 *   - moves 12-byte (fingerprint, row) entries, so the scan of a bucket reads
 *     memory sequentially;
 *   - reports a pair only from the first table both fingerprints agree on
 *     (simhash_first_table), so each pair comes out once with no set of pairs.
 * simhash_distinct(), for clusters, uses the same bucket sort with the whole
 * fingerprint as the key.
 */
#include "find_all/find_all.h"

#include <math.h>

#include "miscadmin.h"
#include "blocks/permute.h"

/* Odd multiplier of Fibonacci hashing: spreads any set of keys over buckets. */
#define GOLDEN_RATIO_64 UINT64CONST(0x9E3779B97F4A7C15)

/*
 * Radix digits of up to 11 bits; bucket numbers of up to 24 bits (16M
 * buckets, enough for 8M rows to rarely share one, and beyond that buckets
 * just hold more rows), so at most 3 passes.  On 1M and 4M rows, digits of
 * 7, 8 and 11 bits measured the same, staging the scatter's writes per digit
 * (software write-combining) was 20% slower, and an MSD variant scanning
 * each high-digit range while in cache was no faster: this is the simplest.
 */
#define RADIX_DIGIT_MAX_BITS 11
#define BUCKET_MAX_BITS 24
#define RADIX_MAX_PASSES ((BUCKET_MAX_BITS + RADIX_DIGIT_MAX_BITS - 1) / RADIX_DIGIT_MAX_BITS)

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
	simhash_check_blocks_exceed_distance(blocks, k, "Leave blocks NULL to let the function choose.");
	/* The remaining limits (at most 32 blocks, not too many tables) live there. */
	simhash_tables(blocks, k, &tables);
	pfree(tables);
}

int
simhash_choose_blocks(int k, uint32 n)
{
	return simhash_choose_blocks_within(k, n, SIMHASH64_BITS, 0);
}

int
simhash_choose_blocks_within(int k, uint32 n, int free_bits, int required_bits)
{
	int			best = k + 1;
	double		best_cost = INFINITY;

	for (int blocks = k + 1; blocks <= Min(SIMHASH_MAX_BLOCKS, Max(free_bits, k + 1)); blocks++)
	{
		int64		tables = simhash_table_count(blocks, k);
		double		key_bits = required_bits + (double) free_bits * (blocks - k) / blocks;
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
 * Puts the rows into one of the two buffers, ordered by bucket, and returns
 * it: an LSD radix sort, one pass per digit.  The profile puts most of the
 * time of a run here, in the scatter's cache and TLB misses.  (Not
 * radix_sort.c's sort of (key, value) arrays: see why there.)
 */
static TableEntry *
sort_by_bucket(const TableScan *scan, const uint64 *hashes, uint32 n,
			   TableEntry *buffers[2])
{
	int			passes = (scan->bucket_bits + RADIX_DIGIT_MAX_BITS - 1) / RADIX_DIGIT_MAX_BITS;
	int			digit_bits = (scan->bucket_bits + passes - 1) / passes;
	uint32		digit_mask = ((uint32) 1 << digit_bits) - 1;
	uint32		next[RADIX_MAX_PASSES][1 << RADIX_DIGIT_MAX_BITS] = {{0}};

	/* One read of the input counts the digits of every pass. */
	for (uint32 i = 0; i < n; i++)
	{
		uint32		bucket = bucket_of(scan, hashes[i]);

		for (int p = 0; p < passes; p++)
			next[p][(bucket >> (p * digit_bits)) & digit_mask]++;
	}
	/* Counts to the position where each digit's next entry goes. */
	for (int p = 0; p < passes; p++)
	{
		uint32		sum = 0;

		for (uint32 d = 0; d <= digit_mask; d++)
		{
			uint32		count = next[p][d];

			next[p][d] = sum;
			sum += count;
		}
	}

	for (uint32 i = 0; i < n; i++)
	{
		TableEntry *entry = &buffers[0][next[0][bucket_of(scan, hashes[i]) & digit_mask]++];

		entry->hash_lo = (uint32) hashes[i];
		entry->hash_hi = (uint32) (hashes[i] >> 32);
		entry->row = i;
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
	}
	for (int p = 1; p < passes; p++)
	{
		const TableEntry *from = buffers[(p - 1) % 2];
		TableEntry *to = buffers[p % 2];
		int			shift = p * digit_bits;

		for (uint32 i = 0; i < n; i++)
		{
			to[next[p][(bucket_of(scan, entry_hash(&from[i])) >> shift) & digit_mask]++] = from[i];
			SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
		}
	}
	return buffers[(passes - 1) % 2];
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

/* What to do with the entries of one bucket; state is the caller's. */
typedef void (*BucketFn) (const TableScan *scan, TableEntry *entries, uint32 count, void *state);

static void
for_each_bucket(const TableScan *scan, TableEntry *sorted, uint32 n, BucketFn visit, void *state)
{
	uint32		start = 0;

	while (start < n)
	{
		uint32		bucket = bucket_of(scan, entry_hash(&sorted[start]));
		uint32		end = start + 1;

		while (end < n && bucket_of(scan, entry_hash(&sorted[end])) == bucket)
			end++;
		visit(scan, sorted + start, end - start, state);
		start = end;
		CHECK_FOR_INTERRUPTS();
	}
}

static void
scan_bucket_pairs(const TableScan *scan, TableEntry *entries, uint32 count, void *state)
{
	if (count > 1)
		scan_bucket(scan, entries, count);
}

static TableEntry *
alloc_entries(uint32 n)
{
	return MemoryContextAllocHuge(CurrentMemoryContext, sizeof(TableEntry) * (Size) n);
}

void
simhash_find_pairs(const uint64 *hashes, uint32 n, int k, int blocks,
				   SimhashPairFn emit, void *arg)
{
	SimhashBlocks layout;

	simhash_check_blocks(k, blocks);
	simhash_blocks_init(&layout, blocks);
	simhash_find_pairs_within(hashes, n, k, &layout, 0, emit, arg);
}

void
simhash_find_pairs_within(const uint64 *hashes, uint32 n, int k, const SimhashBlocks *layout,
						  uint64 required, SimhashPairFn emit, void *arg)
{
	uint32	   *tables;
	int			ntables;
	TableEntry *buffers[2];
	TableScan	scan = {.layout = layout, .k = k, .emit = emit, .arg = arg};

	ntables = simhash_tables(layout->nblocks, k, &tables);
	if (n < 2)
	{
		pfree(tables);
		return;
	}
	scan.bucket_bits = bucket_bits_for(n);
	buffers[0] = alloc_entries(n);
	buffers[1] = alloc_entries(n);

	for (int t = 0; t < ntables; t++)
	{
		scan.table = tables[t];
		scan.mask = simhash_table_mask(layout, tables[t]) | required;
		for_each_bucket(&scan, sort_by_bucket(&scan, hashes, n, buffers), n,
						scan_bucket_pairs, NULL);
	}
	pfree(buffers[0]);
	pfree(buffers[1]);
	pfree(tables);
}

/* Where simhash_distinct() puts one row of each fingerprint. */
typedef struct DistinctOut
{
	uint64	   *hashes;
	uint32	   *rows;
	uint32		count;
} DistinctOut;

/*
 * Keeps the first entry of each fingerprint in a bucket and joins the others
 * to it.  A bucket holding several fingerprints is sorted first, so equal
 * ones are adjacent.
 */
static void
keep_distinct(const TableScan *scan, TableEntry *entries, uint32 count, void *state)
{
	DistinctOut *out = state;
	uint64		mask = scan->mask;

	if (count > 1 && !keys_all_equal(scan, entries, count))
		qsort_arg(entries, count, sizeof(TableEntry), compare_keys, &mask);
	for (uint32 i = 0; i < count; i++)
	{
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(i);
		if (i > 0 && entry_hash(&entries[i]) == entry_hash(&entries[i - 1]))
		{
			/* The previous entry, or the one it was joined to, is kept. */
			uint32		kept_row = out->rows[out->count - 1];

			scan->emit(scan->arg, Min(kept_row, entries[i].row), Max(kept_row, entries[i].row), 0);
			continue;
		}
		out->hashes[out->count] = entry_hash(&entries[i]);
		out->rows[out->count++] = entries[i].row;
	}
}

uint32
simhash_distinct(const uint64 *hashes, uint32 n, uint64 *distinct_hashes,
				 uint32 *distinct_rows, SimhashPairFn join, void *arg)
{
	TableEntry *buffers[2];
	DistinctOut out = {.hashes = distinct_hashes, .rows = distinct_rows, .count = 0};
	TableScan	scan = {.mask = ~UINT64CONST(0), .emit = join, .arg = arg};

	if (n == 0)
		return 0;
	scan.bucket_bits = bucket_bits_for(n);
	buffers[0] = alloc_entries(n);
	buffers[1] = alloc_entries(n);
	for_each_bucket(&scan, sort_by_bucket(&scan, hashes, n, buffers), n, keep_distinct, &out);
	pfree(buffers[0]);
	pfree(buffers[1]);
	return out.count;
}
