/*
 * find_all_shuffle.c — simhash_find_all_distributed() and
 * simhash_clusters_distributed() on Citus (docs/citus.md): each shard's rows
 * streamed to the search's passes, and each bucket searched where it lands.
 *
 * The single-node search (find_all.h) groups its tables into passes by
 * their lowest block, and each pass needs at once only the entries that
 * share its block's bits.  Each row is therefore sent once per pass, to the
 * bucket that the bits of the pass's block hash to, and each bucket searches
 * that pass's tables over the rows it received: the same work as one node,
 * tables and units alike, spread over the buckets.  A pair is reported from
 * the first table it agrees on, which belongs to one pass, whose block both
 * agree on, so the pair sits in one bucket: exactly once over the cluster.
 *
 * The rows travel as batches, a bytea of entries per "part", part = bucket
 * * passes + pass, in Citus's intermediate results: a file per shard and
 * bucket, COPY's binary format of rows (part integer, batch bytea), which
 * fetch_intermediate_results() copies from node to node (the SQL,
 * simhash_partition_rows, says which).  Their bytes are most of the cost of
 * the move (each is written to a file, sent, written again, read), so an
 * entry is its hash (8 bytes, network order) and its key as the difference
 * from the batch's previous key (a zigzag varint): ids read in order differ
 * by little, and an entry takes 10 or 11 bytes instead of 16.
 *
 * The files are written and read here directly where Citus keeps them
 * (result_directory()): worker_partition_query_result() and
 * read_intermediate_results() would put every batch through COPY's
 * machinery and a tuplestore, copies that cost more than the search.
 * Where they are not found (another Citus), those functions do the work.
 */
#include "simhash.h"

#include <sys/stat.h>
#include <unistd.h>

#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "storage/fd.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "find_all/clusters.h"
#include "find_all/find_all.h"
#include "find_all/find_all_distributed.h"
#include "find_all/find_all_row_buffer.h"
#include "find_all/find_all_spill.h"
#include "find_all/find_all_query.h"
#include "find_all/find_all_result.h"
#include "find_all/progress.h"
#include "type/simhash64.h"

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

/* Reads the entry at in (before end), after the key *last_key; returns its end, NULL if cut short. */
static inline const char *
decode_entry(const char *in, const char *end, SimhashEntry *entry, uint64 *last_key)
{
	uint64		wire;
	uint64		zigzag = 0;
	int			shift = 0;
	uint8		byte;

	if (end - in < (ptrdiff_t) sizeof(wire) + 1)
		return NULL;
	memcpy(&wire, in, sizeof(wire));
	in += sizeof(wire);
	do
	{
		if (in == end || shift > 63)
			return NULL;
		byte = (uint8) *in++;
		zigzag |= (uint64) (byte & 0x7F) << shift;
		shift += 7;
	} while (byte & 0x80);
	entry->hash = pg_ntoh64(wire);
	entry->key = *last_key + ((zigzag >> 1) ^ (~(zigzag & 1) + 1));
	*last_key = entry->key;
	return in;
}

/*
 * The search for pairs within k bits over `rows` rows in all, for entries
 * [0..n): the layout simhash_find_all would choose for that many rows, and
 * its passes (search->npasses, each cut by search->pass_mask[pass]).  Every
 * source and bucket of a run derives the same from the same arguments.
 */
static void
search_passes(int k, int64 rows, SimhashSearch *search, SimhashStripes *stripes, SimhashEntry *entries,
			  Size n, SimhashPairFn emit, void *arg)
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
static void
check_buckets(int buckets, int npasses)
{
	if (buckets < 1 || buckets > MAX_PARTS / npasses)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("buckets must be between 1 and %d, got %d", MAX_PARTS / npasses, buckets));
}

/*
 * A batch being filled.  Its entries start BATCH_PREFIX_BYTES into the
 * buffer, so that whichever header it goes out with (a bytea's, or a row's
 * in a COPY file) is written just before them, with no copy.
 */
#define BATCH_PREFIX_BYTES 16
typedef struct Batch
{
	char	   *buffer;			/* allocated when first used */
	char	   *end;			/* where the next entry goes */
	int			count;
	uint64		last_key;
} Batch;

/* A source's rows on their way out, a batch at a time. */
typedef struct Scatter
{
	MemoryContext context;		/* where the batches live */
	SimhashSearch passes;
	uint64		salt[SIMHASH_MAX_BLOCKS];	/* per pass */
	int			buckets;
	int			nparts;
	int			batch_rows;
	Batch	   *batches;		/* per part */
	/* the rows read, a chunk at a time: from memory, or once spilled from their file */
	SimhashRows input;
	int			chunk;			/* the next chunk in memory */
	SimhashEntry *rows;			/* the current chunk */
	Size		nrows;
	Size		row;			/* the row being sent */
	int			pass;			/* and the next of its passes */
	int			flushed;		/* once every row is sent: the parts put so far */
} Scatter;

