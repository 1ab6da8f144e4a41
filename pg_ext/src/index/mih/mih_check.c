/*
 * mih_check.c — simhash_mih_check(index, heapallindexed): what amcheck is for
 * btree and GIN, for simhash_mih.  It reads every page the metapage reaches
 * and verifies the invariants the scans rely on; with heapallindexed it also
 * verifies that every heap row the index should hold is in every run (a
 * query may find a row through any of them).
 *
 * The pages are untrusted input here: every count is checked against its
 * page's capacity before it is used, every block number against the
 * relation's size, and every page may be reached once only, so a corrupted
 * index gives an ERROR naming the block (SQLSTATE XX002, index_corrupted),
 * never a crash or an endless loop.
 *
 * Only the table's owner (or a superuser) may run it, and PUBLIC has no
 * EXECUTE right until granted, as for amcheck: it blocks the table's writers.
 *
 * heapallindexed follows amcheck: the index's entries of each run go into a
 * Bloom filter (lib/bloomfilter.h) sized by maintenance_work_mem — (fingerprint,
 * TID) for the first run and the pending list, the fingerprint alone for the
 * later runs, which hold no TIDs — and a scan of the heap (as CREATE INDEX
 * reads it, under ShareLock) looks each row up in every run's filter.  A missing entry
 * is found with a probability the filter's size sets (over 99.9 % at its
 * sizing); a reported one is always missing.
 *
 * Layer (mih.h): above mih_utils.c, mih_scope.c and mih_page.c.
 */
#include "index/mih/mih_page.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "lib/bloomfilter.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(simhash_mih_check);

typedef struct MihChecker
{
	Relation	index;
	BlockNumber nblocks;
	bool	   *reached;		/* per block: already reached from the metapage */
	BufferAccessStrategy strategy;
	PGAlignedBlock copy;		/* the page being checked, copied out of its buffer */
	SimhashBlocks blocks;
	int			ntables;
	MihScope	scope;			/* heap rows' fingerprints folded as the index keeps them */
	bloom_filter *runs[MIH_MAX_TABLES]; /* heapallindexed: each run's entries */
} MihChecker;

/* The key of a Bloom filter element: a fingerprint and a TID. */
typedef struct MihCheckEntry
{
	uint64		fp;
	BlockNumber block;
	OffsetNumber offset;
} MihCheckEntry;


/*
 * Copies block blkno into c->copy, after checking that it exists, is not the
 * metapage, and is reached for the first time.
 */
static Page
read_page(MihChecker *c, BlockNumber blkno, const char *reached_as)
{
	Buffer		buffer;

	CHECK_FOR_INTERRUPTS();
	if (blkno == 0 || blkno >= c->nblocks)
		ereport(ERROR,
				errcode(ERRCODE_INDEX_CORRUPTED),
				errmsg("simhash_mih index \"%s\" is corrupted: %s points to block %u, outside blocks 1 to %u",
					   RelationGetRelationName(c->index), reached_as, blkno, c->nblocks - 1));
	if (c->reached[blkno])
		mih_corrupt(c->index, blkno, "reached twice (again as %s)", reached_as);
	c->reached[blkno] = true;
	buffer = ReadBufferExtended(c->index, MAIN_FORKNUM, blkno, RBM_NORMAL, c->strategy);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	memcpy(c->copy.data, BufferGetPage(buffer), BLCKSZ);
	UnlockReleaseBuffer(buffer);
	if (PageIsNew((Page) c->copy.data))
		mih_corrupt(c->index, blkno, "an uninitialized page, reached as %s", reached_as);
	return (Page) c->copy.data;
}

/* Adds an entry to run t's filter: a later run's without its TID (it has none). */
static void
add_entry(MihChecker *c, int t, uint64 fp, ItemPointer tid)
{
	MihCheckEntry entry;

	if (c->runs[t] == NULL)
		return;
	memset(&entry, 0, sizeof(entry));
	entry.fp = fp;
	if (t == 0)
	{
		entry.block = ItemPointerGetBlockNumberNoCheck(tid);
		entry.offset = ItemPointerGetOffsetNumberNoCheck(tid);
	}
	bloom_add_element(c->runs[t], (unsigned char *) &entry, sizeof(entry));
}

