/*
 * mih.h — the index access method `simhash_mih`: multi-index
 * hashing over sorted runs that carry the fingerprint, so a candidate is
 * checked inside the index and only true matches reach the heap.
 *
 * The files, in layer order: each uses only the files above it (and the
 * extension's lower subsystems: simhash.h, blocks/, type/, index/ but
 * planner_support.c, which counts balls here: mih_count_within), so they
 * read best top to bottom, after this header.
 *   mih_utils.c         settings and the option `runs`, corruption reports,
 *                       page access, the metapage, the pending list's chains
 *   mih_scope.c         scope columns: the scope's hash folded into fp
 *   mih_page.c          the compact run page (mih_page.h): widths, packing,
 *                       the checked reader
 *   mih_runs.c          runs written page by page, directories, recycling
 *   mih_sort.c          rows sorted into a run set within a memory budget
 *                       (mih_sort.h)
 *   mih_build.c         CREATE INDEX, alone or on parallel workers
 *   mih_flush.c         the sealed pending list sorted into a run set
 *   mih_merge.c         merges of run sets: the policy, claims
 *   mih_worker.c        the background workers that flush and merge
 *   mih_insert.c        inserts: the pending list's lanes, seals
 *   mih_scan_pending.c  a radius query's reading of the pending list
 *                       (mih_scan.h: the query's state)
 *   mih_scan_unindexed.c  the rows the index does not hold (NULLs), from the
 *                       table, for the queries they may match
 *   mih_scan.c          a radius query: probes into every run of every set
 *   mih_scan_order.c    ORDER BY fp <~> q: radii growing, rows by distance
 *   mih_vacuum.c        VACUUM: dead entries out, retired pages recycled
 *   mih_check.c         simhash_mih_check: every page invariant (amcheck's role)
 *   mih_stats.c         simhash_mih_stats: the write path, from the metapage
 *   mih_am.c            the handler: the access method's routine, its costs
 *
 * Layout (log-structured):
 * - block 0, the metapage: the run sets, the pending list, retired pages;
 * - a run set holds the fingerprints of some rows m times, one run per block
 *   t, each sorted by the fingerprint rotated so that block t leads (its
 *   "key"), in compact run pages (mih_page.h: a base key, fixed-width
 *   offsets, a bucket table), and a chain of directory pages (each run
 *   page's first key and block number);
 * - the heap TIDs are stored once, in the first run: a later run holds keys
 *   only, and a match found there takes the TIDs of its fingerprint from the
 *   first run of its set (one more page read per match);
 * - the pending list: new rows, unsorted (fingerprint, TID), in MIH_LANES
 *   chains of pages (lanes: writers append to different tails at once)
 *   that every scan reads whole.  When it reaches
 *   simhash.mih_pending_limit rows, the insert that fills it seals it (the
 *   lanes are joined into one chain, which the metapage names as the sealed
 *   chain, and the lanes start empty) and hands it to a flush worker
 *   (mih_worker.c), which sorts it into a new run set with the metapage
 *   unlocked (mih_flush.c; where no worker can start, the insert flushes
 *   itself); scans read the sealed chain meanwhile, and the new set
 *   replaces it under a brief lock.
 *   Merges of run sets run apart (mih_merge.c: size-tiered, claimed sets
 *   sorted unlocked, in a background worker), so a query probes about
 *   MIH_SET_CAP sets, MIH_PROBED_CAP of them in full.  One flush at a
 *   time: the flusher holds the heavyweight lock MIH_FLUSH_LOCK (inserts
 *   only try for it), which an ERROR or crash releases; the next flusher
 *   takes over a sealed chain it finds.  VACUUM only takes dead entries out.
 * Pages a flush retires are listed in the metapage with the next transaction
 * id of that moment, and recycled once no snapshot that old remains (as
 * nbtree recycles deleted pages): by a flush or merge worker after its job
 * (by an insert where no worker runs, or once the list is full), unless
 * VACUUM's bulk delete, which reads the run sets without a snapshot, holds
 * MIH_VACUUM_LOCK; VACUUM itself recycles the rest once no other backend
 * pins the metapage.  A reader that no horizon protects (a hot standby's
 * scan) is protected by the recycling count: each recycling bumps it
 * (WAL-logged before any page is reused), and a scan that finds it changed
 * at its end scans again (mih_scan.c).
 *
 * Scope columns (mih_scope.c): an index USING simhash_mih (domain, fp) keeps
 * fp XOR a 64-bit hash of the scope values in place of fp, everywhere
 * (runs, pending list); a query folds the hash of its scope into its centre
 * the same way, so it reaches the rows of its own scope exactly as an index
 * without scope would, while another scope's rows land at random places.
 * Below, "fingerprint" means that folded value.
 *
 * Results are rechecked at the heap, so an entry whose TID VACUUM has not yet
 * removed (a flush may copy it between VACUUM's passes) is harmless; so is a
 * fingerprint a later run still holds after VACUUM took it out of the first
 * run (VACUUM takes it out of the first run first, so a crash in between
 * leaves the later runs a superset, which the next merge or REINDEX drops):
 * TIDs come from the first run only.
 *
 * Every page but the metapage starts with (kind, n); every count, width and
 * block number read from a page is checked before use, in scans as in
 * simhash_mih_check, so a corrupted page is an ERROR naming its block.
 */
