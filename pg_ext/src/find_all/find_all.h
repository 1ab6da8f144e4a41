/*
 * find_all.h — every pair of fingerprints within k bits, the engine behind
 * simhash_find_all() and simhash_clusters().  It works on arrays of entries
 * (entry_sort.h) and knows nothing of SQL, of parallel workers or of files:
 * serial runs call simhash_search_all(); find_all_parallel.c hands out the
 * same steps (stripes, then units, pass after pass) to several processes.
 *
 * The search, after Manku et al.: for each table (a choice of m - k of the
 * layout's m blocks), the entries that agree on the table's blocks are
 * brought together and compared.  Tables are grouped into passes by their
 * lowest block.  A pass first orders each stripe of the array (a fixed slice
 * of it) by that block, which cuts the stripe into pieces, one per unit; a
 * unit is then the pieces of all stripes with the same leading bits of the
 * block, a few thousand entries, and every table of the pass is searched
 * unit by unit inside the CPU's caches.  Two entries that agree on a
 * table's blocks agree on its lowest block, so they are in the same unit.
 *
 * The files of find_all/ in layers, bottom-up (a newcomer reads them so):
 * each calls into the files listed before it, never into those after.
 *
 * The engine, which knows nothing of SQL:
 *   entry_sort.c           the entries' radix sort, partitions and scatters
 *   progress.c             progress NOTICEs (simhash.progress_interval)
 *   find_all.c             the search (this header)
 *   find_all_spill.c       the search past maintenance_work_mem, through files
 *   find_all_parallel.c    the search on parallel workers
 *   clusters.c             union-find over the pairs
 * Reading (rows in) and the result (rows out):
 *   find_all_row_buffer.c  the rows as read, within the budget; the ids' errors
 *   find_all_read.c        a plain table's rows straight from its heap
 *   find_all_query.c       a query's rows through SPI (or find_all_read.c)
 *   find_all_result.c      a set-returning function's tuplestore
 * The SQL entry points, the top, which call nothing above them and not each
 * other:
 *   find_all_sql.c         simhash_find_all(), simhash_clusters()
 *   citus/                 simhash_find_all_distributed() and
 *                          simhash_clusters_distributed() on Citus:
 *                          batches.c (rows into batches, pairs back) below
 *                          results.c (Citus's intermediate results) below the
 *                          SQL functions of each node: shard.c, bucket.c,
 *                          coordinator.c; coarse_parts.c (1.1's)
 */
#ifndef SIMHASH_FIND_ALL_H
#define SIMHASH_FIND_ALL_H

#include "blocks/permute.h"
#include "find_all/entry_sort.h"
#include "simhash.h"

/* At most 2^SIMHASH_UNIT_MAX_BITS units in a pass (find_all.c). */
#define SIMHASH_UNIT_MAX_BITS 16

/*
 * Called once per pair of entries within k bits with their keys, key1 <
 * key2.  Only keys: a parallel worker's pairs reach the backend through a
 * file.
 */
typedef void (*SimhashPairFn) (void *arg, uint64 key1, uint64 key2, int distance);

/*
 * The array as a pass sees it: nstripes stripes of stripe_rows entries (the
 * last one shorter), each cut into 2^unit_bits pieces.  Piece u of stripe s
 * is entries[piece_start[s * (units + 1) + u] .. piece_start[s * (units + 1)
 * + u + 1]).
 */
typedef struct SimhashStripes
{
	SimhashEntry *entries;
	Size		n;
	int			nstripes;
	Size		stripe_rows;
	int			unit_bits;
	Size	   *piece_start;
} SimhashStripes;

/* One process's working memory for stripes of some size. */
typedef struct SimhashWorkspace
{
	Size	   *bucket_start;	/* buckets (simhash_scatter_entries) */
	Size	   *bucket_next;
	int			bucket_bits;	/* the widest partition the counts hold */
	SimhashEntry *scratch;		/* a unit's entries by bucket */
	Size		scratch_rows;
	SimhashEntry *stripe_scratch;	/* a stripe by unit */
	Size		stripe_scratch_rows;
} SimhashWorkspace;

/*
 * A search: its layout, its tables grouped by pass, where pairs go, and one
 * process's working memory.
 */
typedef struct SimhashSearch
{
	int			k;
	SimhashBlocks layout;
	uint64		required;		/* bits every pair agrees on anyway (citus/coarse_parts.c) */
	SimhashBlocks coarse;		/* with coarse_table: report only pairs whose */
	uint32		coarse_table;	/* first table in coarse is this one (0: all) */
	int			ntables;
	uint32	   *tables;			/* block bitmaps, ordered by pass */
	int			npasses;
	int			pass_start[SIMHASH_MAX_BLOCKS + 1]; /* pass p: tables[pass_start[p] ..
													 * pass_start[p + 1]) */
	uint64		pass_mask[SIMHASH_MAX_BLOCKS];	/* the bits a pass orders by */
	SimhashPairFn emit;
	void	   *arg;
	SimhashWorkspace work;
} SimhashSearch;

/* ERROR unless pairs within k bits can be searched for (0 <= k < 32). */
extern void simhash_check_distance(int k);

/*
 * ERROR unless blocks can find pairs within k bits (k < blocks <= 32, and
 * not too many tables).
 */
extern void simhash_check_blocks(int k, int blocks);

/* The number of blocks the cost model expects to be fastest for n rows. */
extern int	simhash_choose_blocks(int k, Size n);

/*
 * The same for a search of pairs that also agree on required_bits more bits:
 * blocks cut from free_bits bits.
 */
extern int	simhash_choose_blocks_within(int k, Size n, int free_bits, int required_bits);

