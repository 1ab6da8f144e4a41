/*
 * mih_stats.c — simhash_mih_stats(index): what the write path of a
 * simhash_mih index holds now, read from its metapage alone (no other page):
 * the pending rows every query reads whole (and the sealed ones a flush is
 * sorting), the run sets every query probes and their rows, the retired
 * entries waiting to be recycled and the recyclings done, the flushes and
 * merges done with the rows merges rewrote (write amplification: merged_rows
 * over the rows inserted), the run sets merges are rewriting now, and
 * whether a failed flush or merge left pages for the next VACUUM to free.
 *
 * Layer (mih.h): above mih_utils.c.
 */
#include "index/mih/mih.h"

#include "funcapi.h"
#include "utils/array.h"

PG_FUNCTION_INFO_V1(simhash_mih_stats);

/* The result's columns, in the order of the SQL declaration (simhash--1.2--1.3.sql). */
enum
{
	STATS_PENDING_ROWS,
	STATS_SEALED_ROWS,
	STATS_RUN_SETS,
	STATS_SET_ROWS,
	STATS_RETIRED,
	STATS_RECYCLED,
	STATS_FLUSHES,
	STATS_MERGES,
	STATS_MERGED_ROWS,
	STATS_MERGING_SETS,
	STATS_LOST_PAGES,
	STATS_COLUMNS
};

Datum
simhash_mih_stats(PG_FUNCTION_ARGS)
{
	Oid			index_oid = PG_GETARG_OID(0);
	TupleDesc	desc;
	Relation	index;
	MihMeta		meta;
	Buffer		meta_buffer;
	int64		pending;
	Datum		values[STATS_COLUMNS];
	bool		nulls[STATS_COLUMNS] = {false};
	Datum		rows[MIH_MAX_SETS];

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "simhash_mih_stats: the result must be a composite type");
	/* index_open: an ERROR naming the relation if it is not an index */
	index = index_open(index_oid, AccessShareLock);
	mih_require_index(index, "simhash_mih_stats");
	meta_buffer = mih_pin_meta(index, &meta);
	pending = mih_pending_rows(index, &meta);	/* the pin keeps the lanes' pages from reuse */
	ReleaseBuffer(meta_buffer);
	index_close(index, AccessShareLock);

	for (int s = 0; s < meta.nsets; s++)
		rows[s] = Int64GetDatum(meta.sets[s].nentries);
	values[STATS_PENDING_ROWS] = Int64GetDatum(pending);
	values[STATS_SEALED_ROWS] = Int64GetDatum(meta.sealed_count);
	values[STATS_RUN_SETS] = Int32GetDatum(meta.nsets);
	values[STATS_SET_ROWS] = PointerGetDatum(construct_array(rows, meta.nsets, INT8OID, sizeof(int64),
															 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[STATS_RETIRED] = Int32GetDatum(meta.nretired);
	values[STATS_RECYCLED] = Int64GetDatum((int64) meta.nrecycles);
	values[STATS_FLUSHES] = Int64GetDatum(meta.nflushes);
	values[STATS_MERGES] = Int64GetDatum(meta.nmerges);
	values[STATS_MERGED_ROWS] = Int64GetDatum(meta.merged_rows);
	values[STATS_MERGING_SETS] = Int32GetDatum(meta.nclaimed);
	values[STATS_LOST_PAGES] = BoolGetDatum(meta.lost_pages != 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