#ifndef SIMHASH_MIH_H
#define SIMHASH_MIH_H

#include "simhash.h"

#include "access/amapi.h"
#include "access/htup_details.h"
#include "nodes/execnodes.h"
#include "nodes/tidbitmap.h"
#include "port/pg_bitutils.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "blocks/permute.h"

#define MIH_MAGIC 0x53484D49
/*
 * The page format: another one needs REINDEX.  1: every run held (8-byte key,
 * 6-byte TID) per row (42 bytes/row with 3 runs); 2: compact run pages, TIDs
 * in the first run only.  The metapage's first two fields (magic, version)
 * keep their place in every version, so an index of another version is
 * recognized as such.
 */
#define MIH_VERSION 2
#define MIH_DEFAULT_RUNS 3
#define MIH_MAX_TABLES 8
#define MIH_MAX_SETS 16
#define MIH_MAX_RETIRED 32
/*
 * The merge policy (mih_merge.c).  At most MIH_SET_CAP run sets once merges
 * catch up (more while a merge runs, up to MIH_MAX_SETS), of which at most
 * MIH_PROBED_CAP too large for a filter (below; the base among them): a
 * query probes each set with the whole plan, and a large set costs it about
 * as many page reads as the base, while a set with a filter drops about 7
 * probes in 8 unread.  The caps trade a query's probes against merges'
 * rewrites.  At 100M rows built and 20M inserted, 4 sets with no cap on the
 * large ones rewrote 15 rows a row inserted and left 3 large sets beside the
 * base for most of the writes; 4 sets, 2 of them large, 21 rows, and the
 * rewrites of the second large set (up to 20M rows each) slowed inserts and
 * queries while they ran (bench/bench_mih_writes.py; docs/index.md).  Room
 * for small sets is cheap: it lets flushes build up in them before a large
 * set is rewritten.  The largest set (the base) is folded once the others
 * hold 1 / MIH_FOLD_SHARE of its rows.
 */
#define MIH_SET_CAP 5
#define MIH_PROBED_CAP 3
#define MIH_FOLD_SHARE 2
/*
 * simhash.mih_merge_nice's default: how much lower than the server's a
 * merge worker's CPU priority is (mih_worker.c), 0 to 19.  At 10, Linux's
 * scheduler gives a busy merge about a tenth of the share of a busy backend.
 */
#define MIH_MERGE_NICE_DEFAULT 10

/*
 * Filters of small run sets (mih_scan.c).  Every set is probed with the
 * whole plan, but in a set of few rows nearly every probe's key prefix (its
 * block's bits) has no entry, and finding that out still costs a directory
 * search and a page's bucket.  For a set of at most
 * 2^(width - MIH_FILTER_SPARSITY) rows, a scan marks the top F bits of each
 * run's keys, F = ceil(log2(rows)) + MIH_FILTER_SPARSITY (at most one bit in
 * 8 set, so about 7 probes in 8 are dropped unread), at most
 * 2^MIH_FILTER_MAX_BITS bits (256 kB) a run; F <= width, so a probe's range
 * (a prefix of width bits) has one bit.
 */
#define MIH_FILTER_SPARSITY 3
#define MIH_FILTER_MAX_BITS 21

/* The bits of a filter for a set of `rows` rows whose runs' blocks are `width` bits; 0 for none. */
static inline int
mih_filter_bits(int64 rows, int width)
{
	int			bits = (rows <= 1 ? 0 : pg_leftmost_one_pos64((uint64) rows - 1) + 1) + MIH_FILTER_SPARSITY;

	return bits <= Min(width, MIH_FILTER_MAX_BITS) ? bits : 0;
}

