/*
 * find_all_result.h — the rows a set-returning function of find_all,
 * clusters or their Citus parts returns (find_all_result.c): a tuplestore
 * in materialize mode, which spills to disk past work_mem.
 */
#ifndef SIMHASH_FIND_ALL_RESULT_H
#define SIMHASH_FIND_ALL_RESULT_H

#include "simhash.h"

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

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

#endif							/* SIMHASH_FIND_ALL_RESULT_H */
