/*
 * mih_build.c — CREATE INDEX for simhash_mih: every row's (fingerprint, TID)
 * sorted into one run set, and the empty index of an unlogged table.
 */
#include "index/mih/mih.h"

#include "access/generic_xlog.h"
#include "access/tableam.h"
#include "catalog/index.h"

static void
mih_build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				   bool tupleIsAlive, void *state)
{
	if (!isnull[0])
		mih_entries_add((MihEntries *) state, DatumGetSimhash64(values[0]), tid);
}

IndexBuildResult *
mih_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	MihEntries	e;
	SimhashBlocks blocks;
	MihRunSet	set;
	Buffer		buffer;
	GenericXLogState *state;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	if (indexInfo->ii_NumIndexAttrs != 1)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("a simhash_mih index has exactly one column")));
	mih_init_meta(index, MAIN_FORKNUM, mih_runs_of(index));
	mih_entries_init(&e);
	result->heap_tuples = table_index_build_scan(heap, index, indexInfo, true, true,
												 mih_build_callback, &e, NULL);
	simhash_blocks_init(&blocks, mih_runs_of(index));
	set = mih_write_set(index, &blocks, &e);

	buffer = ReadBuffer(index, 0);
	LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	mih_meta_add_set(mih_meta_of(GenericXLogRegisterBuffer(state, buffer, 0)), &set);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buffer);
	result->index_tuples = e.n;
	return result;
}

void
mih_buildempty(Relation index)
{
	mih_init_meta(index, INIT_FORKNUM, mih_runs_of(index));
}
