/*
 * mih.h — the index access method `simhash_mih`: multi-index
 * hashing over sorted runs that carry the fingerprint beside the TID, so a
 * candidate is checked inside the index and only true matches reach the heap.
 *
 * Layout (log-structured):
 * - block 0, the metapage: the run sets, the pending list, retired pages;
 * - a run set holds every entry (fingerprint, TID) of some rows m times, one
 *   run per block t: entries sorted by the fingerprint rotated so that block
 *   t leads, packed MIH_PAGE_CAP to a page, and a chain of directory pages
 *   (each run page's first key and block number);
 * - the pending list: new rows, unsorted, in a chain of pages that every
 *   scan reads whole.  When it reaches simhash.mih_pending_limit rows, the
 *   inserting backend sorts it into a new run set; VACUUM merges the run sets
 *   into one.
 * Pages a flush or merge retires are listed in the metapage and recycled by
 * the next VACUUM, after it has waited for every scan holding a pin on the
 * metapage (a scan pins it from reading the layout until it is done).
 *
 * Results are rechecked at the heap, so an entry whose TID VACUUM has not yet
 * removed (a flush may copy it between VACUUM's passes) is harmless.
 */
#ifndef SIMHASH_MIH_H
#define SIMHASH_MIH_H

#include "simhash.h"

#include "access/amapi.h"
#include "nodes/execnodes.h"
#include "nodes/tidbitmap.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "blocks/permute.h"

#define MIH_MAGIC 0x53484D49
#define MIH_VERSION 1			/* of the page format: another one needs REINDEX */
#define MIH_DEFAULT_RUNS 3
#define MIH_MAX_TABLES 8
#define MIH_MAX_SETS 16
#define MIH_MAX_RETIRED 32
#define MIH_PAGE_DATA (BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define MIH_PAGE_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(ItemPointerData)))
#define MIH_DIR_CAP ((MIH_PAGE_DATA - 8) / (sizeof(uint64) + sizeof(BlockNumber)))
#define MIH_MAX_PROBES 100000
#define MIH_DELETED PG_UINT32_MAX	/* `n` of a recycled page */

/* One run set: for each run, its directory chain and page count. */
typedef struct MihRunSet
{
	int64		nentries;
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
	BlockNumber pending_head;	/* first pending page, or InvalidBlockNumber */
	BlockNumber pending_tail;
	int64		pending_count;
	int32		nretired;
	MihRetired	retired[MIH_MAX_RETIRED];
} MihMeta;

StaticAssertDecl(sizeof(MihMeta) <= MIH_PAGE_DATA, "metapage fits");

/*
 * A run page: n keys, then n TIDs, at fixed offsets.  Pending pages have the
 * same form, with unrotated fingerprints, chained by `next`.
 */
typedef struct MihRunPage
{
	uint32		n;
	BlockNumber next;
	uint64		keys[MIH_PAGE_CAP];
	ItemPointerData tids[MIH_PAGE_CAP];
} MihRunPage;

/* A directory page: the first key and block of n run pages. */
typedef struct MihDirPage
{
	uint32		n;
	BlockNumber next;
	uint64		first_key[MIH_DIR_CAP];
	BlockNumber blkno[MIH_DIR_CAP];
} MihDirPage;

StaticAssertDecl(sizeof(MihRunPage) <= MIH_PAGE_DATA, "run page fits");
StaticAssertDecl(sizeof(MihDirPage) <= MIH_PAGE_DATA, "directory page fits");

/* Entries of rows being sorted into a run set. */
typedef struct MihEntries
{
	uint64	   *fps;
	ItemPointerData *tids;
	int64		n;
	int64		cap;
} MihEntries;

/* Called with each page of a run or chain. */
typedef void (*MihPageVisitor) (Relation index, BlockNumber blkno, void *arg);

/* Collects the entries of a run page (keys unrotated with `mask`, 0 for pending). */
typedef struct MihCollect
{
	MihEntries *entries;
	uint64		mask;
} MihCollect;

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

static inline MihMeta *
mih_meta_of(Page page)
{
	return (MihMeta *) PageGetContents(page);
}

static inline MihRunPage *
mih_run_of(Page page)
{
	return (MihRunPage *) PageGetContents(page);
}

static inline MihDirPage *
mih_dir_of(Page page)
{
	return (MihDirPage *) PageGetContents(page);
}

/* mih_am.c */
extern void simhash_mih_init(void);
extern int	mih_runs_of(Relation index);
extern int	mih_pending_limit;

/* mih_runs.c: pages, run sets, the metapage */
extern Buffer mih_new_buffer(Relation index);
extern BlockNumber mih_write_page(Relation index, const void *contents, Size size);
extern void mih_entries_init(MihEntries *e);
extern void mih_entries_add(MihEntries *e, uint64 fp, ItemPointer tid);
extern MihRunSet mih_write_set(Relation index, const SimhashBlocks *blocks, MihEntries *e);
extern void mih_visit_run(Relation index, const MihRunSet *set, int t, bool directory_too,
						  MihPageVisitor visit, void *arg);
extern void mih_visit_chain(Relation index, BlockNumber blkno, MihPageVisitor visit, void *arg);
extern void mih_collect_page(Relation index, BlockNumber blkno, void *arg);
extern void mih_init_meta(Relation index, ForkNumber fork, int ntables);
extern void mih_meta_add_set(MihMeta *meta, const MihRunSet *set);
extern bool mih_meta_retire(MihMeta *meta, const MihRetired *what);
extern void mih_check_meta(Relation index, const MihMeta *meta);
extern MihMeta mih_read_meta(Relation index);

/* mih_build.c, mih_insert.c, mih_vacuum.c, mih_scan.c: the access method's entry points */
extern IndexBuildResult *mih_build(Relation heap, Relation index, IndexInfo *indexInfo);
extern void mih_buildempty(Relation index);
extern bool mih_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
					   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
					   IndexInfo *indexInfo);
extern IndexBulkDeleteResult *mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback, void *callback_state);
extern IndexBulkDeleteResult *mih_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats);
extern int64 mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);

#endif							/* SIMHASH_MIH_H */