/* Reads the (id, fingerprint) rows of sql for a run within k bits over `rows` rows in buckets. */
static void
scatter_init(Scatter *scatter, text *sql, Oid fingerprint_type, int k, int64 rows, int buckets)
{
	SimhashStripes none;

	scatter->context = CurrentMemoryContext;
	search_passes(k, rows, &scatter->passes, &none, NULL, 0, NULL, NULL);
	check_buckets(buckets, scatter->passes.npasses);
	scatter->buckets = buckets;
	scatter->nparts = buckets * scatter->passes.npasses;
	scatter->batch_rows = (int) Max(BATCH_MIN_ROWS, Min(BATCH_MAX_ROWS,
														BATCH_BUFFER_BYTES / BATCH_ENTRY_MAX_BYTES / scatter->nparts));
	scatter->batches = palloc0(sizeof(Batch) * scatter->nparts);
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
static void
scatter_end(Scatter *scatter)
{
	if (scatter->input.spill != NULL)
		simhash_entry_file_close(scatter->input.spill);
}

/* Whether there is a row to send, moving to the next chunk when one is done. */
static bool
scatter_has_row(Scatter *scatter)
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
 * the part whose batch is to go out (then scatter_sent()), or -1 when all
 * rows are out.
 */
static int
scatter_next(Scatter *scatter)
{
	/*
	 * In locals: the entries are written a byte at a time, and a char store
	 * may alias any field of *scatter, which would be read again each time.
	 */
	const int	npasses = scatter->passes.npasses;
	const uint64 buckets = (uint64) scatter->buckets;
	const int	batch_rows = scatter->batch_rows;
	Batch	   *const batches = scatter->batches;
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
				Batch	   *batch = &batches[part];

				if (unlikely(batch->buffer == NULL))
				{
					batch->buffer = MemoryContextAlloc(scatter->context, BATCH_PREFIX_BYTES +
													   (Size) batch_rows * BATCH_ENTRY_MAX_BYTES);
					batch->end = batch->buffer + BATCH_PREFIX_BYTES;
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

/* The entries of a part's batch: [batch->buffer + BATCH_PREFIX_BYTES, batch->end). */
static uint32
batch_bytes(const Batch *batch)
{
	return (uint32) (batch->end - batch->buffer - BATCH_PREFIX_BYTES);
}

/* The batch has gone out: it is empty again. */
static void
scatter_sent(Scatter *scatter, int part)
{
	Batch	   *batch = &scatter->batches[part];

	batch->end = batch->buffer + BATCH_PREFIX_BYTES;
	batch->count = 0;
	batch->last_key = 0;
}

/*
 * simhash_partition_batches(sql, max_distance, rows, buckets): the query's
 * (id, fingerprint) rows as batches of entries, each row in the part of
 * each pass (TABLE(part integer, batch bytea)); rows is the number of rows
 * of the whole run, which sets the layout.  Value per call, so that the
 * batches stream on as they fill (a set-returning function in the select
 * list; in FROM they would first be stored whole).
 */
PG_FUNCTION_INFO_V1(simhash_partition_batches);
Datum
simhash_partition_batches(PG_FUNCTION_ARGS)
{
	FuncCallContext *call;
	Scatter    *scatter;
	int			part;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;

		call = SRF_FIRSTCALL_INIT();
		if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
			SRF_RETURN_DONE(call);
		old = MemoryContextSwitchTo(call->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		call->tuple_desc = BlessTupleDesc(desc);
		call->user_fctx = palloc(sizeof(Scatter));
		scatter_init(call->user_fctx, PG_GETARG_TEXT_PP(0), simhash_type_oid(fcinfo), PG_GETARG_INT32(1),
					 PG_GETARG_INT64(2), PG_GETARG_INT32(3));
		MemoryContextSwitchTo(old);
	}
	call = SRF_PERCALL_SETUP();
	scatter = call->user_fctx;
	if (scatter != NULL && (part = scatter_next(scatter)) >= 0)
	{
		Batch	   *batch = &scatter->batches[part];
		bytea	   *data = (bytea *) (batch->buffer + BATCH_PREFIX_BYTES - VARHDRSZ);
		Datum		values[2];
		bool		nulls[2] = {false, false};
		HeapTuple	tuple;

		SET_VARSIZE(data, VARHDRSZ + batch_bytes(batch));
		values[0] = Int32GetDatum(part);
		values[1] = PointerGetDatum(data);
		tuple = heap_form_tuple(call->tuple_desc, values, nulls);
		scatter_sent(scatter, part);
		SRF_RETURN_NEXT(call, HeapTupleGetDatum(tuple));
	}
	if (scatter != NULL)
		scatter_end(scatter);
	SRF_RETURN_DONE(call);
}

/* ---------- the files ---------- */

/* COPY's binary format: the signature, the flags and the header extension's length. */
static const char copy_signature[11] = "PGCOPY\n\377\r\n\0";
#define COPY_HEADER_BYTES (sizeof(copy_signature) + 2 * sizeof(uint32))
/* A row's header: its field count, the part's length and value, the batch's length. */
#define COPY_ROW_HEADER_BYTES (sizeof(uint16) + 3 * sizeof(uint32))

/* At most this many files written at once (a fraction of what a backend may hold open). */
#define DIRECT_FILES_MAX 200

/*
 * simhash.debug_direct_results: off, the results go through Citus's
 * functions only, as where their files are not found, so that tests reach
 * both ways.
 */
static bool debug_direct_results = true;

void
simhash_shuffle_init(void)
{
	DefineCustomBoolVariable("simhash.debug_direct_results",
							 "Writes and reads Citus's intermediate results of simhash_find_all_distributed directly, where found.",
							 "Off: through Citus's functions only, for tests.",
							 &debug_direct_results,
							 true,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

/* ERROR unless Citus is here: these functions run on its nodes only. */
static void
require_citus(const char *caller)
{
	bool		found;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	found = SPI_execute("SELECT FROM pg_catalog.pg_proc WHERE proname = 'worker_partition_query_result'"
						" AND pronamespace = 'pg_catalog'::regnamespace", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1;
	SPI_finish();
	if (!found)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("%s runs on the nodes of a Citus cluster only", caller),
				errhint("simhash_find_all_distributed and simhash_clusters_distributed call it there."));
}

/*
 * The directory of this distributed transaction's intermediate results
 * (Citus's IntermediateResultsDirectory(): the user, the node that began
 * the transaction and its number), relative to the data directory; NULL
 * outside one.
 */
static char *
result_directory(void)
{
	char	   *directory = NULL;

	if (!debug_direct_results)
		return NULL;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT initiator_node_identifier, transaction_number"
					" FROM pg_catalog.get_current_transaction_id()", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		null_node;
		bool		null_number;
		int32		node = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
													   &null_node));
		int64		number = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
														 &null_number));

		if (!null_node && !null_number && number > 0)
			directory = MemoryContextStrdup(CurrentMemoryContext,
											psprintf("base/pgsql_job_cache/%u_%d_" INT64_FORMAT,
													 GetUserId(), node, number));
	}
	SPI_finish();
	return directory;
}