static void
check_tid(MihChecker *c, BlockNumber blkno, uint32 j, ItemPointer tid)
{
	if (!mih_tid_valid(tid))
		mih_corrupt(c->index, blkno, "entry %u has an invalid heap TID", j);
}

/*
 * The entries of page blkno (in c->copy) of run t: a sound header
 * (mih_run_view), bucket starts, keys in order and valid TIDs in the first
 * run (mih_run_decode), keys no smaller than *floor, which becomes the
 * page's last key.
 * Returns the number of entries.
 */
static int
check_run_page(MihChecker *c, BlockNumber blkno, int t, uint64 *floor)
{
	MihRunView	view;
	uint64		keys[MIH_RUN_MAX_ENTRIES];
	ItemPointerData tids[MIH_RUN_MAX_ENTRIES];
	int			n;

	mih_run_view(&view, c->index, blkno, (Page) c->copy.data, t == 0);
	n = mih_run_decode(&view, keys, t == 0 ? tids : NULL);
	if (n > 0 && keys[0] < *floor)
		mih_corrupt(c->index, blkno, "its first key is below the keys before it in run %d", t);
	for (int j = 0; j < n; j++)
		add_entry(c, t, unlead(keys[j], c->blocks.mask[t]), &tids[j]);
	if (n > 0)
		*floor = keys[n - 1];
	return n;
}

/*
 * Run t of a run set: its directory chain, the first keys it records (in
 * order, each a lower bound of its page), its pages and their entries.
 */
static int64
check_run(MihChecker *c, const MihRunSet *set, int s, int t)
{
	const char *where = psprintf("the directory of run %d of run set %d", t, s);
	BlockNumber dir_blkno = set->dir_head[t];
	BlockNumber pages = 0;
	int64		entries = 0;
	uint64		floor = 0;

	while (dir_blkno != InvalidBlockNumber)
	{
		MihDirPage *dir = mih_dir_of(read_page(c, dir_blkno, where));
		BlockNumber here = dir_blkno;
		uint32		n = dir->n;
		uint64	   *first_key;
		BlockNumber *blkno;

		if (dir->kind != MIH_PAGE_DIRECTORY)
			mih_corrupt(c->index, here, "not a directory page (kind 0x%04x)", dir->kind);
		if (n > MIH_DIR_CAP)
			mih_corrupt(c->index, here, "directory page holds %u pages, more than the %zu it has room for",
						n, (size_t) MIH_DIR_CAP);
		first_key = palloc(Max(n, 1) * sizeof(uint64));
		blkno = palloc(Max(n, 1) * sizeof(BlockNumber));
		memcpy(first_key, dir->first_key, n * sizeof(uint64));
		memcpy(blkno, dir->blkno, n * sizeof(BlockNumber));
		dir_blkno = dir->next;
		for (uint32 j = 0; j < n; j++)
		{
			if (first_key[j] < floor)
				mih_corrupt(c->index, here, "directory entry %u is below the keys before it", j);
			floor = first_key[j];
			read_page(c, blkno[j], psprintf("page %u of run %d of run set %d", pages, t, s));
			entries += check_run_page(c, blkno[j], t, &floor);
			pages++;
		}
		pfree(first_key);
		pfree(blkno);
	}
	if (pages != set->npages[t])
		ereport(ERROR,
				errcode(ERRCODE_INDEX_CORRUPTED),
				errmsg("simhash_mih index \"%s\" is corrupted: run %d of run set %d has %u pages, the metapage says %u",
					   RelationGetRelationName(c->index), t, s, pages, set->npages[t]));
	if (entries > set->nentries)
		ereport(ERROR,
				errcode(ERRCODE_INDEX_CORRUPTED),
				errmsg("simhash_mih index \"%s\" is corrupted: run %d of run set %d holds " INT64_FORMAT " entries, more than the set's " INT64_FORMAT,
					   RelationGetRelationName(c->index), t, s, entries, set->nentries));
	return entries;
}

/*
 * A run set: each run's pages; every later run holds at least the first
 * run's entries (the same fingerprints, plus any a crash in the middle of a
 * VACUUM left behind).
 */
