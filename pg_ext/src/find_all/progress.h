/*
 * progress.h — what a long find_all or clusters run tells its user while it
 * works: with simhash.progress_interval set (say '10s'), a NOTICE at most
 * that often giving the stage, the share of the run done and the time so
 * far, and at the end one NOTICE with the time of each stage (where the time
 * went).  Clients turn the NOTICEs into progress bars (pysimhash_sql.queries,
 * the CLI); the share is "<n>% done" in every message, for them to parse.
 *
 * One run at a time per backend, reported by the backend only (never by a
 * parallel worker): the state is this module's own.
 */
#ifndef SIMHASH_PROGRESS_H
#define SIMHASH_PROGRESS_H

#include "simhash.h"

#include "portability/instr_time.h"

/* Seconds from start to end (the stage times of a run and of its processes). */
static inline double
simhash_seconds_between(instr_time start, instr_time end)
{
	INSTR_TIME_SUBTRACT(end, start);
	return INSTR_TIME_GET_DOUBLE(end);
}

/* The stages of a run, in order. */
typedef enum SimhashStage
{
	SIMHASH_STAGE_READ,			/* running the query, reading its rows */
	SIMHASH_STAGE_PREPARE,		/* ordering by id, duplicates, distinct fingerprints */
	SIMHASH_STAGE_SEARCH,		/* the passes over the tables */
	SIMHASH_STAGE_OUTPUT,		/* the result: pairs from workers, clusters */
	SIMHASH_STAGES
} SimhashStage;

/* Defines simhash.progress_interval (from _PG_init). */
extern void simhash_progress_init(void);

/* A run of caller (the SQL function) begins: its clock starts. */
extern void simhash_progress_begin(const char *caller);

/*
 * The run is in stage, with `done` of `total` steps of the stage behind it
 * (total 0: unknown, as while reading).  Cheap: called in inner loops, it
 * reads the clock only every so many calls.
 */
extern void simhash_progress_at(SimhashStage stage, uint64 done, uint64 total);

/* The run has ended: the NOTICE of where the time went. */
extern void simhash_progress_end(uint64 rows, uint64 results);

#endif							/* SIMHASH_PROGRESS_H */
