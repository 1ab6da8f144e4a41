/*
 * mih_scan_pending.c — a radius query's reading of simhash_mih's pending
 * list: the sealed chain a flush is sorting and every lane, each row
 * compared with the centre.
 *
 * Copies.  Reading a pending page costs a buffer lookup, a pin and a lock,
 * and its rows are compared where the buffer pool put them; with 40,000
 * pending rows that was about half of a query's time at k = 3 beyond a
 * freshly built index's.  But between two seals a lane grows only at its
 * tail: every page before the tail is full and stays as it is, and the
 * sealed chain stays as it is until the flush that retires it.  So a
 * backend copies the rows of such pages as it reads them, chain by chain,
 * each chain's into one array, and its next query compares the copied rows
 * there and reads only the pages after them.
 *
 * Why a copy stays right.  A pending page changes only
 *   - at a lane's tail, which is never copied;
 *   - by VACUUM, which removes rows, after counting its pass in the
 *     metapage (pending_vacuums): copies made under another count are
 *     dropped;
 *   - when it is reused after recycling, which follows the flush of its
 *     chain, so a seal: a chain is known by its head page and the
 *     metapage's count of seals (nseals), and a copy is used only under the
 *     head and count it was made under.
 * On a hot standby, where a page can be recycled under a scan, a pass that
 * must be repeated drops every copy (mih_scan_radius).
 *
 * Layer (mih.h): above mih_utils.c; below mih_scan.c, which calls it.
 */
#include "index/mih/mih_scan.h"
#include "type/hamming.h"

#include "port/atomics.h"
#include "utils/memutils.h"

/*
 * Rows copied for one index in one backend at most (14 bytes each, 3.5 MB;
 * about 4 MB as the arrays grow by doubling):
 * the pending list's own bound at the default limit, with a sealed chain
 * beside it.  Pages past it are read from the buffer pool as before.
 */
#define MIH_COPIES_MOST_ROWS (4 * 65536)
/* Rows compared at a time (at least a page's). */
#define MIH_COMPARE_STEP 4096

/* The rows of a chain's first pages, copied in chain order. */
typedef struct MihChainCopy
{
	BlockNumber head;			/* the chain's first page, or InvalidBlockNumber */
	uint64		nseals;			/* the metapage's count of seals when copied */
	BlockNumber next;			/* the page after the copied ones */
	int64		npages;
	int			nrows;
	int			room;
	uint64	   *fps;
	ItemPointerData *tids;
} MihChainCopy;

/* One index's copies (hung on the scan's directory cache, mih_scan.c). */
typedef struct MihPendingCopies
{
	MemoryContext context;
	uint64		pending_vacuums;	/* the metapage's count the copies were made under */
	int64		nrows;			/* in every chain */
	MihChainCopy chains[1 + MIH_LANES]; /* the sealed chain, then each lane */
} MihPendingCopies;

static void
mih_forget_chain(MihPendingCopies *copies, MihChainCopy *c, BlockNumber head, uint64 nseals)
{
	copies->nrows -= c->nrows;
	c->head = head;
	c->nseals = nseals;
	c->next = InvalidBlockNumber;
	c->npages = 0;
	c->nrows = 0;
}

MihPendingCopies *
mih_pending_copies_create(MemoryContext parent)
{
	MemoryContext context = AllocSetContextCreate(parent, "simhash_mih pending copies", ALLOCSET_DEFAULT_SIZES);
	MihPendingCopies *copies = MemoryContextAllocZero(context, sizeof(MihPendingCopies));

	copies->context = context;
	mih_pending_copies_forget(copies);
	return copies;
}

/* Hangs the copies under another context (a new directory cache's). */
void
mih_pending_copies_adopt(MihPendingCopies *copies, MemoryContext parent)
{
	MemoryContextSetParent(copies->context, parent);
}

void
mih_pending_copies_forget(MihPendingCopies *copies)
{
	for (int i = 0; i < lengthof(copies->chains); i++)
		mih_forget_chain(copies, &copies->chains[i], InvalidBlockNumber, 0);
}

/*
 * Copies the rows of `page` (block blkno, locked in `buffer`) after the
 * chain's, with their TIDs checked once here; false when the index's copies
 * have no room for them.
 */