/*
 * ERROR unless id can name a result: the characters Citus allows
 * (QueryResultFileName()), so that a name is a file in the directory and
 * nothing else (no "/", no "..").
 */
static const char *
checked_result_id(const char *id)
{
	if (id[0] == '\0' || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(id))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_NAME),
				errmsg("result name \"%s\" may hold only letters, digits, underscores and hyphens", id));
	return id;
}

/* The file of result <prefix>_<bucket>. */
static char *
result_path(const char *directory, const char *prefix, int bucket)
{
	return psprintf("%s/%s_%d.data", directory, prefix, bucket);
}

/* Whether the results of prefix are in directory (NULL: unknown): its first file is there. */
static bool
results_in(const char *directory, const char *prefix)
{
	struct stat st;

	return directory != NULL && stat(result_path(directory, prefix, 0), &st) == 0;
}

static void
write_all(int fd, const char *path, const char *data, Size n)
{
	while (n > 0)
	{
		ssize_t		done = write(fd, data, n);

		if (done < 0)
			ereport(ERROR, errcode_for_file_access(), errmsg("could not write to file \"%s\": %m", path));
		data += done;
		n -= done;
	}
}

/* Opens result file path for writing, empty, and writes COPY's header. */
static int
open_result(const char *path)
{
	int			fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	char		header[COPY_HEADER_BYTES];

	if (fd < 0)
		ereport(ERROR, errcode_for_file_access(), errmsg("could not create file \"%s\": %m", path));
	memcpy(header, copy_signature, sizeof(copy_signature));
	memset(header + sizeof(copy_signature), 0, 2 * sizeof(uint32));	/* no flags, no extension */
	write_all(fd, path, header, sizeof(header));
	return fd;
}

/* Writes COPY's trailer and closes the file. */
static void
close_result(int fd, const char *path)
{
	uint16		trailer = pg_hton16((uint16) -1);

	write_all(fd, path, (char *) &trailer, sizeof(trailer));
	CloseTransientFile(fd);
}

/*
 * The results <prefix>_<bucket> of query's (part, batch) rows, written by
 * worker_partition_query_result() (bucket b holds parts b * passes .. b *
 * passes + passes - 1, every file written, empty or not).  Citus creates
 * the directory, and removes it with its files at the end of the
 * transaction.
 */
static void
citus_results(const char *prefix, const char *query, int buckets, int npasses)
{
	StringInfoData bounds[2];
	Datum		args[4];
	Oid			argtypes[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};

	for (int end = 0; end < 2; end++)
	{
		initStringInfo(&bounds[end]);
		appendStringInfoChar(&bounds[end], '{');
		for (int bucket = 0; bucket < buckets; bucket++)
			appendStringInfo(&bounds[end], "%s%d", bucket > 0 ? "," : "",
							 bucket * npasses + (end == 0 ? 0 : npasses - 1));
		appendStringInfoChar(&bounds[end], '}');
	}
	args[0] = CStringGetTextDatum(prefix);
	args[1] = CStringGetTextDatum(query);
	args[2] = CStringGetTextDatum(bounds[0].data);
	args[3] = CStringGetTextDatum(bounds[1].data);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT count(*) FROM pg_catalog.worker_partition_query_result("
							  "$1, $2, 0, 'range', $3::text[], $4::text[], true, false, true)",
							  4, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "simhash: worker_partition_query_result failed");
	SPI_finish();
}

/* Empty results: no rows of the right columns. */
#define NO_BATCHES "SELECT 0, NULL::bytea WHERE false"

/*
 * simhash_prepare_results(prefixes, max_distance, buckets): empty results
 * <prefix>_<bucket> for every prefix and bucket, on this node, for the
 * shards of the relation here (simhash_write_shard() writes over those of
 * the shards with rows; the others stay empty, so that every result named
 * in the SQL exists).  The first through Citus, which creates the
 * directory; the others directly when they can be found there.
 */
PG_FUNCTION_INFO_V1(simhash_prepare_results);
Datum
simhash_prepare_results(PG_FUNCTION_ARGS)
{
	SimhashSearch passes;
	SimhashStripes none;
	Datum	   *prefixes;
	int			nprefixes;
	int			buckets;
	char	   *directory;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_VOID();
	require_citus("simhash_prepare_results");
	search_passes(PG_GETARG_INT32(1), 0, &passes, &none, NULL, 0, NULL, NULL);
	buckets = PG_GETARG_INT32(2);
	check_buckets(buckets, passes.npasses);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT, &prefixes, NULL, &nprefixes);
	if (nprefixes == 0)
		PG_RETURN_VOID();
	for (int i = 0; i < nprefixes; i++)
		checked_result_id(TextDatumGetCString(prefixes[i]));
	citus_results(TextDatumGetCString(prefixes[0]), NO_BATCHES, buckets, passes.npasses);
	directory = result_directory();
	if (!results_in(directory, TextDatumGetCString(prefixes[0])))
		directory = NULL;
	for (int i = 1; i < nprefixes; i++)
	{
		char	   *prefix = TextDatumGetCString(prefixes[i]);

		if (directory == NULL)
		{
			citus_results(prefix, NO_BATCHES, buckets, passes.npasses);
			continue;
		}
		for (int bucket = 0; bucket < buckets; bucket++)
		{
			char	   *path = result_path(directory, prefix, bucket);

			close_result(open_result(path), path);
		}
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_VOID();
}