/*
 * A search for pairs within k bits that also agree on every bit of required:
 * each table's key is its blocks plus required, and a pair is reported from
 * the first of the layout's tables it agrees on.  The layout must pass
 * simhash_tables(layout->nblocks, k).  The working memory is sized for
 * stripes (simhash_stripes_init) of n entries.  Allocates in
 * CurrentMemoryContext.
 */
extern void simhash_search_init(SimhashSearch *search, int k, const SimhashBlocks *layout,
								uint64 required, const SimhashStripes *stripes,
								SimhashPairFn emit, void *arg);

/*
 * Reports only the pairs whose first table among coarse's blocks (k of
 * them: simhash_first_table(agreeing, coarse->nblocks, k)) is coarse_table.
 */
extern void simhash_search_filter(SimhashSearch *search, const SimhashBlocks *coarse,
								  uint32 coarse_table);

/*
 * A process's search buffers for n rows beyond their 18 bytes each (the
 * entry, its share of the stripes' buffers): a unit's scratch and the
 * bucket counts, from 400 kB up to a few MB.
 */
extern Size simhash_search_fixed_bytes(Size n);

/* How many passes a search of the layout at distance k makes (its tables' lowest blocks). */
extern int	simhash_search_passes(const SimhashBlocks *layout, int k);

/* Frees what simhash_search_init() allocated. */
extern void simhash_search_free(SimhashSearch *search);

/*
 * The stripes of entries[0..n) for a search by `participants` processes;
 * piece_start is palloc'd unless given (a shared one, of
 * simhash_stripes_piece_bytes()).  Writes nothing there: every process of a
 * parallel run calls this; each pass's partition sets the pieces.
 */
extern void simhash_stripes_init(SimhashStripes *stripes, SimhashEntry *entries, Size n,
								 int participants, Size *piece_start);
extern Size simhash_stripes_piece_bytes(Size n, int participants);

static inline Size
simhash_stripes_units(const SimhashStripes *stripes)
{
	return (Size) 1 << stripes->unit_bits;
}

/* Orders one stripe into its pieces for a pass. */
extern void simhash_partition_stripe(SimhashSearch *search, int pass, SimhashStripes *stripes,
									 int stripe);

/* The orders a pass cuts units by, and a table groups its key by. */
extern SimhashSortBy simhash_pass_order(const SimhashSearch *search, int pass);
extern SimhashSortBy simhash_table_order(const SimhashSearch *search, uint32 table);

/*
 * The pairs that table number `table` (an index into search->tables)
 * reports among entries[0..n), which hold every entry of its key they
 * share.
 */
extern void simhash_search_table(SimhashSearch *search, int table, SimhashEntry *entries, Size n);

/*
 * For a group of entries that all share a table's key (too many for memory
 * at once, compared a part at a time): the pairs among group[0..n), and
 * those between each of others[0..m) and the group.
 */
extern void simhash_compare_group(const SimhashSearch *search, int table, const SimhashEntry *group,
								  Size n);
extern void simhash_compare_across(const SimhashSearch *search, int table, const SimhashEntry *group,
								   Size n, const SimhashEntry *others, Size m);

/* Every pair of one unit that a table of the pass reports. */
extern void simhash_search_unit(SimhashSearch *search, int pass, const SimhashStripes *stripes,
								Size unit);

/* The steps of a search, for progress: each pass's stripes and units. */
extern uint64 simhash_search_steps(const SimhashSearch *search, const SimhashStripes *stripes);

/*
 * One pass over the stripes in this process (its stripes, then its units),
 * counting its steps into *done of total for progress (done NULL: the caller
 * reports progress itself).
 */
extern void simhash_search_pass(SimhashSearch *search, int pass, SimhashStripes *stripes,
								uint64 *done, uint64 total);

/* Every pass over entries[0..n) in this process: each pair within k bits, exactly once. */
extern void simhash_search_all(SimhashSearch *search, SimhashStripes *stripes);

/*
 * Calls emit for every pair of entries[0..n) within k bits, exactly once
 * each, in no particular order (reordering the entries).
 */
extern void simhash_find_pairs(SimhashEntry *entries, Size n, int k, int blocks,
							   SimhashPairFn emit, void *arg);

/*
 * Keeps one entry of each distinct fingerprint among entries[0..n), moved to
 * the front; returns how many.  Every other entry is joined by join(arg,
 * ..., 0) to the kept entry with its fingerprint: a spanning tree of each
 * group of equal fingerprints, not all its pairs.
 */
extern Size simhash_distinct(SimhashEntry *entries, Size n, SimhashPairFn join, void *arg);

/*
 * simhash_distinct() in steps, for a parallel run: each stripe ordered by
 * the whole fingerprint; each unit's distinct entries kept over its pieces
 * (returns how many); then every unit's kept entries together at the front
 * (returns how many in all).
 */
extern void simhash_distinct_partition_stripe(SimhashWorkspace *work, SimhashStripes *stripes,
											  int stripe);
extern Size simhash_distinct_unit(SimhashWorkspace *work, const SimhashStripes *stripes, Size unit,
								  SimhashPairFn join, void *arg);
extern Size simhash_distinct_compact(const SimhashStripes *stripes, const Size *kept);

/*
 * Whether two of entries[0..n) have one key (*key: which), found by units
 * and buckets of the key as a pass makes them (no sort of the whole array);
 * the entries are reordered.
 */
extern bool simhash_repeated_key(SimhashEntry *entries, Size n, uint64 *key);

/* A process's buffers for stripes (simhash_search_init makes its own). */
extern void simhash_workspace_init(SimhashWorkspace *work, const SimhashStripes *stripes);
extern void simhash_workspace_free(SimhashWorkspace *work);

#endif							/* SIMHASH_FIND_ALL_H */
