/*
 * find_all_sql.h — what the SQL functions of find_all, clusters and their
 * distributed parts share (find_all_sql.c): reading (id, fingerprint) rows
 * from a query, and returning rows through a tuplestore.
 */
#ifndef SIMHASH_FIND_ALL_SQL_H
#define SIMHASH_FIND_ALL_SQL_H

#include "simhash.h"

#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "utils/tuplestore.h"

#include "find_all/find_all_row_buffer.h"

/* Where results go, and what the entries' keys are. */
typedef struct SimhashResultSink
{
	Tuplestorestate *store;
	TupleDesc	desc;
	bool		keys_are_ids;	/* else the fingerprints' bits */
	uint64		count;			/* rows put so far */
} SimhashResultSink;

/* Materialize mode for a set-returning function's result. */
extern void simhash_result_init(FunctionCallInfo fcinfo, SimhashResultSink *sink);

/* A result row: the first desc->natts of (first, second, distance). */
extern void simhash_result_put(SimhashResultSink *sink, int64 first, int64 second, int distance);

/* The output value of an entry's key: its id, or its fingerprint. */
extern int64 simhash_result_value(const SimhashResultSink *sink, uint64 key);

/*
 * Runs sql with the caller's privileges and adds its rows: (integer id,
 * second_type) with second_type simhash64's oid, rows with a NULL
 * fingerprint skipped; or, with second_type InvalidOid, (integer id,
 * integer id) with the second id stored as the entry's hash.  Either way the
 * entry's key is the first id (SIMHASH_KEY_OF_ID).  A NULL id is an ERROR.
 */
extern void simhash_read_query(text *sql, Oid second_type, SimhashRows *rows);

/*
 * simhash_read_query() of (id, simhash64) rows for find_all and clusters:
 * a plain read of a table straight from its heap, with up to `workers`
 * parallel workers (find_all_read.h), any other query through SPI.
 */
extern void simhash_read_query_rows(text *sql, Oid fingerprint_type, int workers, SimhashRows *rows);

/* The ERROR of a NULL id among the rows. */
simhash_noreturn extern void simhash_null_id_error(const char *caller);

/* An id of type smallint, integer or bigint. */
static inline int64
simhash_id_datum(Datum value, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

#endif							/* SIMHASH_FIND_ALL_SQL_H */