/* The batches of a source, straight into its result files in directory. */
static void
write_batches(Scatter *scatter, const char *directory, const char *prefix)
{
	int			buckets = scatter->buckets;
	char	  **paths = palloc(sizeof(char *) * buckets);
	int		   *fds = palloc(sizeof(int) * buckets);
	int			part;

	for (int bucket = 0; bucket < buckets; bucket++)
	{
		paths[bucket] = result_path(directory, prefix, bucket);
		fds[bucket] = open_result(paths[bucket]);
	}
	while ((part = scatter_next(scatter)) >= 0)
	{
		Batch	   *batch = &scatter->batches[part];
		int			bucket = part / scatter->passes.npasses;
		char	   *row = batch->buffer + BATCH_PREFIX_BYTES - COPY_ROW_HEADER_BYTES;
		uint16		fields = pg_hton16(2);
		uint32		header[3] = {pg_hton32(sizeof(int32)), pg_hton32((uint32) part),
		pg_hton32(batch_bytes(batch))};

		memcpy(row, &fields, sizeof(fields));
		memcpy(row + sizeof(fields), header, sizeof(header));
		write_all(fds[bucket], paths[bucket], row, COPY_ROW_HEADER_BYTES + batch_bytes(batch));
		scatter_sent(scatter, part);
	}
	for (int bucket = 0; bucket < buckets; bucket++)
		close_result(fds[bucket], paths[bucket]);
}

/* The shard whose rows simhash_write_shard() last sent, in one FmgrInfo (one query). */
typedef struct ShardWritten
{
	Oid			shard;
} ShardWritten;

/*
 * simhash_write_shard(shard, id_column, fingerprint_column, max_distance,
 * rows, buckets, prefix): the rows of a shard of the relation, as
 * simhash_partition_batches' batches, into the results
 * <prefix>_<shard id>_<bucket> (those simhash_prepare_results() made);
 * returns how many rows.  Called from a query over the relation (`SELECT
 * simhash_write_shard(tableoid, ...) FROM relation LIMIT 1`), which Citus
 * runs on every shard over the connection that has the transaction's
 * writes to it; again for the same shard in the same query (without a
 * LIMIT), it does nothing.  A partition's rows go with those of the whole
 * partitioned shard.
 */
PG_FUNCTION_INFO_V1(simhash_write_shard);
Datum
simhash_write_shard(PG_FUNCTION_ARGS)
{
	ShardWritten *written = fcinfo->flinfo->fn_extra;
	Oid			shard;
	char	   *name;
	const char *suffix;
	char	   *prefix;
	char	   *sql;
	char	   *directory;
	Scatter		scatter;
	MemoryContext work;
	MemoryContext old;
	int			k;
	int64		rows;
	int			buckets;
	int64		sent;

	for (int i = 0; i < 7; i++)
		if (PG_ARGISNULL(i))
			PG_RETURN_INT64(0);
	shard = PG_GETARG_OID(0);
	if (get_rel_relispartition(shard))
		shard = llast_oid(get_partition_ancestors(shard));
	if (written == NULL)
		fcinfo->flinfo->fn_extra = written = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ShardWritten));
	else if (written->shard == shard)
		PG_RETURN_INT64(0);
	require_citus("simhash_write_shard");
	written->shard = shard;
	k = PG_GETARG_INT32(3);
	rows = PG_GETARG_INT64(4);
	buckets = PG_GETARG_INT32(5);

	work = AllocSetContextCreate(CurrentMemoryContext, "simhash write shard", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	/* A shard is named <relation>_<shard id> (Citus's AppendShardIdToName()). */
	name = get_rel_name(shard);
	suffix = name == NULL ? NULL : strrchr(name, '_');
	if (suffix == NULL || suffix[1] == '\0' || strspn(suffix + 1, "0123456789") != strlen(suffix + 1))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash_write_shard: %s is not the shard of a distributed table",
					   name == NULL ? "the relation" : name));
	prefix = psprintf("%s%s", checked_result_id(text_to_cstring(PG_GETARG_TEXT_PP(6))), suffix);
	sql = psprintf("SELECT %s, %s FROM %s", quote_identifier(NameStr(*PG_GETARG_NAME(1))),
				   quote_identifier(NameStr(*PG_GETARG_NAME(2))),
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(shard)), name));
	directory = result_directory();
	if (buckets <= DIRECT_FILES_MAX && results_in(directory, prefix))
	{
		scatter_init(&scatter, cstring_to_text(sql), simhash_type_oid(fcinfo), k, rows, buckets);
		sent = scatter.input.count;
		write_batches(&scatter, directory, prefix);
		scatter_end(&scatter);
	}
	else
	{
		SimhashSearch passes;
		SimhashStripes none;

		search_passes(k, rows, &passes, &none, NULL, 0, NULL, NULL);
		check_buckets(buckets, passes.npasses);
		citus_results(prefix,
					  psprintf("SELECT (b).part, (b).batch FROM (SELECT %s.simhash_partition_batches(%s, %d, "
							   INT64_FORMAT ", %d) AS b) s",
							   quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))),
							   quote_literal_cstr(sql), k, rows, buckets),
					  buckets, passes.npasses);
		sent = -1;				/* not counted there */
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	PG_RETURN_INT64(sent);
}

/* Does nothing: a DestReceiver's start or end with nothing to do. */
static void
receiver_nothing(DestReceiver *self)
{
}

/*
 * Runs query ($1.. = args, of argtypes) through SPI, its rows to dest
 * (receiveSlot, and rStartup if not NULL).
 */