static void
check_set(MihChecker *c, const MihRunSet *set, int s)
{
	int64		first = check_run(c, set, s, 0);

	for (int t = 1; t < c->ntables; t++)
	{
		int64		entries = check_run(c, set, s, t);

		if (entries < first)
			ereport(ERROR,
					errcode(ERRCODE_INDEX_CORRUPTED),
					errmsg("simhash_mih index \"%s\" is corrupted: run %d of run set %d holds " INT64_FORMAT " entries, fewer than its first run's " INT64_FORMAT,
						   RelationGetRelationName(c->index), t, s, entries, first));
	}
}

/*
 * A pending chain within its count: a lane, from `head` to its `tail` (its
 * count leaves the tail's rows out unless `tail_counted`, an index written
 * before lanes), or the sealed chain a flush is sorting (`tail`
 * InvalidBlockNumber: to the chain's end, every row counted).
 */
static void
check_pending(MihChecker *c, BlockNumber head, BlockNumber tail, int64 count, bool tail_counted, const char *what)
{
	BlockNumber blkno = head;
	int64		entries = 0;
	bool		ended = tail == InvalidBlockNumber;

	if (head == InvalidBlockNumber && count > 0 && ended)
		ereport(ERROR,
				errcode(ERRCODE_INDEX_CORRUPTED),
				errmsg("simhash_mih index \"%s\" is corrupted: %s has no pages, the metapage says " INT64_FORMAT " entries",
					   RelationGetRelationName(c->index), what, count));
	while (blkno != InvalidBlockNumber)
	{
		MihPendingPage *page = mih_pending_of(read_page(c, blkno, what));
		BlockNumber next = page->next;

		if (page->kind != MIH_PAGE_PENDING)
			mih_corrupt(c->index, blkno, "not a pending page (kind 0x%04x)", page->kind);
		if (page->n > MIH_PENDING_CAP)
			mih_corrupt(c->index, blkno, "holds %u entries, more than the %zu a page has room for",
						page->n, (size_t) MIH_PENDING_CAP);
		for (uint32 j = 0; j < page->n; j++)
		{
			check_tid(c, blkno, j, &page->tids[j]);
			for (int t = 0; t < c->ntables; t++)
				add_entry(c, t, page->fps[j], &page->tids[j]);
		}
		if (blkno == tail)
		{
			if (tail_counted)
				entries += page->n;
			ended = true;
			break;
		}
		entries += page->n;
		blkno = next;
	}
	if (!ended)
		ereport(ERROR,
				errcode(ERRCODE_INDEX_CORRUPTED),
				errmsg("simhash_mih index \"%s\" is corrupted: %s ends before block %u, its tail in the metapage",
					   RelationGetRelationName(c->index), what, tail));
	if (entries > count)
		ereport(ERROR,
				errcode(ERRCODE_INDEX_CORRUPTED),
				errmsg("simhash_mih index \"%s\" is corrupted: %s holds " INT64_FORMAT " entries, the metapage says at most " INT64_FORMAT,
					   RelationGetRelationName(c->index), what, entries, count));
}

/* table_index_build_scan's callback: a heap row the index must hold. */
static void
check_heap_row(Relation index, ItemPointer tid, Datum *values, bool *isnull, bool tupleIsAlive, void *arg)
{
	MihChecker *c = (MihChecker *) arg;
	MihCheckEntry entry;
	uint64		fp;

	if (!mih_fold(&c->scope, values, isnull, &fp))
		return;
	for (int t = 0; t < c->ntables; t++)
	{
		/* As add_entry puts it: the TID in the first run only. */
		memset(&entry, 0, sizeof(entry));
		entry.fp = fp;
		if (t == 0)
		{
			entry.block = ItemPointerGetBlockNumber(tid);
			entry.offset = ItemPointerGetOffsetNumber(tid);
		}
		if (bloom_lacks_element(c->runs[t], (unsigned char *) &entry, sizeof(entry)))
			ereport(ERROR,
					errcode(ERRCODE_INDEX_CORRUPTED),
					errmsg("simhash_mih index \"%s\" is corrupted: run %d lacks heap row (%u,%u) with fingerprint " UINT64_FORMAT,
						   RelationGetRelationName(c->index), t, ItemPointerGetBlockNumber(tid),
						   ItemPointerGetOffsetNumber(tid), entry.fp));
	}
}

