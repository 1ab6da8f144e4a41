/*
 * results.c — Citus's intermediate results of the batches (results.h):
 * where they are, written and read directly in COPY's binary format, or
 * through Citus's functions.  Layer: citus/, above batches.c, below the
 * SQL functions of the shards, the buckets and the coordinator.
 */
#include "find_all/citus/results.h"

#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "find_all/find_all_spill.h"

/* COPY's binary format: the signature, the flags and the header extension's length. */
static const char copy_signature[11] = "PGCOPY\n\377\r\n\0";
#define COPY_HEADER_BYTES (sizeof(copy_signature) + 2 * sizeof(uint32))
/* A row's header: its field count, the part's length and value, the batch's length. */
#define COPY_ROW_HEADER_BYTES (sizeof(uint16) + 3 * sizeof(uint32))

/*
 * simhash.debug_direct_results: off, the results go through Citus's
 * functions only, as where their files are not found, so that tests reach
 * both ways.
 */
static bool debug_direct_results = true;

void
simhash_citus_init(void)
{
	DefineCustomBoolVariable("simhash.debug_direct_results",
							 "Writes and reads Citus's intermediate results of simhash_find_all_distributed directly, where found.",
							 "Off: through Citus's functions only, for tests.",
							 &debug_direct_results,
							 true,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

/* ERROR unless Citus is here: these functions run on its nodes only. */
void
simhash_require_citus(const char *caller)
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
char *
simhash_result_directory(void)
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
const char *
simhash_checked_result_id(const char *id)
{
	if (id[0] == '\0' || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(id))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_NAME),
				errmsg("result name \"%s\" may hold only letters, digits, underscores and hyphens", id));
	return id;
}

/* The file of result <prefix>_<bucket>. */
char *
simhash_result_path(const char *directory, const char *prefix, int bucket)
{
	return psprintf("%s/%s_%d.data", directory, prefix, bucket);
}

/* Whether the results of prefix are in directory (NULL: unknown): its first file is there. */
bool
simhash_results_in(const char *directory, const char *prefix)
{
	struct stat st;

	return directory != NULL && stat(simhash_result_path(directory, prefix, 0), &st) == 0;
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
int
simhash_result_open(const char *path)
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
void
simhash_result_close(int fd, const char *path)
{
	uint16		trailer = pg_hton16((uint16) -1);

	write_all(fd, path, (char *) &trailer, sizeof(trailer));
	CloseTransientFile(fd);
}

/* The batches of a source, straight into its result files in directory. */
void
simhash_write_batches(SimhashScatter *scatter, const char *directory, const char *prefix)
{
	int			buckets = scatter->buckets;
	char	  **paths = palloc(sizeof(char *) * buckets);
	int		   *fds = palloc(sizeof(int) * buckets);
	int			part;

	for (int bucket = 0; bucket < buckets; bucket++)
	{
		paths[bucket] = simhash_result_path(directory, prefix, bucket);
		fds[bucket] = simhash_result_open(paths[bucket]);
	}
	while ((part = simhash_scatter_next(scatter)) >= 0)
	{
		SimhashBatch *batch = &scatter->batches[part];
		int			bucket = part / scatter->passes.npasses;
		char	   *row = batch->buffer + SIMHASH_BATCH_PREFIX_BYTES - COPY_ROW_HEADER_BYTES;
		uint16		fields = pg_hton16(2);
		uint32		header[3] = {pg_hton32(sizeof(int32)), pg_hton32((uint32) part),
		pg_hton32(simhash_batch_bytes(batch))};

		memcpy(row, &fields, sizeof(fields));
		memcpy(row + sizeof(fields), header, sizeof(header));
		write_all(fds[bucket], paths[bucket], row, COPY_ROW_HEADER_BYTES + simhash_batch_bytes(batch));
		simhash_scatter_sent(scatter, part);
	}
	for (int bucket = 0; bucket < buckets; bucket++)
		simhash_result_close(fds[bucket], paths[bucket]);
}

/*
 * The results <prefix>_<bucket> of query's (part, batch) rows, written by
 * worker_partition_query_result() (bucket b holds parts b * passes .. b *
 * passes + passes - 1, every file written, empty or not).  Citus creates
 * the directory, and removes it with its files at the end of the
 * transaction.
 */
void
simhash_citus_results(const char *prefix, const char *query, int buckets, int npasses)
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

/* Does nothing: a DestReceiver's start or end with nothing to do. */
static void
receiver_nothing(DestReceiver *self)
{
}

/*
 * Runs query ($1.. = args, of argtypes) through SPI, its rows to dest
 * (receiveSlot, and rStartup if not NULL).
 */
void
simhash_citus_run_query(const char *query, int nargs, Oid *argtypes, Datum *args,
						DestReceiver *dest)
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

		data = simhash_decode_entry(data, end, &entry, &last_key);
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
void
simhash_read_batches(text *sql, const char *caller, int npasses, SimhashRows *rows)
{
	BatchReceiver receiver = {
		.pub = {.receiveSlot = batch_receiver_receive, .rStartup = batch_receiver_startup},
		.caller = caller,
		.npasses = npasses,
		.rows = rows,
	};

	simhash_citus_run_query(text_to_cstring(sql), 0, NULL, NULL, &receiver.pub);
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
pass_add(SimhashPassArray *pass, const SimhashEntry *entry)
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
read_result_file(ResultFile *file, int npasses, SimhashPassArray *passes)
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

			data = simhash_decode_entry(data, end, &entry, &last_key);
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
bool
simhash_read_result_files(ArrayType *results, int npasses, Size bytes_per_row,
						  SimhashPassArray *passes)
{
	char	   *directory;
	Datum	   *ids;
	int			nids;
	char	  **paths;
	uint64		bytes = 0;
	ResultFile	file;

	deconstruct_array(results, TEXTOID, -1, false, TYPALIGN_INT, &ids, NULL, &nids);
	for (int i = 0; i < nids; i++)
		simhash_checked_result_id(TextDatumGetCString(ids[i]));
	directory = simhash_result_directory();
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