static void
run_query(const char *query, int nargs, Oid *argtypes, Datum *args, DestReceiver *dest)
{
	SPIExecuteOptions options = {.dest = dest};
	SPIPlanPtr	plan;
	int			result;

	dest->rShutdown = receiver_nothing;
	dest->rDestroy = receiver_nothing;
	dest->mydest = DestNone;
	/* No parameter list at all without parameters: Citus's executor expects none then. */
	if (nargs > 0)
	{
		ParamListInfo params = makeParamList(nargs);

		for (int i = 0; i < nargs; i++)
		{
			params->params[i].value = args[i];
			params->params[i].isnull = false;
			params->params[i].pflags = PARAM_FLAG_CONST;
			params->params[i].ptype = argtypes[i];
		}
		options.params = params;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(query, nargs, argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash: the query must be one statement that returns rows, such as a SELECT"));
	result = SPI_execute_plan_extended(plan, &options);
	if (result < 0)
		elog(ERROR, "SPI_execute_plan_extended failed: %s", SPI_result_code_string(result));
	SPI_finish();
}

/* The rows of a bucket as they arrive, a SimhashRows per pass. */
typedef struct BatchReceiver
{
	DestReceiver pub;
	const char *caller;
	int			npasses;
	SimhashRows *rows;			/* [npasses] */
} BatchReceiver;

static void
batch_receiver_startup(DestReceiver *self, int operation, TupleDesc desc)
{
	BatchReceiver *receiver = (BatchReceiver *) self;

	if (desc->natts != 2 || getBaseType(TupleDescAttr(desc, 0)->atttypid) != INT4OID ||
		getBaseType(TupleDescAttr(desc, 1)->atttypid) != BYTEAOID)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("%s: the query must return 2 columns, a part of type integer and a batch of type bytea",
					   receiver->caller));
}

static bool
batch_receiver_receive(TupleTableSlot *slot, DestReceiver *self)
{
	BatchReceiver *receiver = (BatchReceiver *) self;
	SimhashRows *rows;
	bytea	   *batch;
	const char *data;
	const char *end;
	uint64		last_key = 0;

	slot_getsomeattrs(slot, 2);
	if (slot->tts_isnull[0] || slot->tts_isnull[1] || DatumGetInt32(slot->tts_values[0]) < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				errmsg("%s: a batch without a part", receiver->caller));
	rows = &receiver->rows[DatumGetInt32(slot->tts_values[0]) % receiver->npasses];
	batch = DatumGetByteaPP(slot->tts_values[1]);
	data = VARDATA_ANY(batch);
	end = data + VARSIZE_ANY_EXHDR(batch);
	while (data < end)
	{
		SimhashEntry entry;

		data = decode_entry(data, end, &entry, &last_key);
		if (data == NULL)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					errmsg("%s: a batch ends inside an entry", receiver->caller));
		simhash_rows_add(rows, entry.key, entry.hash);
	}
	if ((Pointer) batch != DatumGetPointer(slot->tts_values[1]))
		pfree(batch);
	return true;
}

/* Runs sql and adds the entries of the (part, batch) rows it returns to the rows of their pass. */
static void
read_batches(text *sql, const char *caller, int npasses, SimhashRows *rows)
{
	BatchReceiver receiver = {
		.pub = {.receiveSlot = batch_receiver_receive, .rStartup = batch_receiver_startup},
		.caller = caller,
		.npasses = npasses,
		.rows = rows,
	};

	run_query(text_to_cstring(sql), 0, NULL, NULL, &receiver.pub);
}

/*
 * Reading a bucket's files directly.  read_intermediate_results() parses
 * each file into a tuplestore, whose copy of every batch costs more than the
 * search's own work on it; the files are plain COPY in binary format, in the
 * directory of the distributed transaction, and are read here with one
 * buffer, each batch decoded straight into its pass's array.  Where the
 * files are not (a Citus that keeps them elsewhere) the query is run instead.
 */

/* Bytes read from a file at a time; a batch's row fits many times over. */
#define READ_BUFFER_BYTES (1024 * 1024)

/* The entries of a pass: one array, grown in place (repalloc of a huge chunk moves no bytes). */
typedef struct PassArray
{
	SimhashEntry *entries;
	Size		n;
	Size		capacity;
} PassArray;

/* A file being read: its descriptor and the buffer, data[start, end) not yet parsed. */
typedef struct ResultFile
{
	const char *path;
	int			fd;
	char	   *data;
	Size		start;
	Size		end;
} ResultFile;

static void
file_corrupted(const ResultFile *file, const char *what)
{
	ereport(ERROR,
			errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			errmsg("simhash: intermediate result \"%s\" is not as written: %s", file->path, what));
}

/* Makes the next n bytes readable at data + start. */
static void
file_need(ResultFile *file, Size n)
{
	if (file->end - file->start >= n)
		return;
	if (n > READ_BUFFER_BYTES)
		file_corrupted(file, "a row longer than a batch");
	memmove(file->data, file->data + file->start, file->end - file->start);
	file->end -= file->start;
	file->start = 0;
	while (file->end < n)
	{
		ssize_t		got = read(file->fd, file->data + file->end, READ_BUFFER_BYTES - file->end);

		if (got < 0)
			ereport(ERROR, errcode_for_file_access(), errmsg("could not read file \"%s\": %m", file->path));
		if (got == 0)
			file_corrupted(file, "it ends early");
		file->end += got;
		CHECK_FOR_INTERRUPTS();
	}
}

/* The next n bytes of the file, into out. */
static void
file_read(ResultFile *file, void *out, Size n)
{
	file_need(file, n);
	memcpy(out, file->data + file->start, n);
	file->start += n;
}

static uint32
file_uint32(ResultFile *file)
{
	uint32		value;

	file_read(file, &value, sizeof(value));
	return pg_ntoh32(value);
}

static uint16
file_uint16(ResultFile *file)
{
	uint16		value;

	file_read(file, &value, sizeof(value));
	return pg_ntoh16(value);
}

static void
pass_add(PassArray *pass, const SimhashEntry *entry)
{
	if (pass->n == pass->capacity)
	{
		pass->capacity = Max(pass->capacity + pass->capacity / 2, 1024);
		pass->entries = repalloc_huge(pass->entries, sizeof(SimhashEntry) * pass->capacity);
	}
	pass->entries[pass->n++] = *entry;
}