/*
 * The pending list's hard bound, in pending limits (mih_insert.c): while a
 * sealed chain waits for its flusher (the worker is behind, or failed), the
 * list grows past simhash.mih_pending_limit up to this many times it, and
 * then the insert that reaches it flushes the sealed chain itself, waiting
 * first for the flusher at it if there is one (inserts past the bound wait
 * for a flush rather than grow the list every query reads).
 */
#define MIH_PENDING_BOUND 2
/*
 * Pending lanes (mih_insert.c): the pending list is this many chains, each
 * with its own tail, so that writers append side by side (each locks the
 * metapage shared and its lane's tail page alone); sealing joins them into
 * one chain.
 */
#define MIH_LANES 8
/*
 * Heavyweight page locks (LockPage) on the index, on block numbers used for
 * nothing else there: one flush at a time; VACUUM's bulk delete against
 * recycling by inserts.
 */
#define MIH_FLUSH_LOCK ((BlockNumber) 0)
#define MIH_VACUUM_LOCK ((BlockNumber) 1)
#define MIH_MERGE_LOCK ((BlockNumber) 2)	/* + the merge slot */
/* Merges at once (mih_merge.c): a long fold of the base, and the small sets' merges beside it. */
#define MIH_MERGE_SLOTS 2
#define MIH_PAGE_DATA (BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define MIH_PENDING_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(ItemPointerData)))
#define MIH_DIR_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(BlockNumber)))
#define MIH_MAX_PROBES 100000

/* The first field of every page but the metapage. */
typedef enum MihPageKind
{
	MIH_PAGE_RUN = 0x5201,
	MIH_PAGE_DIRECTORY = 0x5202,
	MIH_PAGE_PENDING = 0x5203,
	MIH_PAGE_DELETED = 0x52FF	/* recycled: free for reuse */
} MihPageKind;

/*
 * A pending lane: a chain of pending pages, appended to at its tail.  `rows`
 * counts the rows appended to its pages before the tail (a page's rows join
 * it when the next page is linked), so an append to the tail changes the
 * tail page alone; it is at least the chain's pages but one.  In an index
 * written before lanes (the metapage's nlanes 0) lane 0 is the whole pending
 * list and `rows` counts its tail's rows too.
 */
typedef struct MihLane
{
	BlockNumber head;			/* first page, or InvalidBlockNumber */
	BlockNumber tail;
	int64		rows;
} MihLane;

/* One run set: for each run, its directory chain and page count. */
typedef struct MihRunSet
{
	int64		nentries;		/* rows (entries of the first run) when written */
	BlockNumber dir_head[MIH_MAX_TABLES];
	BlockNumber npages[MIH_MAX_TABLES];
} MihRunSet;

/* What a flush or merge took out of use: a run set, or a pending chain. */
typedef struct MihRetired
{
	bool		is_set;
	MihRunSet	set;
	BlockNumber chain_head;
} MihRetired;

