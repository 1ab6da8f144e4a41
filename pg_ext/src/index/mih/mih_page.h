/*
 * mih_page.h — the compact run page of simhash_mih (page format 2): how a
 * sorted run of keys (and, in a set's first run, their heap TIDs) is packed
 * into a page, and how a probe reads it without unpacking it.
 *
 * Why this shape.  The keys of one page are close together: with N rows, a
 * page of P keys spans about P/N of the 64-bit space, so each key is stored
 * as its offset from the page's base key in W bits, W the width of the
 * page's span (about 64 - log2(N/P): 55 bits at 1M rows, 51 at 10M).  The
 * offsets' top h bits name a bucket, and a table of the 2^h buckets' first
 * entries replaces those bits: each entry stores W - h bits, and a probe goes
 * straight to its bucket (about 10 entries) instead of binary-searching the
 * whole page.  Every entry has the same width, so entry j is read directly
 * (no page-linear decoding).  TIDs are packed to block_bits + offset_bits
 * bits, sized to the page's largest block and line pointer.
 *
 * After the page header:
 *
 *   MihRunPage (16 bytes)
 *   bucket_start[2^h]           uint16: the first entry of each bucket
 *   n remainders of W - h bits  from the next byte; entry j at bit j(W - h)
 *   n TIDs of block_bits + offset_bits bits, from the next byte
 *
 * Entry j of bucket b holds the key base + (b << (W - h)) + remainder.  Bit
 * fields are read as unaligned 64-bit words in host byte order (as every
 * PostgreSQL page is).  The last MIH_RUN_SLACK bytes of a page are never
 * used, so reading any field's 9-byte window stays inside the page.
 *
 * Every field of the header is checked (mih_run_view) before anything is
 * read through it, and every bucket start as a probe crosses it, so a
 * corrupted page is an ERROR naming its block in a scan too.
 */
#ifndef SIMHASH_MIH_PAGE_H
#define SIMHASH_MIH_PAGE_H

#include "index/mih/mih.h"

#define MIH_RUN_MAX_ENTRIES 4096	/* bounds a page of equal keys without TIDs */
#define MIH_RUN_MAX_BUCKET_BITS 8
#define MIH_RUN_SLACK 8
#define MIH_RUN_AREA (MIH_PAGE_DATA - MIH_RUN_SLACK)

typedef struct MihRunPage
{
	uint16		kind;			/* MIH_PAGE_RUN */
	uint16		n;				/* entries */
	uint8		key_bits;		/* W: every key is base + a W-bit offset */
	uint8		bucket_bits;	/* h <= W: the offset's top h bits are its bucket */
	uint8		block_bits;		/* TIDs (first run only): block number bits, */
	uint8		offset_bits;	/* line pointer bits; both 0 in later runs */
	uint64		base;			/* the first key when written (a lower bound after VACUUM) */
	uint16		bucket_start[FLEXIBLE_ARRAY_MEMBER];
} MihRunPage;

/* The widths of a run page: what its header says. */
typedef struct MihRunShape
{
	int			n;
	int			key_bits;
	int			bucket_bits;
	int			block_bits;
	int			offset_bits;
} MihRunShape;

/* A run page being read, its header checked (mih_run_view). */
typedef struct MihRunView
{
	Relation	index;			/* for errors */
	BlockNumber blkno;
	const MihRunPage *page;
	const uint8 *rems;			/* the remainders */
	const uint8 *tids;			/* the TIDs */
	int			n;
	int			nbuckets;
	int			key_bits;
	int			rem_bits;
	int			bucket_shift;	/* rem_bits; 0 with one bucket (then every key is in bucket 0) */
	int			tid_bits;
	int			offset_bits;
	uint64		base;
} MihRunView;

/* Where a reader is: entry j, in bucket `bucket`, which ends before entry `end`. */
typedef struct MihRunCursor
{
	int			j;
	int			bucket;
	int			end;
} MihRunCursor;

/* mih_page.c */
extern Size mih_run_size(const MihRunShape *shape);
extern void mih_run_fit(const uint64 *keys, const ItemPointerData *tids, int64 avail,
						int bucket_bits, MihRunShape *shape);