/* The (part, batch) rows of a file in COPY's binary format, into the arrays of their passes. */
static void
read_result_file(ResultFile *file, int npasses, PassArray *passes)
{
	file_need(file, COPY_HEADER_BYTES);
	if (memcmp(file->data, copy_signature, sizeof(copy_signature)) != 0)
		file_corrupted(file, "no COPY signature");
	file->start = sizeof(copy_signature) + sizeof(uint32);
	file->start += file_uint32(file);	/* the header extension */
	for (;;)
	{
		uint16		fields = file_uint16(file);
		int32		part;
		uint32		length;
		const char *data;
		const char *end;
		uint64		last_key = 0;

		if (fields == (uint16) -1)
			break;
		if (fields != 2 || file_uint32(file) != sizeof(int32))
			file_corrupted(file, "a row is not (part integer, batch bytea)");
		part = (int32) file_uint32(file);
		length = file_uint32(file);
		if (part < 0 || length == (uint32) -1)
			file_corrupted(file, "a batch without a part");
		file_need(file, length);
		data = file->data + file->start;
		end = data + length;
		while (data < end)
		{
			SimhashEntry entry;

			data = decode_entry(data, end, &entry, &last_key);
			if (data == NULL)
				file_corrupted(file, "a batch ends inside an entry");
			pass_add(&passes[part % npasses], &entry);
		}
		file->start += length;
	}
}

/*
 * The entries of the bucket whose results are named, into an array per
 * pass, when their files are where Citus keeps them and their entries fit
 * in memory (each needs bytes_per_row, and takes at least the smallest
 * encoding in a file); false otherwise, having read nothing.
 */
static bool
read_result_files(ArrayType *results, int npasses, Size bytes_per_row, PassArray *passes)
{
	char	   *directory;
	Datum	   *ids;
	int			nids;
	char	  **paths;
	uint64		bytes = 0;
	ResultFile	file;

	deconstruct_array(results, TEXTOID, -1, false, TYPALIGN_INT, &ids, NULL, &nids);
	for (int i = 0; i < nids; i++)
		checked_result_id(TextDatumGetCString(ids[i]));
	directory = result_directory();
	if (directory == NULL)
		return false;
	paths = palloc(sizeof(char *) * Max(nids, 1));
	for (int i = 0; i < nids; i++)
	{
		struct stat st;

		paths[i] = psprintf("%s/%s.data", directory, TextDatumGetCString(ids[i]));
		if (stat(paths[i], &st) != 0)
			return false;
		bytes += st.st_size;
	}
	if (!simhash_spill_fits(bytes / (sizeof(uint64) + 1), bytes / (sizeof(uint64) + 1) * bytes_per_row))
		return false;
	for (int pass = 0; pass < npasses; pass++)
	{
		/* About a pass's share at 10 bytes an entry, grown if need be. */
		passes[pass].capacity = Max(bytes / 10 / npasses + bytes / 100 / npasses, 1024);
		passes[pass].entries = MemoryContextAllocHuge(CurrentMemoryContext,
													  sizeof(SimhashEntry) * passes[pass].capacity);
		passes[pass].n = 0;
	}
	file.data = palloc(READ_BUFFER_BYTES);
	for (int i = 0; i < nids; i++)
	{
		file.path = paths[i];
		file.fd = OpenTransientFile(paths[i], O_RDONLY | PG_BINARY);
		if (file.fd < 0)
			ereport(ERROR, errcode_for_file_access(), errmsg("could not open file \"%s\": %m", paths[i]));
		file.start = file.end = 0;
		read_result_file(&file, npasses, passes);
		CloseTransientFile(file.fd);
	}
	pfree(file.data);
	return true;
}

/*
 * The pairs (or edges) of a bucket go back packed too, a bytea of (id1,
 * id2, distance) per few thousand, 17 bytes each in network order
 * (simhash_unpack_pairs): a row of Citus's results each would cost the
 * coordinator more than the search costs the workers.
 */
#define PAIR_BYTES (2 * sizeof(uint64) + 1)
#define PAIRS_PER_BATCH 3072

typedef struct PairBatches
{
	SimhashResultSink sink;		/* a row (pairs, batch) per batch */
	bytea	   *batch;
	int			count;
	uint64		pairs;
} PairBatches;

static void
pairs_init(FunctionCallInfo fcinfo, PairBatches *out)
{
	simhash_result_init(fcinfo, &out->sink);
	out->batch = palloc(VARHDRSZ + PAIRS_PER_BATCH * PAIR_BYTES);
	out->count = 0;
	out->pairs = 0;
}

/* The batch as a row (pairs, batch). */
static void
pairs_flush(PairBatches *out)
{
	Datum		values[2] = {Int32GetDatum(out->count), PointerGetDatum(out->batch)};
	bool		nulls[2] = {false, false};

	if (out->count == 0)
		return;
	SET_VARSIZE(out->batch, VARHDRSZ + out->count * PAIR_BYTES);
	tuplestore_putvalues(out->sink.store, out->sink.desc, values, nulls);
	out->count = 0;
}

static void
pairs_put(PairBatches *out, int64 id1, int64 id2, int distance)
{
	char	   *at = VARDATA(out->batch) + out->count * PAIR_BYTES;
	uint64		wire[2] = {pg_hton64((uint64) id1), pg_hton64((uint64) id2)};

	memcpy(at, wire, sizeof(wire));
	at[sizeof(wire)] = (char) distance;
	out->pairs++;
	if (++out->count == PAIRS_PER_BATCH)
		pairs_flush(out);
}

/* A pair, or an edge of clusters, between the ids of two keys: a SimhashPairFn. */
static void
put_edge(void *arg, uint64 key1, uint64 key2, int distance)
{
	pairs_put(arg, SIMHASH_ID_OF_KEY(key1), SIMHASH_ID_OF_KEY(key2), distance);
}

/* The pairs of a batch (bytea) into the result. */
static void
unpack_pairs(const bytea *batch, SimhashResultSink *sink)
{
	const char *data = VARDATA_ANY(batch);
	Size		len = VARSIZE_ANY_EXHDR(batch);

	if (len % PAIR_BYTES != 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("simhash_unpack_pairs: a batch of %zu bytes is not a whole number of pairs", len));
	for (Size at = 0; at < len; at += PAIR_BYTES)
	{
		uint64		wire[2];

		memcpy(wire, data + at, sizeof(wire));
		simhash_result_put(sink, (int64) pg_ntoh64(wire[0]), (int64) pg_ntoh64(wire[1]),
						   (uint8) data[at + sizeof(wire)]);
	}
}

