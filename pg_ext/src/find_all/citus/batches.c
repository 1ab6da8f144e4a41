/*
 * batches.c — rows into batches and pairs back, for the Citus parts of
 * find_all and clusters (batches.h): the entries' encoding, the run's
 * passes and parts, a source's rows scattered into batches, the pairs of a
 * bucket packed.  Layer: the bottom of citus/; it calls the engine, the
 * query's reading and the result below it.
 */
#include "find_all/citus/batches.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "find_all/find_all_query.h"
#include "find_all/find_all_spill.h"

/* The most bytes an entry takes in a batch: the hash, and a varint of up to 10. */
#define BATCH_ENTRY_MAX_BYTES (sizeof(uint64) + 10)

/*
 * The batches being filled, one per part, share this much memory (a batch
 * holds BATCH_MIN_ROWS to BATCH_MAX_ROWS entries): enough rows that the
 * per-row costs of the COPY files vanish, and little enough that the
 * batches stay in the CPU's caches, and that each is an ordinary allocation
 * (not an mmap of its own, fresh pages each time).
 */
#define BATCH_BUFFER_BYTES (2 * 1024 * 1024)
#define BATCH_MIN_ROWS 256
#define BATCH_MAX_ROWS 2048

/* Appends an entry to a batch at out, after the key *last_key; returns the end. */
static inline char *
encode_entry(char *out, uint64 hash, uint64 key, uint64 *last_key)
{
	uint64		delta = key - *last_key;
	uint64		zigzag = (delta << 1) ^ (uint64) ((int64) delta >> 63);
	uint64		wire = pg_hton64(hash);

	*last_key = key;
	memcpy(out, &wire, sizeof(wire));
	out += sizeof(wire);
	while (zigzag >= 0x80)
	{
		*out++ = (char) (zigzag | 0x80);
		zigzag >>= 7;
	}
	*out++ = (char) zigzag;
	return out;
}

/*
 * The search for pairs within k bits over `rows` rows in all, for entries
 * [0..n): the layout simhash_find_all would choose for that many rows, and
 * its passes (search->npasses, each cut by search->pass_mask[pass]).  Every
 * source and bucket of a run derives the same from the same arguments.
 */
void
simhash_citus_passes(int k, int64 rows, SimhashSearch *search, SimhashStripes *stripes,
					 SimhashEntry *entries, Size n, SimhashPairFn emit, void *arg)
{
	SimhashBlocks layout;

	simhash_check_distance(k);
	if (rows < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("rows must be 0 or more, got " INT64_FORMAT, rows));
	simhash_blocks_init(&layout, simhash_choose_blocks(k, (Size) rows));
	simhash_stripes_init(stripes, entries, n, 1, NULL);
	simhash_search_init(search, k, &layout, 0, stripes, emit, arg);
	/* simhash_partition_rows() numbers the parts so. */
	if (search->npasses != k + 1)
		elog(ERROR, "simhash: a search within %d bits has %d passes, not %d", k, search->npasses, k + 1);
}

/*
 * The part of the rows whose bits under the pass's mask are those of hash:
 * the bucket from the top 32 bits of their mix (times buckets, shifted, as
 * a modulo would but without the division), salted per pass.
 */
static inline int
part_of(uint64 hash, uint64 mask, uint64 salt, uint64 buckets, int npasses, int pass)
{
	uint64		mixed = simhash_mix64((hash & mask) ^ salt);

	return (int) (((mixed >> 32) * buckets) >> 32) * npasses + pass;
}

/*
 * At most this many parts (buckets times passes): a source keeps a batch's
 * state for each (32 MB at most).
 */
#define MAX_PARTS (1 << 20)

/* ERROR unless buckets is a usable number of buckets for passes passes. */
void
simhash_check_buckets(int buckets, int npasses)
{
	if (buckets < 1 || buckets > MAX_PARTS / npasses)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("buckets must be between 1 and %d, got %d", MAX_PARTS / npasses, buckets));
}

/* Reads the (id, fingerprint) rows of sql for a run within k bits over `rows` rows in buckets. */
void
simhash_scatter_init(SimhashScatter *scatter, text *sql, Oid fingerprint_type, int k, int64 rows,
					 int buckets)
{
	SimhashStripes none;

	scatter->context = CurrentMemoryContext;
	simhash_citus_passes(k, rows, &scatter->passes, &none, NULL, 0, NULL, NULL);
	simhash_check_buckets(buckets, scatter->passes.npasses);
	scatter->buckets = buckets;
	scatter->nparts = buckets * scatter->passes.npasses;
	scatter->batch_rows = (int) Max(BATCH_MIN_ROWS, Min(BATCH_MAX_ROWS,
														BATCH_BUFFER_BYTES / BATCH_ENTRY_MAX_BYTES / scatter->nparts));
	scatter->batches = palloc0(sizeof(SimhashBatch) * scatter->nparts);
	for (int pass = 0; pass < scatter->passes.npasses; pass++)
		scatter->salt[pass] = simhash_mix64((uint64) pass + 1);

	simhash_rows_init(&scatter->input, "simhash_find_all_distributed", 0, true);
	simhash_read_query(sql, fingerprint_type, &scatter->input);
	scatter->rows = NULL;
	if (scatter->input.spill != NULL)
	{
		simhash_rows_finish_spill(&scatter->input);
		scatter->rows = palloc(sizeof(SimhashEntry) * SIMHASH_ROWS_CHUNK);
	}
	scatter->chunk = 0;
	scatter->nrows = 0;
	scatter->row = 0;
	scatter->pass = 0;
	scatter->flushed = 0;
}