typedef struct MihMeta
{
	uint32		magic;
	uint32		version;
	int32		ntables;
	uint32		generation;		/* changes whenever the run sets change */
	int32		nsets;
	MihRunSet	sets[MIH_MAX_SETS];
	MihLane		lane0;			/* the pending list's first lane (where it was before lanes) */
	int32		nretired;
	MihRetired	retired[MIH_MAX_RETIRED];
	/*
	 * Scope columns before the fingerprint (the index's columns but one).
	 * Last, so that an index written before it had one reads 0 here: the
	 * page was zeroed.
	 */
	int32		nscope;
	/*
	 * Added with the merge policy (zero in an older index): each run set's
	 * id, unique in the index's life (0: unknown), for the directory cache
	 * (mih_scan.c); the last id given; merges done, the rows they rewrote,
	 * flushes done.
	 */
	uint64		set_id[MIH_MAX_SETS];
	uint64		last_set_id;
	int64		nmerges;
	int64		merged_rows;
	int64		nflushes;
	/*
	 * Added with flushes off the lock (zero in an older index: no sealed
	 * chain, retired entries recyclable at once): the sealed chain a flush
	 * is sorting (rows 0: none); each retired entry's next transaction id at
	 * retirement (a FullTransactionId's value); recyclings done.
	 */
	BlockNumber sealed_head;
	int64		sealed_count;
	uint64		retired_xid[MIH_MAX_RETIRED];
	uint64		nrecycles;
	/*
	 * Added with merges apart from flushes (zero in an older index): the run
	 * sets merges are rewriting, by id, with each one's merge slot.
	 */
	int32		nclaimed;
	int32		claimed_slot[MIH_MAX_SETS];
	uint64		claimed_id[MIH_MAX_SETS];
	/*
	 * A flush or merge failed since the last VACUUM (a sealed list taken
	 * over, a merge's claims dropped): pages it wrote may be reachable from
	 * nowhere, for VACUUM to find and free (mih_vacuum.c).
	 */
	int32		lost_pages;
	/*
	 * Added with flushes in a worker (zero in an older index): 1 while the
	 * sealed chain waits for its flusher, which has written nothing of it
	 * yet (the sealing insert handed it to a worker): taking it over then
	 * leaves no lost pages.
	 */
	int32		sealed_waits;
	/*
	 * Added with lanes (zero in an older index: the pending list is lane 0
	 * alone, its count with the tail's rows, until an insert under the
	 * metapage's exclusive lock starts the lanes): MIH_LANES or 0; the lanes
	 * after the first.
	 */
	int32		nlanes;
	MihLane		more_lanes[MIH_LANES - 1];
	/*
	 * Added with the scans' copies of pending pages (zero in an older
	 * index): seals done, and VACUUM's passes over the pending pages, each
	 * counted before it removes a row.  A lane's or the sealed chain's pages
	 * are known by its head and the seals, and change (rows removed) only as
	 * the passes count (mih_scan_pending.c).  A pass counts again when it
	 * ends: odd while one is under way (or was cut short).
	 */
	uint64		nseals;
	uint64		pending_vacuums;
} MihMeta;

#define MIH_PENDING_VACUUM_RUNNING(count) ((count) % 2 == 1)

/* Lane i of the metapage `meta` (const or not). */
#define MIH_LANE(meta, i) ((i) == 0 ? &(meta)->lane0 : &(meta)->more_lanes[(i) - 1])

/* The lanes the metapage uses: one in an index written before lanes. */
static inline int
mih_nlanes(const MihMeta *meta)
{
	return meta->nlanes > 0 ? meta->nlanes : 1;
}

/* Whether a lane's `rows` counts its tail page's rows (an index written before lanes). */
static inline bool
mih_tail_counted(const MihMeta *meta)
{
	return meta->nlanes == 0;
}

StaticAssertDecl(sizeof(MihMeta) <= MIH_PAGE_DATA, "metapage fits");

/* What every page but the metapage starts with. */
typedef struct MihPageHead
{
	uint16		kind;			/* MihPageKind */
	uint16		n;				/* entries */
} MihPageHead;

/* A pending page: n unsorted (fingerprint, TID), chained by `next`. */
typedef struct MihPendingPage
{
	uint16		kind;
	uint16		n;
	BlockNumber next;
	uint64		fps[MIH_PENDING_CAP];
	ItemPointerData tids[MIH_PENDING_CAP];
} MihPendingPage;

/* A directory page: the first key and block of n run pages. */
typedef struct MihDirPage
{
	uint16		kind;
	uint16		n;
	BlockNumber next;
	uint64		first_key[MIH_DIR_CAP];
	BlockNumber blkno[MIH_DIR_CAP];
} MihDirPage;

StaticAssertDecl(sizeof(MihPendingPage) <= MIH_PAGE_DATA, "pending page fits");
StaticAssertDecl(sizeof(MihDirPage) <= MIH_PAGE_DATA, "directory page fits");
StaticAssertDecl(MIH_PENDING_CAP <= PG_UINT16_MAX && MIH_DIR_CAP <= PG_UINT16_MAX, "counts fit n");

/* Called with each page of a run or chain. */
typedef void (*MihPageVisitor) (Relation index, BlockNumber blkno, void *arg);

struct GenericXLogState;
struct BufFile;

/*
 * A run being written page by page (mih_runs.c): entries arrive sorted, in
 * batches; a page is packed once MIH_RUN_MAX_ENTRIES entries are waiting
 * (the most a page holds, so its shape is what the whole run would give it).
 */
typedef struct MihRunWriter
{
	Relation	index;
	bool		with_tids;		/* the first run */
	bool		logged;			/* WAL-log each page (a build logs them all at its end) */
	int			start;			/* entries start..n wait */
	int			n;
	uint64	   *keys;
	ItemPointerData *tids;
	int64		npages;
	int64		cap;			/* of first_key and blkno */
	uint64	   *first_key;
	BlockNumber *blkno;
	struct MihRunPage *page;
	struct BufFile *images;		/* not NULL: pages go there, for the leader to copy in */
} MihRunWriter;

