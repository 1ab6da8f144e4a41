/*
 * mih_sort.h — rows sorted into a simhash_mih run set within a memory budget
 * (mih_sort.c): what a build sorts (in each of its processes), a flush of
 * the pending list, and a merge of run sets (each collecting the rows of its
 * pages into a sorter: MihCollect).
 *
 * Rows are kept in memory, in a chunk of at most budget / 32 bytes rows.  A
 * full chunk is radix-sorted by each run's key in turn, and each order is
 * written to a temporary file (spilled); then the chunk starts over.  Writing
 * the run set merges, run by run, the chunks spilled with the chunk still in
 * memory, into the run's pages.  In a parallel build every process spills
 * all its rows, by name, in the build's SharedFileSet, and the runs are
 * merged by several processes at once, each run by one (its pages then
 * written to a file and copied into the index by the leader: mih_runs.c).
 * No sort ever holds more than one chunk, so memory stays within the budget
 * at any table size; a table that fits spills nothing.
 */
#ifndef SIMHASH_MIH_SORT_H
#define SIMHASH_MIH_SORT_H

#include "index/mih/mih.h"

#include "storage/sharedfileset.h"

/*
 * Bytes a row takes in a chunk: its key and packed TID (8 each) and the
 * radix sort's copy of both while it sorts.
 */
#define MIH_SORT_BYTES_PER_ROW 32

typedef struct MihSorter MihSorter;

/* The chunks the processes of a parallel build spilled, for any of them to merge. */
typedef struct MihSpilled
{
	SharedFileSet *fileset;
	int			nworkers;		/* processes: the workers, then the leader */
	const int32 *nchunks;		/* per process (ParallelWorkerNumber; the leader last) */
} MihSpilled;

/* What a sorter did: for the build's DEBUG1 report. */
typedef struct MihSortStats
{
	int64		rows;
	int64		chunks;			/* spilled */
	int64		spilled_bytes;
	int			merge_passes;	/* merges into temporary files before the last */
	Size		peak_bytes;		/* the most memory it held at once */
	double		sort_seconds;	/* in the radix sorts */
} MihSortStats;

/* Collects the rows of pending or first-run pages (keys unrotated with `mask`) into a sorter. */
typedef struct MihCollect
{
	MihSorter  *sorter;
	uint64		mask;
} MihCollect;

extern MihSorter *mih_sorter_begin(int ntables, Size budget, SharedFileSet *fileset, int worker, double expected);
extern void mih_sorter_add(MihSorter *s, uint64 fp, ItemPointer tid);
extern int32 mih_sorter_hand_over(MihSorter *s);
extern MihRunSet mih_sorter_write_set(MihSorter *s, Relation index, bool logged, Size merge_budget);
extern int64 mih_sorter_merge_run(MihSorter *s, int t, const MihSpilled *spilled, Size merge_budget,
								  MihRunWriter *writer);
extern void mih_sorter_end(MihSorter *s, MihSortStats *stats);
extern void mih_collect_pending(Relation index, BlockNumber blkno, void *arg);
extern void mih_collect_run(Relation index, BlockNumber blkno, void *arg);

#endif							/* SIMHASH_MIH_SORT_H */