/* Rows read (for the spilled ones, their file) are done with. */
void
simhash_scatter_end(SimhashScatter *scatter)
{
	if (scatter->input.spill != NULL)
		simhash_entry_file_close(scatter->input.spill);
}

/* Whether there is a row to send, moving to the next chunk when one is done. */
static bool
scatter_has_row(SimhashScatter *scatter)
{
	SimhashRows *input = &scatter->input;

	if (scatter->row < scatter->nrows)
		return true;
	CHECK_FOR_INTERRUPTS();
	scatter->row = 0;
	if (input->spill != NULL)
		scatter->nrows = simhash_entry_file_read(input->spill, scatter->rows, SIMHASH_ROWS_CHUNK);
	else if (scatter->chunk < input->nchunks)
	{
		Size		first = (Size) scatter->chunk * SIMHASH_ROWS_CHUNK;

		if (scatter->rows != NULL)
			pfree(scatter->rows);
		scatter->rows = input->chunks[scatter->chunk++];
		scatter->nrows = Min(input->count - first, SIMHASH_ROWS_CHUNK);
	}
	else
		scatter->nrows = 0;
	return scatter->nrows > 0;
}

/*
 * Sends rows into the batches until one is full, then every batch left:
 * the part whose batch is to go out (then simhash_scatter_sent()), or -1
 * when all rows are out.
 */
int
simhash_scatter_next(SimhashScatter *scatter)
{
	/*
	 * In locals: the entries are written a byte at a time, and a char store
	 * may alias any field of *scatter, which would be read again each time.
	 */
	const int	npasses = scatter->passes.npasses;
	const uint64 buckets = (uint64) scatter->buckets;
	const int	batch_rows = scatter->batch_rows;
	SimhashBatch *const batches = scatter->batches;
	uint64		mask[SIMHASH_MAX_BLOCKS];
	uint64		salt[SIMHASH_MAX_BLOCKS];

	memcpy(mask, scatter->passes.pass_mask, sizeof(uint64) * npasses);
	memcpy(salt, scatter->salt, sizeof(uint64) * npasses);
	while (scatter_has_row(scatter))
	{
		const SimhashEntry *rows = scatter->rows;
		Size		nrows = scatter->nrows;
		Size		row = scatter->row;
		int			pass = scatter->pass;

		for (; row < nrows; row++, pass = 0)
		{
			uint64		hash = rows[row].hash;
			uint64		key = rows[row].key;

			for (; pass < npasses; pass++)
			{
				int			part = part_of(hash, mask[pass], salt[pass], buckets, npasses, pass);
				SimhashBatch *batch = &batches[part];

				if (unlikely(batch->buffer == NULL))
				{
					batch->buffer = MemoryContextAlloc(scatter->context, SIMHASH_BATCH_PREFIX_BYTES +
													   (Size) batch_rows * BATCH_ENTRY_MAX_BYTES);
					batch->end = batch->buffer + SIMHASH_BATCH_PREFIX_BYTES;
				}
				batch->end = encode_entry(batch->end, hash, key, &batch->last_key);
				if (unlikely(++batch->count == batch_rows))
				{
					/* Back here at the next call: the same row's next pass, or the next row. */
					scatter->row = pass + 1 < npasses ? row : row + 1;
					scatter->pass = pass + 1 < npasses ? pass + 1 : 0;
					return part;
				}
			}
		}
		scatter->row = row;
		scatter->pass = 0;
	}
	while (scatter->flushed < scatter->nparts)
	{
		int			part = scatter->flushed++;

		if (batches[part].count > 0)
			return part;
	}
	return -1;
}

/* The batch has gone out: it is empty again. */
void
simhash_scatter_sent(SimhashScatter *scatter, int part)
{
	SimhashBatch *batch = &scatter->batches[part];

	batch->end = batch->buffer + SIMHASH_BATCH_PREFIX_BYTES;
	batch->count = 0;
	batch->last_key = 0;
}

void
simhash_pairs_init(FunctionCallInfo fcinfo, SimhashPairBatches *out)
{
	simhash_result_init(fcinfo, &out->sink);
	out->batch = palloc(VARHDRSZ + SIMHASH_PAIRS_PER_BATCH * SIMHASH_PAIR_BYTES);
	out->count = 0;
	out->pairs = 0;
}

/* The batch as a row (pairs, batch). */
void
simhash_pairs_flush(SimhashPairBatches *out)
{
	Datum		values[2] = {Int32GetDatum(out->count), PointerGetDatum(out->batch)};
	bool		nulls[2] = {false, false};

	if (out->count == 0)
		return;
	SET_VARSIZE(out->batch, VARHDRSZ + out->count * SIMHASH_PAIR_BYTES);
	tuplestore_putvalues(out->sink.store, out->sink.desc, values, nulls);
	out->count = 0;
}

/* The pairs of a batch (bytea) into the result. */
void
simhash_pairs_unpack(const bytea *batch, SimhashResultSink *sink)
{
	const char *data = VARDATA_ANY(batch);
	Size		len = VARSIZE_ANY_EXHDR(batch);

	if (len % SIMHASH_PAIR_BYTES != 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash_unpack_pairs: a batch of %zu bytes is not a whole number of pairs", len));
	for (Size at = 0; at < len; at += SIMHASH_PAIR_BYTES)
	{
		uint64		wire[2];

		memcpy(wire, data + at, sizeof(wire));
		simhash_result_put(sink, (int64) pg_ntoh64(wire[0]), (int64) pg_ntoh64(wire[1]),
						   (uint8) data[at + sizeof(wire)]);
	}
}