/* The scope columns' hash functions (mih_scope.c). */
typedef struct MihScope
{
	int			ncolumns;		/* the index's columns before the fingerprint */
	FmgrInfo   *hash[INDEX_MAX_KEYS];
	Oid			collation[INDEX_MAX_KEYS];
} MihScope;

/* A run's directory in memory: each run page's first key and block. */
typedef struct MihRunDir
{
	BlockNumber npages;
	uint64	   *first_key;
	BlockNumber *blkno;
} MihRunDir;

/* Rotates fp so that the bits of `mask` (contiguous) are the top bits. */
static inline uint64
lead_with(uint64 fp, uint64 mask)
{
	int			s = 63 - pg_leftmost_one_pos64(mask);

	return s == 0 ? fp : (fp << s) | (fp >> (64 - s));
}

/* The inverse of lead_with. */
static inline uint64
unlead(uint64 key, uint64 mask)
{
	int			s = 63 - pg_leftmost_one_pos64(mask);

	return s == 0 ? key : (key >> s) | (key << (64 - s));
}

/* A heap TID in one integer, ordered as TIDs are: what the build sorts and spills. */
static inline uint64
mih_tid_pack(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) | ItemPointerGetOffsetNumberNoCheck(tid);
}

static inline void
mih_tid_unpack(uint64 packed, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (packed >> 16), (OffsetNumber) (packed & 0xFFFF));
}

/*
 * A heap TID an index entry may hold: a valid block and a line pointer the
 * bitmap accepts (1..MaxHeapTuplesPerPage).
 */
static inline bool
mih_tid_valid(ItemPointer tid)
{
	OffsetNumber offset = ItemPointerGetOffsetNumberNoCheck(tid);

	return ItemPointerGetBlockNumberNoCheck(tid) != InvalidBlockNumber &&
		offset != InvalidOffsetNumber && offset <= MaxHeapTuplesPerPage;
}

static inline MihMeta *
mih_meta_of(Page page)
{
	return (MihMeta *) PageGetContents(page);
}

static inline MihPageHead *
mih_head_of(Page page)
{
	return (MihPageHead *) PageGetContents(page);
}

static inline MihPendingPage *
mih_pending_of(Page page)
{
	return (MihPendingPage *) PageGetContents(page);
}

static inline MihDirPage *
mih_dir_of(Page page)
{
	return (MihDirPage *) PageGetContents(page);
}

/*
 * The functions each file gives the files above it, in layer order (the
 * list at the top of this file).
 */

/* mih_utils.c: settings and option, corruption reports, pages, the metapage, pending chains */
extern int	mih_pending_limit;
extern bool mih_background_merges;
extern int	mih_merge_nice;
extern bool mih_debug_busy_tails;
extern void simhash_mih_init(void);
extern bytea *mih_options(Datum reloptions, bool validate);
extern int	mih_runs_of(Relation index);
extern void mih_scan_guard(Relation index, uint64 nrecycles);
simhash_noreturn extern void mih_corrupt(Relation index, BlockNumber blkno, const char *fmt,...) pg_attribute_printf(3, 4);
extern Buffer mih_new_buffer(Relation index);
extern void mih_lock_page(Relation index, Buffer buffer, MihPageKind kind, int mode);
extern void mih_check_locked_page(Relation index, Buffer buffer, MihPageKind kind);
extern Buffer mih_read_page(Relation index, BlockNumber blkno, MihPageKind kind, int mode);
extern void mih_init_meta(Relation index, ForkNumber fork, int ntables, int nscope);
extern MihMeta *mih_meta_for_update(struct GenericXLogState *state, Buffer meta_buffer);
extern void mih_meta_add_set(MihMeta *meta, const MihRunSet *set);
extern bool mih_meta_retire(MihMeta *meta, const MihRetired *what);
extern void mih_check_meta(Relation index, const MihMeta *meta);
extern Buffer mih_pin_meta(Relation index, MihMeta *meta);
extern MihMeta mih_read_meta(Relation index);

/* The metapage's counts a scan checks its reads against, read without its lock. */
typedef struct MihMetaCounts
{
	uint64		nrecycles;
	uint64		pending_vacuums;
} MihMetaCounts;

extern MihMetaCounts mih_counts_now(Relation index);
extern Buffer mih_read_pending(Relation index, BlockNumber blkno, int64 pages, int64 rows);
extern void mih_visit_chain(Relation index, BlockNumber blkno, BlockNumber last, int64 rows,
							MihPageVisitor visit, void *arg);
