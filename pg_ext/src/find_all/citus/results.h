/*
 * results.h — the batches in Citus's intermediate results (results.c): a
 * file per shard and bucket, COPY's binary format of rows (part integer,
 * batch bytea), which fetch_intermediate_results() copies from node to node
 * (the SQL, simhash_partition_rows, says which).  Layer: citus/, above
 * batches.h.
 *
 * The files are written and read here directly where Citus keeps them
 * (simhash_result_directory()): worker_partition_query_result() and
 * read_intermediate_results() would put every batch through COPY's
 * machinery and a tuplestore, copies that cost more than the search.
 * Where they are not found (another Citus), those functions do the work.
 */
#ifndef SIMHASH_CITUS_RESULTS_H
#define SIMHASH_CITUS_RESULTS_H

#include "simhash.h"

#include "tcop/dest.h"
#include "utils/array.h"

#include "find_all/citus/batches.h"

/* At most this many files written at once (a fraction of what a backend may hold open). */
#define SIMHASH_DIRECT_FILES_MAX 200

/* Empty results (simhash_citus_results): no rows of the right columns. */
#define SIMHASH_NO_BATCHES "SELECT 0, NULL::bytea WHERE false"

/* Defines simhash.debug_direct_results (from _PG_init). */
extern void simhash_citus_init(void);

/* ERROR unless Citus is here: these functions run on its nodes only. */
extern void simhash_require_citus(const char *caller);

/*
 * The directory of this distributed transaction's intermediate results
 * (Citus's IntermediateResultsDirectory(): the user, the node that began
 * the transaction and its number), relative to the data directory; NULL
 * outside one.
 */
extern char *simhash_result_directory(void);

/*
 * ERROR unless id can name a result: the characters Citus allows
 * (QueryResultFileName()), so that a name is a file in the directory and
 * nothing else (no "/", no "..").
 */
extern const char *simhash_checked_result_id(const char *id);

/* The file of result <prefix>_<bucket>. */
extern char *simhash_result_path(const char *directory, const char *prefix, int bucket);

/* Whether the results of prefix are in directory (NULL: unknown): its first file is there. */
extern bool simhash_results_in(const char *directory, const char *prefix);

/* Opens result file path for writing, empty, and writes COPY's header. */
extern int	simhash_result_open(const char *path);

/* Writes COPY's trailer and closes the file. */
extern void simhash_result_close(int fd, const char *path);

/* The batches of a source, straight into its result files in directory. */
extern void simhash_write_batches(SimhashScatter *scatter, const char *directory, const char *prefix);

/*
 * The results <prefix>_<bucket> of query's (part, batch) rows, written by
 * worker_partition_query_result() (bucket b holds parts b * passes .. b *
 * passes + passes - 1, every file written, empty or not).  Citus creates
 * the directory, and removes it with its files at the end of the
 * transaction.
 */
extern void simhash_citus_results(const char *prefix, const char *query, int buckets, int npasses);

/*
 * Runs query ($1.. = args, of argtypes) through SPI, its rows to dest
 * (receiveSlot, and rStartup if not NULL).
 */
extern void simhash_citus_run_query(const char *query, int nargs, Oid *argtypes, Datum *args,
									DestReceiver *dest);

/* Runs sql and adds the entries of the (part, batch) rows it returns to the rows of their pass. */
extern void simhash_read_batches(text *sql, const char *caller, int npasses, SimhashRows *rows);

/* The entries of a pass: one array, grown in place (repalloc of a huge chunk moves no bytes). */
typedef struct SimhashPassArray
{
	SimhashEntry *entries;
	Size		n;
	Size		capacity;
} SimhashPassArray;

/*
 * The entries of the bucket whose results are named, into an array per
 * pass, when their files are where Citus keeps them and their entries fit
 * in memory (each needs bytes_per_row, and takes at least the smallest
 * encoding in a file); false otherwise, having read nothing.
 */
extern bool simhash_read_result_files(ArrayType *results, int npasses, Size bytes_per_row,
									  SimhashPassArray *passes);

#endif							/* SIMHASH_CITUS_RESULTS_H */