static void
check_index(MihChecker *c, Relation heap, bool heapallindexed)
{
	Buffer		buffer;
	MihMeta		meta;

	c->nblocks = RelationGetNumberOfBlocks(c->index);
	if (c->nblocks == 0)
		mih_corrupt(c->index, 0, "the index has no metapage");
	c->reached = MemoryContextAllocHuge(CurrentMemoryContext, c->nblocks * sizeof(bool));
	memset(c->reached, 0, c->nblocks * sizeof(bool));
	c->reached[0] = true;
	c->strategy = GetAccessStrategy(BAS_BULKREAD);

	buffer = ReadBufferExtended(c->index, MAIN_FORKNUM, 0, RBM_NORMAL, c->strategy);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	memcpy(c->copy.data, BufferGetPage(buffer), BLCKSZ);
	UnlockReleaseBuffer(buffer);
	if (PageIsNew((Page) c->copy.data))
		mih_corrupt(c->index, 0, "the metapage is uninitialized");
	meta = *mih_meta_of((Page) c->copy.data);
	mih_check_meta(c->index, &meta);
	c->ntables = meta.ntables;
	simhash_blocks_init(&c->blocks, meta.ntables);
	mih_scope_init(&c->scope, c->index);

	if (heapallindexed)
	{
		int64		total = meta.sealed_count;

		for (int i = 0; i < mih_nlanes(&meta); i++)
			total += MIH_LANE(&meta, i)->rows + MIH_PENDING_CAP;

		for (int s = 0; s < meta.nsets; s++)
			total += meta.sets[s].nentries;
		for (int t = 0; t < c->ntables; t++)
			c->runs[t] = bloom_create(Max(total, 1), Max(maintenance_work_mem / c->ntables, 1024),
									  RelationGetRelid(c->index));
	}
	for (int i = 0; i < mih_nlanes(&meta); i++)
		check_pending(c, MIH_LANE(&meta, i)->head, MIH_LANE(&meta, i)->tail, MIH_LANE(&meta, i)->rows,
					  mih_tail_counted(&meta), psprintf("pending lane %d", i));
	if (meta.sealed_count > 0)
		check_pending(c, meta.sealed_head, InvalidBlockNumber, meta.sealed_count, true, "the sealed pending list");
	for (int s = 0; s < meta.nsets; s++)
		check_set(c, &meta.sets[s], s);
	if (heapallindexed)
	{
		IndexInfo  *info = BuildIndexInfo(c->index);

		table_index_build_scan(heap, c->index, info, true, false, check_heap_row, c, NULL);
		for (int t = 0; t < c->ntables; t++)
			bloom_free(c->runs[t]);
	}
}

Datum
simhash_mih_check(PG_FUNCTION_ARGS)
{
	Oid			index_oid = PG_GETARG_OID(0);
	bool		heapallindexed = PG_GETARG_BOOL(1);
	Oid			heap_oid = IndexGetRelation(index_oid, true);
	Relation	heap;
	Relation	index;
	MihChecker	c;

	if (!OidIsValid(heap_oid))
		ereport(ERROR,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg("simhash_mih_check: \"%s\" is not an index",
					   get_rel_name(index_oid) ? get_rel_name(index_oid) : psprintf("%u", index_oid)));
	/* Only the table's owner, before any lock: a check blocks the table's writers. */
	if (!simhash_owns_table(heap_oid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(heap_oid));
	/* ShareLock, as CREATE INDEX takes: no row can come or go meanwhile. */
	heap = table_open(heap_oid, ShareLock);
	index = index_open(index_oid, ShareLock);
	mih_require_index(index, "simhash_mih_check");
	memset(&c, 0, sizeof(c));
	c.index = index;
	check_index(&c, heap, heapallindexed);
	index_close(index, ShareLock);
	table_close(heap, ShareLock);
	PG_RETURN_VOID();
}
