/*
 * mih_build.h — CREATE INDEX for simhash_mih: what every process of a build
 * does (mih_build.c: scan its share of the table into a sorter), and the
 * parallel build's machinery (mih_build_parallel.c).
 *
 * A build is one or more participants, each scanning blocks of the table
 * (all of them, or those a parallel scan hands it) into a sorter of its
 * own (mih_sort.h) with maintenance_work_mem / participants of memory,
 * spilling sorted chunks past it; then every participant's chunks are
 * merged, run by run, into the index's pages: by the backend running
 * CREATE INDEX alone, or, in a parallel build, by every participant at
 * once, a run each.
 */
#ifndef SIMHASH_MIH_BUILD_H
#define SIMHASH_MIH_BUILD_H

#include "index/mih/mih_sort.h"

#include "access/relscan.h"

/*
 * The build's subphases in pg_stat_progress_create_index (after PostgreSQL's
 * own 1, "initializing"): the scan, then the merge that writes the runs.
 */
#define MIH_BUILD_PHASE_SCAN 2
#define MIH_BUILD_PHASE_WRITE 3

/* What a participant scans into. */
typedef struct MihBuildState
{
	MihScope	scope;
	MihSorter  *sorter;
	double		indtuples;
} MihBuildState;

/* What the leader learns of the workers: at the end of their scans, and of their merges. */
typedef struct MihWorkersDone
{
	double		reltuples;
	double		indtuples;
	bool		brokenhotchain;
	int64		chunks;
	int64		spilled_bytes;
	Size		peak_bytes;		/* the most any worker held */
} MihWorkersDone;

/* mih_build.c */
extern Size mih_build_budget(int participants);
extern double mih_build_expected_rows(Relation heap, int participants);
extern double mih_build_scan(Relation heap, Relation index, IndexInfo *indexInfo, TableScanDesc scan,
							 bool progress, MihBuildState *state);
extern char *mih_build_phase_name(int64 phase);

/* mih_build_parallel.c */
typedef struct MihBuildLeader MihBuildLeader;

extern MihBuildLeader *mih_begin_parallel(Relation heap, Relation index, bool isconcurrent, int request);
extern int	mih_parallel_participants(const MihBuildLeader *leader);
extern int	mih_parallel_requested(const MihBuildLeader *leader);
extern SharedFileSet *mih_parallel_fileset(const MihBuildLeader *leader);
extern int	mih_parallel_leader_number(const MihBuildLeader *leader);
extern double mih_parallel_scan(MihBuildLeader *leader, Relation heap, Relation index, IndexInfo *indexInfo,
								MihBuildState *state, int32 *nchunks, MihWorkersDone *done);
extern MihRunSet mih_parallel_write_set(MihBuildLeader *leader, Relation index, MihSorter *sorter,
										int32 nchunks);
extern void mih_end_parallel(MihBuildLeader *leader, MihWorkersDone *done);

#endif							/* SIMHASH_MIH_BUILD_H */