static bool
mih_copy_page(MihPendingCopies *copies, MihChainCopy *c, BlockNumber blkno, const MihPendingPage *page,
			  Relation index, Buffer buffer)
{
	int			n = page->n;

	if (copies->nrows + n > MIH_COPIES_MOST_ROWS)
		return false;
	for (int j = 0; j < n; j++)
		if (!mih_tid_valid((ItemPointer) &page->tids[j]))
		{
			UnlockReleaseBuffer(buffer);
			mih_corrupt(index, blkno, "entry %d has an invalid heap TID", j);
		}
	if (c->nrows + n > c->room)
	{
		int			room = Max(c->room * 2, Max(c->nrows + n, (int) MIH_PENDING_CAP * 8));

		c->fps = c->fps ? repalloc(c->fps, room * sizeof(uint64))
			: MemoryContextAlloc(copies->context, room * sizeof(uint64));
		c->tids = c->tids ? repalloc(c->tids, room * sizeof(ItemPointerData))
			: MemoryContextAlloc(copies->context, room * sizeof(ItemPointerData));
		c->room = room;
	}
	memcpy(c->fps + c->nrows, page->fps, n * sizeof(uint64));
	memcpy(c->tids + c->nrows, page->tids, n * sizeof(ItemPointerData));
	c->nrows += n;
	copies->nrows += n;
	c->npages++;
	c->next = page->next;
	return true;
}

/*
 * Adds the TIDs of rows[0..n) within the query's balls to the matches: a
 * page's rows (locked in `buffer`, block blkno), each TID checked as it
 * matches, or copied ones (buffer InvalidBuffer), checked when copied.
 */
static void
mih_compare_rows(MihProbe *s, const uint64 *fps, ItemPointerData *tids, int n, Buffer buffer,
				 BlockNumber blkno)
{
	int			hits[MIH_COMPARE_STEP];

	for (int from = 0; from < n; from += MIH_COMPARE_STEP)
	{
		int			nhits = simhash_within_many(fps + from, 1, Min(n - from, MIH_COMPARE_STEP),
												s->center, s->k, hits);

		for (int h = 0; h < nhits; h++)
		{
			int			j = from + hits[h];

			if (!mih_in_other_balls(s, fps[j]))
				continue;
			if (BufferIsValid(buffer) && !mih_tid_valid(&tids[j]))
			{
				UnlockReleaseBuffer(buffer);
				mih_corrupt(s->index, blkno, "entry %d has an invalid heap TID", j);
			}
			mih_found(s, &tids[j], fps[j]);
		}
	}
}

/*
 * A lane's tail, share-locked, or InvalidBuffer when a writer holds it: the
 * scan reads it after every other page.  Waiting on a page lock sleeps, and
 * on a machine with every core busy a woken backend waits for a core too
 * (milliseconds), though the writer holds the tail for an append's few
 * microseconds: by the time the rest is read, it is most likely free.
 */
static Buffer
mih_try_tail(MihProbe *s, BlockNumber blkno)
{
	Buffer		buffer = ReadBuffer(s->index, blkno);

	if (mih_debug_busy_tails || !ConditionalLockBuffer(buffer))
	{
		ReleaseBuffer(buffer);
		s->busy_tails[s->nbusy_tails++] = blkno;
		return InvalidBuffer;
	}
	mih_check_locked_page(s->index, buffer, MIH_PAGE_PENDING);
	return buffer;
}

/*
 * A lane's tail a writer still holds after every other page was read, read
 * without its lock (only pinned), or false where that read cannot be
 * trusted and the caller waits for the lock.  A writer that holds a tail
 * only appends: the page is rewritten with every byte the same except the
 * count and the new row's, so the rows below the count a read sees are
 * whole, but for the last one, which may be the row being appended (a
 * transaction in progress, which this scan's snapshot does not see) or a
 * row of before (which it may).  So a read whose last row is within the
 * query's balls waits for the lock.  The count is two bytes a copy may
 * write one at a time: from h:FF to h+1:00 it may read h:00 or h+1:FF,
 * so a count whose low byte is 00 or FF is not trusted either.  VACUUM,
 * which takes rows out, counts its pass in the metapage before and after:
 * no such read while the count is odd (a pass may be compacting this very
 * page), and a change of it after the read discards the read; pages are
 * recycled only after a seal (on a hot standby, under a scan: the
 * metapage's count of recycles changes, which discards it too).
 */
