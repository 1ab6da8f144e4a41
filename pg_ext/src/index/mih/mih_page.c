/*
 * mih_page.c — the compact run page of simhash_mih (format: mih_page.h):
 * how many sorted entries fit on a page and with which widths, packing
 * them, and checking a page's header before anything is read through it.
 *
 * Layer (mih.h): above mih_utils.c.
 */
#include "index/mih/mih_page.h"

/* Bits needed to hold x (0 for 0). */
static inline int
bits_for(uint64 x)
{
	return x == 0 ? 0 : pg_leftmost_one_pos64(x) + 1;
}

/*
 * Bucket bits for n entries spanning key_bits: 8 to 16 entries a bucket, so
 * a probe reads one short bucket.  Measured at 10M rows (3 runs): against
 * no bucket table (a binary search of the page), 2 bytes/row smaller and k = 8
 * 16 % faster; 4 to 8 or 16 to 32 entries a bucket were as fast and larger
 * (each bucket start is 16 bits, each bucket bit saves one bit an entry).
 */
static inline int
bucket_bits_for(int n, int key_bits)
{
	int			h = n < 16 ? 0 : pg_leftmost_one_pos32((uint32) n) - 3;

	return Min(Min(h, MIH_RUN_MAX_BUCKET_BITS), key_bits);
}

/* The bytes a page of this shape fills after the page header. */
Size
mih_run_size(const MihRunShape *shape)
{
	uint64		rem_bits = (uint64) shape->n * (shape->key_bits - shape->bucket_bits);
	uint64		tid_bits = (uint64) shape->n * (shape->block_bits + shape->offset_bits);

	return offsetof(MihRunPage, bucket_start) + sizeof(uint16) * ((Size) 1 << shape->bucket_bits) +
		(rem_bits + 7) / 8 + (tid_bits + 7) / 8;
}

/* Where mih_run_fit is: the entries it may take, and their TIDs' widths so far. */
typedef struct MihFit
{
	const uint64 *keys;
	const ItemPointerData *tids;
	int			bucket_bits;	/* -1: by the entry count */
	int			known;			/* max_block[i] and max_offset[i] are known for i < known */
	BlockNumber max_block[MIH_RUN_MAX_ENTRIES];	/* of the first i + 1 TIDs */
	OffsetNumber max_offset[MIH_RUN_MAX_ENTRIES];
} MihFit;

/* The shape of a page of the first n entries; whether it fits. */
static bool
fit_shape(MihFit *f, int n, MihRunShape *shape)
{
	if (f->tids)
		for (; f->known < n; f->known++)
		{
			int			i = f->known;

			f->max_block[i] = Max(i > 0 ? f->max_block[i - 1] : 0,
								  ItemPointerGetBlockNumberNoCheck(&f->tids[i]));
			f->max_offset[i] = Max(i > 0 ? f->max_offset[i - 1] : 0,
								   ItemPointerGetOffsetNumberNoCheck(&f->tids[i]));
		}
	shape->n = n;
	shape->key_bits = bits_for(f->keys[n - 1] - f->keys[0]);	/* sorted: the span */
	shape->bucket_bits = f->bucket_bits < 0 ? bucket_bits_for(n, shape->key_bits) :
		Min(f->bucket_bits, shape->key_bits);
	shape->block_bits = f->tids ? bits_for(f->max_block[n - 1]) : 0;
	shape->offset_bits = f->tids ? bits_for(f->max_offset[n - 1]) : 0;
	return n == 1 || mih_run_size(shape) <= MIH_RUN_AREA;
}

/*
 * The shape of the next page: as many of keys[0..avail) (sorted; with their
 * TIDs unless tids is NULL) as fit, at least one.  bucket_bits: -1 chooses
 * them by the entry count; VACUUM passes the page's own, so that a page
 * rewritten with fewer entries never grows.
 *
 * A page's size grows with its entries (their span, TID widths and count),
 * so the most that fit are found by doubling from 64, then bisecting, in
 * about 20 tries rather than one per entry (what a build spends most of its
 * packing time on otherwise); where a bucket bit more makes a page exactly
 * as large (its table doubles as each entry loses a bit), any count found
 * fits.
 */
void
mih_run_fit(const uint64 *keys, const ItemPointerData *tids, int64 avail, int bucket_bits,
			MihRunShape *shape)
{
	MihFit	   *f = palloc(sizeof(MihFit));
	int			most = (int) Min(avail, MIH_RUN_MAX_ENTRIES);
	int			fits = 1;		/* a count known to fit */
	int			over = most + 1;	/* one known not to (or past the end) */
	MihRunShape tried;

	f->keys = keys;
	f->tids = tids;
	f->bucket_bits = bucket_bits;
	f->known = 0;
	for (int n = Min(64, most); over == most + 1; n = Min(2 * n, most))
	{
		if (!fit_shape(f, n, &tried))
			over = n;
		else if (n == most)
			break;
		else
			fits = n;
	}
	if (over == most + 1)
		fits = most;
	while (over - fits > 1)
	{
		int			mid = fits + (over - fits) / 2;

		if (fit_shape(f, mid, &tried))
			fits = mid;
		else
			over = mid;
	}
	fit_shape(f, fits, shape);
	pfree(f);
}

/* ORs the width-bit value into the field at bit `bit` of a zeroed area. */
static inline void
bits_put(uint8 *area, uint64 bit, int width, uint64 value)
{
	uint8	   *p = area + (bit >> 3);
	int			shift = (int) (bit & 7);
	uint64		word;

	if (width == 0)
		return;
	memcpy(&word, p, sizeof(word));
	word |= value << shift;
	memcpy(p, &word, sizeof(word));
	if (shift + width > 64)
		p[8] |= (uint8) (value >> (64 - shift));
}