/* simhash_unpack_pairs(batch): the (id1, id2, distance) rows of a batch of pairs. */
PG_FUNCTION_INFO_V1(simhash_unpack_pairs);
Datum
simhash_unpack_pairs(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;

	simhash_result_init(fcinfo, &sink);
	if (!PG_ARGISNULL(0))
		unpack_pairs(PG_GETARG_BYTEA_PP(0), &sink);
	return (Datum) 0;
}

/* Joins nothing: equal fingerprints are joined by pass 0 alone. */
static void
join_nothing(void *arg, uint64 key1, uint64 key2, int distance)
{
}

/*
 * Clusters of one pass in memory: each row of a component of two or more
 * among this pass's pairs (but the component's first row), with the id of
 * the first row: the coordinator joins the components of every pass and
 * bucket.
 */
static void
pass_clusters(PairBatches *out, SimhashEntry *entries, Size n, int k, int64 total, int pass)
{
	SimhashClusters clusters;
	SimhashSearch search;
	SimhashStripes stripes;
	int64	   *ids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(n, 1));
	Size		ndistinct;
	uint64		done = 0;

	for (Size row = 0; row < n; row++)
	{
		ids[row] = SIMHASH_ID_OF_KEY(entries[row].key);
		entries[row].key = row;
	}
	simhash_clusters_init(&clusters, n);
	/* Equal fingerprints share every block: pass 0 of their bucket joins them. */
	ndistinct = simhash_distinct(entries, n, pass == 0 ? simhash_clusters_join : join_nothing, &clusters);
	search_passes(k, total, &search, &stripes, entries, ndistinct, simhash_clusters_join, &clusters);
	simhash_search_pass(&search, pass, &stripes, &done, 0);
	simhash_resolve_roots(clusters.leader, n);
	/* Each member to its component's root: the root is in the edges of its members. */
	for (Size row = 0; row < n; row++)
		if (clusters.leader[row] != row)
			pairs_put(out, ids[row], ids[clusters.leader[row]], 0);
}

/* The pairs, or the clusters' edges, of one pass whose entries are in memory. */
static void
search_entries(PairBatches *out, SimhashEntry *entries, Size n, int k, int64 total, int pass,
			   bool clusters)
{
	if (clusters)
		pass_clusters(out, entries, n, k, total, pass);
	else
	{
		SimhashSearch search;
		SimhashStripes stripes;
		uint64		done = 0;

		search_passes(k, total, &search, &stripes, entries, n, put_edge, out);
		simhash_search_pass(&search, pass, &stripes, &done, 0);
		simhash_search_free(&search);
		pfree(stripes.piece_start);
	}
}

/*
 * One pass of a bucket: its pairs, or its clusters' edges.  Rows past
 * maintenance_work_mem are searched through temporary files; for clusters
 * every pair between their distinct fingerprints is then an edge, and equal
 * fingerprints are joined to one of them.
 */
static void
search_pass(PairBatches *out, SimhashRows *rows, int k, int64 total, int blocks, int pass,
			bool clusters)
{
	if (rows->spill != NULL)
	{
		Size		rows_in_memory = simhash_spill_rows_in_memory((Size) maintenance_work_mem * 1024,
																  rows->caller);
		SimhashEntryFile *input = rows->spill;
		SimhashEntryFile distinct;

		simhash_rows_finish_spill(rows);
		if (clusters)
		{
			simhash_spill_distinct(input, rows_in_memory, pass == 0 ? put_edge : join_nothing, out,
								   &distinct);
			input = &distinct;
		}
		simhash_spill_find_pass_pairs(input, k, blocks, pass, rows_in_memory, put_edge, out);
	}
	else
	{
		Size		n = rows->count;

		search_entries(out, simhash_rows_to_array(rows), n, k, total, pass, clusters);
	}
}

/*
 * Every pass of a bucket, read at once, searched one at a time: from its
 * files when they can be read directly (ARG_RESULTS), else from the query.
 */
static Datum
search_bucket(FunctionCallInfo fcinfo, const char *caller, bool clusters)
{
	PairBatches out;
	SimhashSearch passes;
	SimhashStripes none;
	SimhashRows *rows;
	PassArray  *arrays;
	MemoryContext work;
	MemoryContext old;
	MemoryContext *pass_context;
	/* What a row of a pass costs in memory, searched (find_all_row_buffer.h, clusters.h). */
	Size		per_row = sizeof(SimhashEntry) + sizeof(SimhashEntry) / 8 +
		(clusters ? SIMHASH_CLUSTERS_BYTES_PER_ROW + sizeof(int64) : 0);
	uint64		read = 0;
	int			k;
	int64		total;

	pairs_init(fcinfo, &out);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		return (Datum) 0;
	k = PG_GETARG_INT32(1);
	total = PG_GETARG_INT64(2);
	simhash_progress_begin(caller);
	work = AllocSetContextCreate(CurrentMemoryContext, "simhash bucket", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	search_passes(k, total, &passes, &none, NULL, 0, NULL, NULL);
	arrays = palloc0(sizeof(PassArray) * passes.npasses);
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
		require_citus(clusters ? "simhash_clusters_batches with results" : "simhash_find_all_batches with results");
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3) &&
		read_result_files(PG_GETARG_ARRAYTYPE_P(3), passes.npasses, per_row, arrays))
	{
		for (int pass = 0; pass < passes.npasses; pass++)
		{
			read += arrays[pass].n;
			search_entries(&out, arrays[pass].entries, arrays[pass].n, k, total, pass, clusters);
			pfree(arrays[pass].entries);
		}
		pairs_flush(&out);
		simhash_progress_end(read / passes.npasses, out.pairs);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(work);
		return (Datum) 0;
	}
	rows = palloc(sizeof(SimhashRows) * passes.npasses);
	pass_context = palloc(sizeof(MemoryContext) * passes.npasses);
	for (int pass = 0; pass < passes.npasses; pass++)
	{
		pass_context[pass] = AllocSetContextCreate(work, "simhash pass", ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(pass_context[pass]);
		/*
		 * The passes are in memory together: each counts the others' rows
		 * as its own (about as many), so that all fit the budget.
		 */
		simhash_rows_init(&rows[pass], caller, passes.npasses * per_row - sizeof(SimhashEntry) -
						  sizeof(SimhashEntry) / 8, true);
	}
	MemoryContextSwitchTo(work);
	read_batches(PG_GETARG_TEXT_PP(0), caller, passes.npasses, rows);
	for (int pass = 0; pass < passes.npasses; pass++)
	{
		read += rows[pass].count;
		MemoryContextSwitchTo(pass_context[pass]);
		search_pass(&out, &rows[pass], k, total, passes.layout.nblocks, pass, clusters);
		MemoryContextSwitchTo(work);
		MemoryContextDelete(pass_context[pass]);
	}
	pairs_flush(&out);
	simhash_progress_end(read / passes.npasses, out.pairs);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}