extern int64 mih_lane_pages_most(const MihMeta *meta, int lane);
extern void mih_visit_lanes(Relation index, const MihMeta *meta, int64 rows, MihPageVisitor visit, void *arg);
extern int64 mih_pending_rows(Relation index, const MihMeta *meta);
extern bool mih_is_index(Relation index);
extern void mih_require_index(Relation index, const char *caller);

/* mih_scope.c: scope columns */
extern void mih_scope_check_columns(Relation index);
extern void mih_scope_init(MihScope *scope, Relation index);
extern uint64 mih_scope_hash(const MihScope *scope, int column, Datum value);
extern uint64 mih_scope_hash_key(const MihScope *scope, Relation index, ScanKey key);
extern uint64 mih_scope_combine(const MihScope *scope, const uint64 *hashes);
extern bool mih_fold(const MihScope *scope, const Datum *values, const bool *isnull, uint64 *fp);

/* mih_runs.c: run sets written and read, retired pages recycled */
extern BlockNumber mih_write_page(Relation index, const void *contents, Size size, bool logged);
extern void mih_run_writer_begin(MihRunWriter *w, Relation index, bool with_tids, bool logged);
extern void mih_run_writer_add(MihRunWriter *w, const uint64 *keys, const uint64 *tids, int n);
extern BlockNumber mih_run_writer_end(MihRunWriter *w, BlockNumber *npages);
extern BlockNumber mih_run_copy_images(Relation index, struct BufFile *images, BlockNumber *npages);
extern void mih_read_directory(Relation index, const MihRunSet *set, int t, MemoryContext context,
							   MihRunDir *dir);
extern void mih_free_directory(MihRunDir *dir);
extern void mih_visit_run(Relation index, const MihRunSet *set, int t, bool directory_too,
						  MihPageVisitor visit, void *arg);
extern int	mih_take_retired(Relation index, Buffer meta_buffer, bool by_horizon, MihRetired *retired);
extern void mih_free_retired(Relation index, const MihRetired *retired, int nretired, int ntables);
extern void mih_try_recycle(Relation index);

/* mih_build.c: CREATE INDEX */
extern IndexBuildResult *mih_build(Relation heap, Relation index, IndexInfo *indexInfo);
extern void mih_buildempty(Relation index);
extern char *mih_build_phase_name(int64 phase);

/* mih_flush.c: the sealed pending list sorted into a run set */
extern bool mih_retired_full(const MihMeta *meta);
extern bool mih_flush_has_room(const MihMeta *meta);
extern bool mih_flush(Relation index, int memory_kb, bool wait);

/* mih_merge.c: merges of run sets, apart from flushes */
extern bool mih_merge_due(const MihMeta *meta);
extern bool mih_stale_claims(Relation index, const MihMeta *meta);
extern bool mih_slot_free(Relation index);
extern int	mih_unclaimed_sets(const MihMeta *meta);
extern void mih_merge(Relation index, int steps);

/* mih_worker.c: the background workers that flush and merge */
extern bool mih_background(Relation index);
extern void mih_after_flush(Relation index);
extern bool mih_flush_in_background(Relation index);

/* mih_insert.c */
extern bool mih_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
					   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
					   IndexInfo *indexInfo);

/*
 * mih_scan_pending.c, mih_scan_unindexed.c, mih_scan.c: a radius query
 * (mih_scan.h); the rows of a ball counted, for the planner
 * (planner_support.c, above simhash_mih)
 */
extern int64 mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern int64 mih_count_within(Relation index, uint64 center, int k, int64 limit, int max_probes);

/* mih_scan_order.c: the ordering scan, and every scan's state */
extern IndexScanDesc mih_beginscan(Relation index, int nkeys, int norderbys);
extern void mih_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys, ScanKey orderbys, int norderbys);
extern void mih_endscan(IndexScanDesc scan);
extern bool mih_gettuple(IndexScanDesc scan, ScanDirection dir);

/* mih_vacuum.c */
extern IndexBulkDeleteResult *mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback, void *callback_state);
extern IndexBulkDeleteResult *mih_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats);

/* mih_check.c, mih_stats.c: SQL functions (simhash_mih_check, simhash_mih_stats); mih_am.c: the handler */
extern void simhash_mih_planner_init(void);

#endif							/* SIMHASH_MIH_H */
