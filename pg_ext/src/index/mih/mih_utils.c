/*
 * mih_utils.c — what every file of simhash_mih may use: its settings and
 * its option `runs` (registered at _PG_init), the one form of every
 * corruption report, a page's allocation, reading and checks, the metapage
 * (written, checked, read, updated), the walks over the pending list's
 * chains, and the check that a relation is a simhash_mih index.  Every page
 * read here is checked before use (kind, counts): a corrupted one is an
 * ERROR naming its block.
 *
 * Layer (mih.h): the bottom: every other file of the index may use it; it
 * uses none of them.
 */
#include "index/mih/mih.h"

#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "access/transam.h"
#include "access/xloginsert.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

/* WITH (runs = m): how many runs (blocks) the index keeps. */
typedef struct MihOptions
{
	int32		vl_len_;
	int			runs;
} MihOptions;

static relopt_kind mih_relopt_kind;

/* The settings (simhash_mih_init), each read by the file of its concern. */
int			mih_pending_limit = 65536;
bool		mih_background_merges = true;
int			mih_merge_nice = MIH_MERGE_NICE_DEFAULT;
bool		mih_debug_busy_tails = false;

/* Called from _PG_init: the index option, the pending-list and worker settings. */
void
simhash_mih_init(void)
{
	mih_relopt_kind = add_reloption_kind();
	add_int_reloption(mih_relopt_kind, "runs",
					  "Sorted runs (blocks) of a simhash_mih index: more is faster at large radii, larger.",
					  MIH_DEFAULT_RUNS, 1, MIH_MAX_TABLES, AccessExclusiveLock);
	DefineCustomIntVariable("simhash.mih_pending_limit",
							"Rows a simhash_mih index keeps unsorted before an insert sorts them into a run set.",
							"Every query reads the unsorted rows whole.",
							&mih_pending_limit, 65536, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("simhash.mih_background_merges",
							 "Whether simhash_mih flushes its pending list, merges run sets and recycles retired pages in background workers.",
							 "Off, or where no worker can start, the insert that fills the pending list flushes it itself, and runs one merge if that made one due; off, inserts recycle.",
							 &mih_background_merges, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("simhash.mih_merge_nice",
							"How much lower than the server's the CPU priority of simhash_mih's merge workers is (a nice increment).",
							"On a server with every core busy, queries and inserts then take a core before a merge does; 0 leaves merges at the server's priority.  Workers read it as they start: set it in the configuration or with ALTER DATABASE.",
							&mih_merge_nice, MIH_MERGE_NICE_DEFAULT, 0, 19,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("simhash.debug_busy_tails",
							 "For tests: simhash_mih scans take every pending lane's tail for one a writer holds.",
							 "They read such tails after every other page, as they do those a writer holds.",
							 &mih_debug_busy_tails, false,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

/* amoptions: WITH (runs = m), checked. */
bytea *
mih_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt parse[] = {{"runs", RELOPT_TYPE_INT, offsetof(MihOptions, runs)}};

	return (bytea *) build_reloptions(reloptions, validate, mih_relopt_kind,
									  sizeof(MihOptions), parse, lengthof(parse));
}

/* The index's runs (its option `runs`, else the default). */
int
mih_runs_of(Relation index)
{
	return index->rd_options ? ((MihOptions *) index->rd_options)->runs : MIH_DEFAULT_RUNS;
}

/*
 * The index a scan of this backend is reading, with the recycling count it
 * started from (mih_scan.c): a page that looks corrupted to that scan may
 * have been recycled under it (on a hot standby), which is not corruption.
 */
static Oid	scan_guard_index = InvalidOid;
static uint64 scan_guard_recycles;

void
mih_scan_guard(Relation index, uint64 nrecycles)
{
	scan_guard_index = index ? RelationGetRelid(index) : InvalidOid;
	scan_guard_recycles = nrecycles;
}

/*
 * The one form of every corruption report: SQLSTATE XX002, the index, the
 * block; or, for a scan whose pages were recycled meanwhile, a retryable
 * serialization failure.
 */
void
mih_corrupt(Relation index, BlockNumber blkno, const char *fmt,...)
{
	char		what[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(what, sizeof(what), fmt, args);
	va_end(args);
	if (OidIsValid(scan_guard_index) && scan_guard_index == RelationGetRelid(index))
	{
		scan_guard_index = InvalidOid;	/* once: the read below may fail too */
		if (mih_counts_now(index).nrecycles != scan_guard_recycles)
			ereport(ERROR,
					errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					errmsg("could not finish a scan of simhash_mih index \"%s\": block %u was recycled meanwhile",
						   RelationGetRelationName(index), blkno),
					errhint("Retry the query.  On a hot standby, recycling follows the primary's flushes."));
	}
	ereport(ERROR,
			errcode(ERRCODE_INDEX_CORRUPTED),
			errmsg("simhash_mih index \"%s\" is corrupted: block %u: %s",
				   RelationGetRelationName(index), blkno, what));
	pg_unreachable();
}

/* A page to write, exclusively locked: a recycled one, else a new one. */
Buffer
mih_new_buffer(Relation index)
{
	bool		need_lock;
	Buffer		buffer;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		buffer = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buffer))
		{
			Page		page = BufferGetPage(buffer);

			/* The FSM is not WAL-logged: trust only pages marked deleted. */
			if (PageIsNew(page) || mih_head_of(page)->kind == MIH_PAGE_DELETED)
				return buffer;
			LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buffer);
	}
	need_lock = !RELATION_IS_LOCAL(index);
	if (need_lock)
		LockRelationForExtension(index, ExclusiveLock);
	buffer = ReadBuffer(index, P_NEW);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	if (need_lock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buffer;
}

/*
 * Locks a pinned buffer in `mode` and checks that it holds a page of this
 * kind whose count fits it (a run page's other fields: mih_run_view).
 */
void
mih_lock_page(Relation index, Buffer buffer, MihPageKind kind, int mode)
{
	LockBuffer(buffer, mode);
	mih_check_locked_page(index, buffer, kind);
}

/* mih_lock_page's checks, of a page the caller has locked (released on an ERROR). */
void
mih_check_locked_page(Relation index, Buffer buffer, MihPageKind kind)
{
	Page		page = BufferGetPage(buffer);
	const char *problem = NULL;
	uint16		found;

	found = PageIsNew(page) ? 0 : mih_head_of(page)->kind;
	if (found != kind)
		problem = psprintf("expected a page of kind 0x%04x, found 0x%04x", kind, found);
	else if (kind == MIH_PAGE_DIRECTORY && mih_head_of(page)->n > MIH_DIR_CAP)
		problem = psprintf("directory page holds %u pages, more than the %zu it has room for",
						   mih_head_of(page)->n, (size_t) MIH_DIR_CAP);
	else if (kind == MIH_PAGE_PENDING && mih_head_of(page)->n > MIH_PENDING_CAP)
		problem = psprintf("pending page holds %u entries, more than the %zu it has room for",
						   mih_head_of(page)->n, (size_t) MIH_PENDING_CAP);
	if (problem)
	{
		BlockNumber blkno = BufferGetBlockNumber(buffer);

		UnlockReleaseBuffer(buffer);
		mih_corrupt(index, blkno, "%s", problem);
	}
}

/* Block blkno, locked in `mode`, checked (mih_lock_page). */
Buffer
mih_read_page(Relation index, BlockNumber blkno, MihPageKind kind, int mode)
{
	Buffer		buffer = ReadBuffer(index, blkno);

	mih_lock_page(index, buffer, kind, mode);
	return buffer;
}

/*
 * The metapage of an empty index, in `fork`: the main fork, or an unlogged
 * table's init fork (ambuildempty), which is WAL-logged whatever the
 * table's persistence: crash recovery copies the init fork over the main
 * one, and replaying this record is what puts the page on disk (generic WAL
 * logs nothing for an unlogged relation, leaving a zeroed page there).
 */
void
mih_init_meta(Relation index, ForkNumber fork, int ntables, int nscope)
{
	Buffer		buffer = ReadBufferExtended(index, fork, P_NEW, RBM_NORMAL, NULL);
	Page		page;
	MihMeta    *meta;

	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	Assert(BufferGetBlockNumber(buffer) == 0);
	page = BufferGetPage(buffer);
	START_CRIT_SECTION();
	PageInit(page, BLCKSZ, 0);
	meta = mih_meta_of(page);
	memset(meta, 0, sizeof(MihMeta));
	meta->magic = MIH_MAGIC;
	meta->version = MIH_VERSION;
	meta->ntables = ntables;
	meta->nscope = nscope;
	meta->sealed_head = InvalidBlockNumber;
	meta->nlanes = MIH_LANES;
	for (int i = 0; i < MIH_LANES; i++)
		MIH_LANE(meta, i)->head = MIH_LANE(meta, i)->tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);
	MarkBufferDirty(buffer);
	if (fork == INIT_FORKNUM || RelationNeedsWAL(index))
		log_newpage_buffer(buffer, true);
	END_CRIT_SECTION();
	UnlockReleaseBuffer(buffer);
}

/*
 * The metapage registered in a generic WAL record, for the caller to change.
 * Its pd_lower is made to cover today's MihMeta: an index built by an older
 * version has a shorter one, and generic WAL zeroes the hole past pd_lower,
 * which would drop every field added since (they read 0 there until then).
 */
MihMeta *
mih_meta_for_update(GenericXLogState *state, Buffer meta_buffer)
{
	Page		page = GenericXLogRegisterBuffer(state, meta_buffer, 0);
	PageHeader	header = (PageHeader) page;
	LocationIndex lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMeta);

	if (header->pd_lower < lower)
		header->pd_lower = lower;
	return mih_meta_of(page);
}

/* Adds a run set to the metapage, which the caller holds exclusively, under a new id. */
void
mih_meta_add_set(MihMeta *meta, const MihRunSet *set)
{
	Assert(meta->nsets < MIH_MAX_SETS);
	meta->set_id[meta->nsets] = ++meta->last_set_id;
	meta->sets[meta->nsets++] = *set;
	meta->generation++;
}

/*
 * Lists what a flush took out of use, with the next transaction id of now:
 * a snapshot that may have read the old layout is older than it.
 */
bool
mih_meta_retire(MihMeta *meta, const MihRetired *what)
{
	if (meta->nretired >= MIH_MAX_RETIRED)
		return false;			/* leaked until the next REINDEX; never unsafe */
	meta->retired_xid[meta->nretired] = U64FromFullTransactionId(ReadNextFullTransactionId());
	meta->retired[meta->nretired++] = *what;
	return true;
}

/*
 * What every reader checks first: a simhash_mih metapage of this page format
 * (another format is an index to REINDEX, not a corrupted one), with every
 * count within the arrays it indexes.
 */
void
mih_check_meta(Relation index, const MihMeta *meta)
{
	if (meta->magic != MIH_MAGIC)
		mih_corrupt(index, 0, "not a simhash_mih metapage");
	if (meta->version != MIH_VERSION)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("index \"%s\" has simhash_mih page format %u, which this version of the simhash extension does not read",
					   RelationGetRelationName(index), meta->version),
				errdetail("This version reads page format %u only.", MIH_VERSION),
				errhint("Rebuild the index: REINDEX INDEX %s;",
						quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
												   RelationGetRelationName(index))));
	if (meta->ntables < 1 || meta->ntables > MIH_MAX_TABLES || meta->nsets < 0 ||
		meta->nsets > MIH_MAX_SETS || meta->nretired < 0 || meta->nretired > MIH_MAX_RETIRED ||
		meta->sealed_count < 0 || meta->nclaimed < 0 || meta->nclaimed > MIH_MAX_SETS ||
		(meta->nlanes != 0 && meta->nlanes != MIH_LANES))
		mih_corrupt(index, 0, "the metapage's counts are out of range (%d runs, %d run sets, %d retired, %d lanes)",
					meta->ntables, meta->nsets, meta->nretired, meta->nlanes);
	/* the metapage as a tail would have an insert wait for its own lock */
	for (int i = 0; i < mih_nlanes(meta); i++)
		if (MIH_LANE(meta, i)->rows < 0 || MIH_LANE(meta, i)->head == 0 || MIH_LANE(meta, i)->tail == 0 ||
			(MIH_LANE(meta, i)->head == InvalidBlockNumber) != (MIH_LANE(meta, i)->tail == InvalidBlockNumber))
			mih_corrupt(index, 0, "pending lane %d names the metapage, a head without a tail, or a negative count", i);
	for (int c = 0; c < meta->nclaimed; c++)
		if (meta->claimed_slot[c] < 0 || meta->claimed_slot[c] >= MIH_MERGE_SLOTS)
			mih_corrupt(index, 0, "claim %d names merge slot %d", c, meta->claimed_slot[c]);
	for (int s = 0; s < meta->nsets; s++)
		if (meta->sets[s].nentries < 0)
			mih_corrupt(index, 0, "run set %d has a negative entry count", s);
	/* The fingerprints are folded with as many scope columns as the index has before its last. */
	if (meta->nscope != IndexRelationGetNumberOfKeyAttributes(index) - 1)
		mih_corrupt(index, 0, "the metapage says %d scope columns, the index has %d",
					meta->nscope, IndexRelationGetNumberOfKeyAttributes(index) - 1);
}