/*
 * Packs the shape->n first keys (and TIDs) into page, a zeroed buffer of
 * MIH_PAGE_DATA bytes; returns the bytes used.
 */
Size
mih_run_pack(MihRunPage *page, const MihRunShape *shape, const uint64 *keys, const ItemPointerData *tids)
{
	int			nbuckets = 1 << shape->bucket_bits;
	int			rem_bits = shape->key_bits - shape->bucket_bits;
	int			tid_bits = shape->block_bits + shape->offset_bits;
	uint8	   *rems = (uint8 *) &page->bucket_start[nbuckets];
	uint8	   *tid_area = rems + ((uint64) shape->n * rem_bits + 7) / 8;
	uint64		base = shape->n > 0 ? keys[0] : 0;
	int			bucket = 0;

	Assert(mih_run_size(shape) <= MIH_RUN_AREA);
	page->kind = MIH_PAGE_RUN;
	page->n = (uint16) shape->n;
	page->key_bits = (uint8) shape->key_bits;
	page->bucket_bits = (uint8) shape->bucket_bits;
	page->block_bits = (uint8) shape->block_bits;
	page->offset_bits = (uint8) shape->offset_bits;
	page->base = base;
	for (int j = 0; j < shape->n; j++)
	{
		uint64		d = keys[j] - base;
		int			b = shape->bucket_bits > 0 ? (int) (d >> rem_bits) : 0;

		/* Entries are sorted, so buckets only grow: buckets skipped start here. */
		while (bucket < b)
			page->bucket_start[++bucket] = (uint16) j;
		bits_put(rems, (uint64) j * rem_bits, rem_bits,
				 rem_bits == 64 ? d : d & ((UINT64CONST(1) << rem_bits) - 1));
		if (tids)
			bits_put(tid_area, (uint64) j * tid_bits, tid_bits,
					 ((uint64) ItemPointerGetBlockNumberNoCheck(&tids[j]) << shape->offset_bits) |
					 ItemPointerGetOffsetNumberNoCheck(&tids[j]));
	}
	while (bucket < nbuckets - 1)
		page->bucket_start[++bucket] = (uint16) shape->n;
	return mih_run_size(shape);
}

/*
 * Checks the header of run page `page` (block blkno) and sets v up to read
 * it: ERROR naming the block unless every width and count is within what a
 * page can hold.  with_tids: the page belongs to a set's first run.
 */
void
mih_run_view(MihRunView *v, Relation index, BlockNumber blkno, Page page, bool with_tids)
{
	const MihRunPage *run = (const MihRunPage *) PageGetContents(page);
	MihRunShape shape;

	if (run->kind != MIH_PAGE_RUN)
		mih_corrupt(index, blkno, "not a run page (kind 0x%04x)", run->kind);
	shape.n = run->n;
	shape.key_bits = run->key_bits;
	shape.bucket_bits = run->bucket_bits;
	shape.block_bits = run->block_bits;
	shape.offset_bits = run->offset_bits;
	if (shape.n > MIH_RUN_MAX_ENTRIES || shape.key_bits > 64 ||
		shape.bucket_bits > Min(shape.key_bits, MIH_RUN_MAX_BUCKET_BITS) ||
		shape.block_bits > 32 || shape.offset_bits > 16 ||
		mih_run_size(&shape) > MIH_RUN_AREA)
		mih_corrupt(index, blkno, "a run page header out of range (%d entries, key bits %d, bucket bits %d, TID bits %d + %d)",
					shape.n, shape.key_bits, shape.bucket_bits, shape.block_bits, shape.offset_bits);
	if (with_tids ? shape.n > 0 && shape.offset_bits == 0 : shape.block_bits + shape.offset_bits != 0)
		mih_corrupt(index, blkno, with_tids ? "a page of a first run without heap TIDs" :
					"a page of a later run with heap TIDs");
	if (run->bucket_start[0] != 0)
		mih_corrupt(index, blkno, "its first bucket starts at entry %d", run->bucket_start[0]);
	v->index = index;
	v->blkno = blkno;
	v->page = run;
	v->n = shape.n;
	v->nbuckets = 1 << shape.bucket_bits;
	v->key_bits = shape.key_bits;
	v->rem_bits = shape.key_bits - shape.bucket_bits;
	v->bucket_shift = shape.bucket_bits > 0 ? v->rem_bits : 0;
	v->tid_bits = shape.block_bits + shape.offset_bits;
	v->offset_bits = shape.offset_bits;
	v->base = run->base;
	v->rems = (const uint8 *) &run->bucket_start[v->nbuckets];
	v->tids = v->rems + ((uint64) shape.n * v->rem_bits + 7) / 8;
}

/*
 * Every key (and, for a first-run page, TID) of the page, checked to be in
 * order (what VACUUM and merges rewrite them on); returns the count.
 */
int
mih_run_decode(const MihRunView *v, uint64 *keys, ItemPointerData *tids)
{
	MihRunCursor c = {0, 0, mih_run_bucket_end(v, 0, 0)};

	for (; mih_run_key(v, &c, &keys[c.j]); c.j++)
	{
		if (c.j > 0 && keys[c.j] < keys[c.j - 1])
			mih_corrupt(v->index, v->blkno, "entry %d is out of order", c.j);
		if (tids)
			tids[c.j] = mih_run_tid(v, c.j);
	}
	return v->n;
}