static bool
mih_scan_busy_tail(MihProbe *s, BlockNumber blkno, const MihMeta *meta)
{
	Buffer		buffer = ReadBuffer(s->index, blkno);
	const volatile MihPendingPage *page = mih_pending_of(BufferGetPage(buffer));
	uint16		kind = page->kind,
				n = page->n;
	uint64		fps[MIH_PENDING_CAP];
	ItemPointerData tids[MIH_PENDING_CAP];
	int			hits[MIH_PENDING_CAP];
	int			nhits;
	MihMetaCounts now;

	pg_read_barrier();
	if (MIH_PENDING_VACUUM_RUNNING(meta->pending_vacuums) || kind != MIH_PAGE_PENDING ||
		n == 0 || n > MIH_PENDING_CAP || (n & 0xff) == 0 || (n & 0xff) == 0xff)
	{
		ReleaseBuffer(buffer);
		return false;
	}
	memcpy(fps, (const uint64 *) page->fps, n * sizeof(uint64));
	memcpy(tids, (const ItemPointerData *) page->tids, n * sizeof(ItemPointerData));
	ReleaseBuffer(buffer);
	pg_read_barrier();
	now = mih_counts_now(s->index);
	if (now.pending_vacuums != meta->pending_vacuums || now.nrecycles != meta->nrecycles)
		return false;
	nhits = simhash_within_many(fps, 1, n, s->center, s->k, hits);
	for (int h = 0; h < nhits; h++)
		if (hits[h] == n - 1 || !mih_tid_valid(&tids[hits[h]]))
			return false;
	for (int h = 0; h < nhits; h++)
	{
		if (!mih_in_other_balls(s, fps[hits[h]]))
			continue;
		mih_found(s, &tids[hits[h]], fps[hits[h]]);
	}
	return true;
}

/*
 * Every entry of a pending chain from blkno, up to `last` (a lane's tail) or
 * its end, compared: the rows copied in `c` (if given, and still its
 * chain's, else it starts anew), then the pages after them, copying those
 * before `last`; with `defer`, a tail a writer holds is left for later
 * (s->busy_tails).
 */
static void
mih_scan_chain(MihProbe *s, MihChainCopy *c, BlockNumber blkno, BlockNumber last, int64 rows, uint64 nseals,
			   bool defer)
{
	int64		pages = 0;
	bool		copying = c != NULL;

	if (c && (c->head != blkno || c->nseals != nseals))
		mih_forget_chain(s->copies, c, blkno, nseals);
	if (c && c->npages > 0)
	{
		mih_compare_rows(s, c->fps, c->tids, c->nrows, InvalidBuffer, InvalidBlockNumber);
		pages = c->npages;
		blkno = c->next;
	}
	for (; blkno != InvalidBlockNumber; pages++)
	{
		BlockNumber here = blkno;
		Buffer		buffer;
		MihPendingPage *page;

		if (defer && here == last && pages < rows && s->nbusy_tails < MIH_LANES)
		{
			if (!BufferIsValid(buffer = mih_try_tail(s, here)))
				break;
		}
		else
			buffer = mih_read_pending(s->index, blkno, pages, rows);
		page = mih_pending_of(BufferGetPage(buffer));
		mih_compare_rows(s, page->fps, page->tids, page->n, buffer, here);	/* n checked on reading */
		if (copying && here != last)
			copying = mih_copy_page(s->copies, c, here, page, s->index, buffer);
		blkno = here == last ? InvalidBlockNumber : page->next;
		UnlockReleaseBuffer(buffer);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The sealed chain and each lane up to its tail in this copy of the
 * metapage (a row a later page holds was inserted after this scan's
 * snapshot), compared; the tails writers held, last.
 */
void
mih_scan_pending_list(MihProbe *s, const MihMeta *meta)
{
	MihPendingCopies *copies = s->copies;

	if (copies->pending_vacuums != meta->pending_vacuums)
	{
		mih_pending_copies_forget(copies);
		copies->pending_vacuums = meta->pending_vacuums;
	}
	if (meta->sealed_count > 0)	/* an older index has 0, not InvalidBlockNumber, as its head */
		mih_scan_chain(s, &copies->chains[0], meta->sealed_head, InvalidBlockNumber, meta->sealed_count,
					   meta->nseals, false);
	s->nbusy_tails = 0;
	for (int i = 0; i < mih_nlanes(meta); i++)
		mih_scan_chain(s, &copies->chains[1 + i], MIH_LANE(meta, i)->head, MIH_LANE(meta, i)->tail,
					   mih_lane_pages_most(meta, i), meta->nseals, true);
	for (int i = 0; i < s->nbusy_tails; i++)
		if (!mih_scan_busy_tail(s, s->busy_tails[i], meta))
			mih_scan_chain(s, NULL, s->busy_tails[i], s->busy_tails[i], 1, meta->nseals, false);
}