extern Size mih_run_pack(MihRunPage *page, const MihRunShape *shape, const uint64 *keys,
						 const ItemPointerData *tids);
extern void mih_run_view(MihRunView *v, Relation index, BlockNumber blkno, Page page, bool with_tids);
extern int	mih_run_decode(const MihRunView *v, uint64 *keys, ItemPointerData *tids);

/* The width-bit field at bit `bit` of `area` (width 0..64). */
static inline uint64
mih_bits_get(const uint8 *area, uint64 bit, int width)
{
	const uint8 *p = area + (bit >> 3);
	int			shift = (int) (bit & 7);
	uint64		word;

	memcpy(&word, p, sizeof(word));
	word >>= shift;
	if (shift + width > 64)
		word |= (uint64) p[8] << (64 - shift);
	return width >= 64 ? word : word & ((UINT64CONST(1) << width) - 1);
}

/* Where bucket b ends (its successor's start; n for the last), checked. */
static inline int
mih_run_bucket_end(const MihRunView *v, int b, int start)
{
	int			end = b + 1 < v->nbuckets ? v->page->bucket_start[b + 1] : v->n;

	if (end < start || end > v->n)
		mih_corrupt(v->index, v->blkno, "bucket %d ends at entry %d, before its start %d or past the page's %d entries",
					b, end, start, v->n);
	return end;
}

static inline uint64
mih_run_rem(const MihRunView *v, int j)
{
	return mih_bits_get(v->rems, (uint64) j * v->rem_bits, v->rem_bits);
}

/* Places c at the first entry whose key is key or more. */
static inline void
mih_run_seek(const MihRunView *v, uint64 key, MihRunCursor *c)
{
	uint64		d = key - v->base;
	uint64		rem;
	int			low,
				high;

	if (key <= v->base)
	{
		c->j = 0;
		c->bucket = 0;
		c->end = mih_run_bucket_end(v, 0, 0);
		return;
	}
	if (v->key_bits < 64 && (d >> v->key_bits) != 0)
	{
		c->j = c->end = v->n;	/* past every key of the page */
		c->bucket = v->nbuckets - 1;
		return;
	}
	c->bucket = v->nbuckets > 1 ? (int) (d >> v->rem_bits) : 0;
	rem = v->nbuckets > 1 ? d & ((UINT64CONST(1) << v->rem_bits) - 1) : d;
	low = c->bucket == 0 ? 0 : v->page->bucket_start[c->bucket];
	high = c->end = mih_run_bucket_end(v, c->bucket, low);
	while (low < high)
	{
		int			mid = (low + high) / 2;

		if (mih_run_rem(v, mid) < rem)
			low = mid + 1;
		else
			high = mid;
	}
	c->j = low;
}

/* The key at c->j, moving c into its bucket; false past the last entry. */
static inline bool
mih_run_key(const MihRunView *v, MihRunCursor *c, uint64 *key)
{
	while (c->j >= c->end)
	{
		if (c->j >= v->n)
			return false;
		c->bucket++;
		c->end = mih_run_bucket_end(v, c->bucket, c->end);
	}
	*key = v->base + ((uint64) c->bucket << v->bucket_shift) + mih_run_rem(v, c->j);
	return true;
}

/* The TID of entry j (a first-run page), checked (mih_tid_valid). */
static inline ItemPointerData
mih_run_tid(const MihRunView *v, int j)
{
	uint64		packed = mih_bits_get(v->tids, (uint64) j * v->tid_bits, v->tid_bits);
	ItemPointerData tid;

	ItemPointerSet(&tid, (BlockNumber) (packed >> v->offset_bits),
				   (OffsetNumber) (packed & ((UINT64CONST(1) << v->offset_bits) - 1)));
	if (!mih_tid_valid(&tid))
		mih_corrupt(v->index, v->blkno, "entry %d has an invalid heap TID", j);
	return tid;
}

#endif							/* SIMHASH_MIH_PAGE_H */