/*
 * The metapage, pinned, and a copy of it, checked: the pages it names stay
 * unrecycled until the caller releases the pin (mih.h).
 */
Buffer
mih_pin_meta(Relation index, MihMeta *meta)
{
	Buffer		buffer = ReadBuffer(index, 0);

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	*meta = *mih_meta_of(BufferGetPage(buffer));
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	mih_check_meta(index, meta);	/* an ERROR's pin goes with the resource owner */
	return buffer;
}

/* A copy of the metapage, checked. */
MihMeta
mih_read_meta(Relation index)
{
	MihMeta		meta;

	ReleaseBuffer(mih_pin_meta(index, &meta));
	return meta;
}

/*
 * The metapage's counts of recycles and of VACUUM's pending passes now.
 * Read without the content lock: the caller may hold a lock on another page
 * of the index, and inserts take the metapage's before a pending page's; an
 * aligned 8-byte read is whole, and a count read late only makes the caller
 * read once more.
 */
MihMetaCounts
mih_counts_now(Relation index)
{
	Buffer		buffer = ReadBuffer(index, 0);
	const volatile MihMeta *meta = mih_meta_of(BufferGetPage(buffer));
	MihMetaCounts counts;

	counts.nrecycles = meta->nrecycles;
	counts.pending_vacuums = meta->pending_vacuums;
	ReleaseBuffer(buffer);
	return counts;
}

