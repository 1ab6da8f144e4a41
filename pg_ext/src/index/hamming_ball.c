/*
 * hamming_ball.c — the simhash64_ball query value and the `<@` operator
 * ("fingerprint lies in the ball"), which the GIN operator class indexes.
 */
#include "index/hamming_ball.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/typcache.h"

/*
 * The type is the extension's, but its owner could ALTER it: refuse a layout
 * other than (8-byte by-value centre, integer radius) rather than misread it.
 */
static void
check_ball_layout(TupleDesc desc)
{
	if (desc->natts != 2 ||
		TupleDescAttr(desc, 0)->attisdropped || TupleDescAttr(desc, 1)->attisdropped ||
		TupleDescAttr(desc, 0)->attlen != sizeof(simhash64) || !TupleDescAttr(desc, 0)->attbyval ||
		TupleDescAttr(desc, 1)->atttypid != INT4OID)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("simhash64_ball must be (center simhash64, radius integer)"));
}

bool
simhash_ball_read(Datum ball, SimhashBall *out)
{
	HeapTupleHeader header = DatumGetHeapTupleHeader(ball);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(header),
											  HeapTupleHeaderGetTypMod(header));
	HeapTupleData tuple;
	bool		center_null;
	bool		radius_null;
	Datum		center;
	Datum		radius;

	check_ball_layout(desc);
	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = header;
	center = heap_getattr(&tuple, SIMHASH_BALL_CENTER_ATTNUM, desc, &center_null);
	radius = heap_getattr(&tuple, SIMHASH_BALL_RADIUS_ATTNUM, desc, &radius_null);
	ReleaseTupleDesc(desc);

	if (center_null || radius_null)
		return false;
	out->center = DatumGetSimhash64(center);
	out->radius = DatumGetInt32(radius);
	simhash_check_radius(out->radius);
	return true;
}

/* fp <@ ball: NULL when a field of the ball is NULL, as hamming_within would be. */
PG_FUNCTION_INFO_V1(simhash64_in_ball);
Datum
simhash64_in_ball(PG_FUNCTION_ARGS)
{
	simhash64	fp = PG_GETARG_SIMHASH64(0);
	SimhashBall ball;

	if (!simhash_ball_read(PG_GETARG_DATUM(1), &ball))
		PG_RETURN_NULL();
	PG_RETURN_BOOL(simhash64_distance(fp, ball.center) <= ball.radius);
}
