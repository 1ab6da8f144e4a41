/*
 * mih_sort.h — rows sorted into a simhash_mih run set within a memory budget
 * (mih_sort.c): what a build sorts (in each of its processes), and a flush of
 * the pending list, and VACUUM's merge of run sets.
 *
 * Rows are kept in memory, in a chunk of at most budget / 32 bytes rows.  A
 * full chunk is radix-sorted by each run's key in turn, and each order is
 * written to a temporary file (spilled); then the chunk starts over.  Writing
 * the run set merges, run by run, the chunks spilled (the process's own, and
 * in a parallel build the workers', by name in the build's SharedFileSet)
 * with the chunk still in memory, into the run's pages.  No sort ever holds
 * more than one chunk, so memory stays within the budget at any table size;
 * a table that fits spills nothing.
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

/* The chunks the workers of a parallel build spilled, for the leader to merge. */
typedef struct MihSpilled
{
	SharedFileSet *fileset;
	int			nworkers;
	const int32 *nchunks;		/* per worker (ParallelWorkerNumber) */
} MihSpilled;

/* What a sorter did: for the build's DEBUG1 report. */
typedef struct MihSortStats
{
	int64		rows;
	int64		chunks;			/* spilled */
	int64		spilled_bytes;
	int			merge_passes;	/* merges into temporary files before the last */
	Size		peak_bytes;		/* the most memory it held at once */
} MihSortStats;

extern MihSorter *mih_sorter_begin(int ntables, Size budget, SharedFileSet *fileset, int worker);
extern void mih_sorter_add(MihSorter *s, uint64 fp, ItemPointer tid);
extern int32 mih_sorter_hand_over(MihSorter *s);
extern MihRunSet mih_sorter_write_set(MihSorter *s, Relation index, bool logged, Size merge_budget,
									  const MihSpilled *others);
extern void mih_sorter_end(MihSorter *s, MihSortStats *stats);

#endif							/* SIMHASH_MIH_SORT_H */