/*
 * Page number `pages` (from 0) of the pending list, at blkno, share-locked.
 * A chain longer than the rows it received (each page was added for a row)
 * has a cycle.
 */
Buffer
mih_read_pending(Relation index, BlockNumber blkno, int64 pages, int64 rows)
{
	if (pages >= rows)
		mih_corrupt(index, blkno, "the pending list is longer than the metapage's " INT64_FORMAT " rows", rows);
	return mih_read_page(index, blkno, MIH_PAGE_PENDING, BUFFER_LOCK_SHARE);
}

/*
 * Every page of a pending chain from blkno: up to `last` (a lane's tail:
 * its `next` may name another lane's head, linked by a seal a crash cut
 * short) or the chain's end; at most `rows` pages.
 */
void
mih_visit_chain(Relation index, BlockNumber blkno, BlockNumber last, int64 rows, MihPageVisitor visit, void *arg)
{
	for (int64 pages = 0; blkno != InvalidBlockNumber; pages++)
	{
		Buffer		buffer = mih_read_pending(index, blkno, pages, rows);
		BlockNumber next = mih_pending_of(BufferGetPage(buffer))->next;

		UnlockReleaseBuffer(buffer);
		visit(index, blkno, arg);
		if (blkno == last)
			break;
		blkno = next;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The most pages lane i's chain can have: its rows before the tail (each
 * page but the tail was full when the next was linked), and the tail.
 */
int64
mih_lane_pages_most(const MihMeta *meta, int lane)
{
	return MIH_LANE(meta, lane)->rows + 1;
}

/* Every page of every lane of the metapage `meta`; `rows` > 0: at most that many pages a lane. */
void
mih_visit_lanes(Relation index, const MihMeta *meta, int64 rows, MihPageVisitor visit, void *arg)
{
	for (int i = 0; i < mih_nlanes(meta); i++)
		mih_visit_chain(index, MIH_LANE(meta, i)->head, MIH_LANE(meta, i)->tail,
						rows > 0 ? rows : mih_lane_pages_most(meta, i), visit, arg);
}

/*
 * The pending list's rows: each lane's count and its tail's rows (locked
 * shared).  The caller pins the metapage `meta` was read from and locks no
 * pending page; read with the metapage share-locked, exact (only a seal,
 * under its exclusive lock, changes the lanes; VACUUM only takes rows out).
 */
int64
mih_pending_rows(Relation index, const MihMeta *meta)
{
	int64		rows = 0;

	for (int i = 0; i < mih_nlanes(meta); i++)
	{
		const MihLane *lane = MIH_LANE(meta, i);

		rows += lane->rows;
		if (!mih_tail_counted(meta) && lane->tail != InvalidBlockNumber)
		{
			Buffer		buffer = mih_read_page(index, lane->tail, MIH_PAGE_PENDING, BUFFER_LOCK_SHARE);

			rows += mih_pending_of(BufferGetPage(buffer))->n;
			UnlockReleaseBuffer(buffer);
		}
	}
	return rows;
}

/* Whether an open index is a simhash_mih index: its routine is this handler's (amoptions, above). */
bool
mih_is_index(Relation index)
{
	return index->rd_indam->amoptions == mih_options;
}

/* An ERROR naming the index and `caller` unless it is a simhash_mih index. */
void
mih_require_index(Relation index, const char *caller)
{
	if (!mih_is_index(index))
		ereport(ERROR,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg("%s: index \"%s\" is not a simhash_mih index",
					   caller, RelationGetRelationName(index)));
	mih_scan_guard(NULL, 0);	/* a scan that ended in an ERROR left it set */
}
