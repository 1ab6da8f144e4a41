/*
 * find_all_read.h — the rows of simhash_find_all() and simhash_clusters()
 * read straight from a table's heap, by the backend and parallel workers
 * together, when the query is a plain read of two columns of one table
 * ("SELECT id, fingerprint FROM pages"): the executor's work without the
 * executor, and no longer in the backend alone.
 *
 * Any other query (a view, a WHERE clause, a cast, a join, a table with
 * row-level security or inheritance children, ...) runs through SPI as
 * before (find_all_query.c).
 */
#ifndef SIMHASH_FIND_ALL_READ_H
#define SIMHASH_FIND_ALL_READ_H

#include "simhash.h"

#include "utils/plancache.h"

#include "find_all/find_all_row_buffer.h"

/*
 * If the analysed query of source (prepared through SPI, its columns
 * checked: an integer id, a simhash64 fingerprint) is a plain read of one
 * heap table, checks the user's privileges as the executor would, adds
 * the table's rows to rows with the snapshot SPI would take, by the backend
 * and up to `requested` parallel workers (negative:
 * max_parallel_maintenance_workers; as many as the search would get for the
 * table's estimated rows), and returns true.  Otherwise returns false
 * having done nothing.
 *
 * With workers the rows may be read straight into a parallel run's shared
 * memory, their ids checked: rows->placed_run, for the search to use.
 */
extern bool simhash_read_table(CachedPlanSource *source, int requested, SimhashRows *rows);

#endif							/* SIMHASH_FIND_ALL_READ_H */