/*
 * simhash_find_all_batches(sql, max_distance, rows): the pairs among the
 * entries of the (part, batch) rows of a bucket that the query returns, each
 * pass's from its part (part mod passes).
 */
PG_FUNCTION_INFO_V1(simhash_find_all_batches);
Datum
simhash_find_all_batches(PG_FUNCTION_ARGS)
{
	return search_bucket(fcinfo, "simhash_find_all_distributed", false);
}

/* simhash_clusters_batches(sql, max_distance, rows): the same as edges (id, id of its component). */
PG_FUNCTION_INFO_V1(simhash_clusters_batches);
Datum
simhash_clusters_batches(PG_FUNCTION_ARGS)
{
	return search_bucket(fcinfo, "simhash_clusters_distributed", true);
}

/* ---------- the coordinator ---------- */

/* A relation's name as regclass prints it: quoted, qualified where the search path needs it. */
static char *
regclass_name(Oid relation)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relation)));
}

/*
 * The DestReceiver of the coordinator's last query: each row into the
 * function's result, as a row (unpacking false) or as the pairs of a batch
 * in its first column.
 */
typedef struct ResultReceiver
{
	DestReceiver pub;
	SimhashResultSink *sink;
	bool		unpacking;
} ResultReceiver;

static bool
result_receiver_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ResultReceiver *receiver = (ResultReceiver *) self;

	if (!receiver->unpacking)
	{
		tuplestore_puttupleslot(receiver->sink->store, slot);
		return true;
	}
	slot_getsomeattrs(slot, 1);
	if (!slot->tts_isnull[0])
	{
		bytea	   *batch = DatumGetByteaPP(slot->tts_values[0]);

		unpack_pairs(batch, receiver->sink);
		if ((Pointer) batch != DatumGetPointer(slot->tts_values[0]))
			pfree(batch);
	}
	return true;
}

static void
result_receiver_startup(DestReceiver *self, int operation, TupleDesc desc)
{
}

/* Runs query (its $1.. args) through SPI, its rows into the sink. */
static void
run_into_result(const char *query, int nargs, Oid *argtypes, Datum *args, SimhashResultSink *sink,
				bool unpacking)
{
	ResultReceiver receiver = {
		.pub = {.receiveSlot = result_receiver_receive, .rStartup = result_receiver_startup},
		.sink = sink,
		.unpacking = unpacking,
	};

	run_query(query, nargs, argtypes, args, &receiver.pub);
}

/*
 * simhash_find_all_distributed(relation, id_column, fingerprint_column,
 * max_distance): simhash_partition_rows() sends the rows to the buckets (or
 * says Citus does not shard the relation: simhash_find_all then runs here),
 * each bucket's pairs come back packed and go into the result unpacked,
 * with no table of rows between them, and the work table is dropped.
 */
PG_FUNCTION_INFO_V1(simhash_find_all_distributed);
Datum
simhash_find_all_distributed(PG_FUNCTION_ARGS)
{
	SimhashResultSink sink;
	const char *schema;
	Oid			argtypes[5] = {REGCLASSOID, NAMEOID, NAMEOID, INT4OID, TEXTOID};
	Datum		args[5];
	Datum		work;
	bool		isnull;

	simhash_result_init(fcinfo, &sink);
	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			return (Datum) 0;
	schema = quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
	for (int i = 0; i < 4; i++)
		args[i] = PG_GETARG_DATUM(i);
	args[4] = CStringGetTextDatum("simhash_find_all_distributed");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(psprintf("SELECT %s.simhash_partition_rows($1, $2, $3, $4, $5)", schema),
							  5, argtypes, args, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "simhash: simhash_partition_rows failed");
	work = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
	{
		/* Not sharded (or no rows): simhash_find_all here, on the rows as Citus gives them. */
		Oid			query_types[2] = {TEXTOID, INT4OID};
		Datum		query_args[2];

		query_args[0] = CStringGetTextDatum(psprintf("SELECT %s, %s FROM %s",
													 quote_identifier(NameStr(*PG_GETARG_NAME(1))),
													 quote_identifier(NameStr(*PG_GETARG_NAME(2))),
													 regclass_name(PG_GETARG_OID(0))));
		query_args[1] = PG_GETARG_DATUM(3);
		run_into_result(psprintf("SELECT * FROM %s.simhash_find_all($1, $2)", schema), 2, query_types,
						query_args, &sink, false);
	}
	else
	{
		char	   *table = regclass_name(DatumGetObjectId(work));

		run_into_result(psprintf("SELECT (%s.simhash_find_all_batches(batches, %d, rows, results)).batch"
								 " FROM %s WHERE batches IS NOT NULL", schema, PG_GETARG_INT32(3), table),
						0, NULL, NULL, &sink, true);
		if (SPI_execute(psprintf("DROP TABLE %s", table), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "simhash: could not drop %s", table);
	}
	SPI_finish();
	return (Datum) 0;
}
