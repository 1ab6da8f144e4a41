/*
 * find_all_query.h — the (id, fingerprint) rows of find_all, clusters and
 * their Citus parts read from a query (find_all_query.c).
 */
#ifndef SIMHASH_FIND_ALL_QUERY_H
#define SIMHASH_FIND_ALL_QUERY_H

#include "simhash.h"

#include "find_all/find_all_row_buffer.h"

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

#endif							/* SIMHASH_FIND_ALL_QUERY_H */
