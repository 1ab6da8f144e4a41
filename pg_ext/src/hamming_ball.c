/*
 * hamming_ball.c — the simhash64_ball query value and the `<@` operator
 * ("fingerprint lies in the ball"), which the GIN operator class indexes.
 */
#include "hamming_ball.h"

#include "executor/executor.h"

bool
simhash_ball_read(Datum ball, SimhashBall *out)
{
	HeapTupleHeader tuple = DatumGetHeapTupleHeader(ball);
	bool		center_null;
	bool		radius_null;
	Datum		center = GetAttributeByNum(tuple, SIMHASH_BALL_CENTER_ATTNUM, &center_null);
	Datum		radius = GetAttributeByNum(tuple, SIMHASH_BALL_RADIUS_ATTNUM, &radius_null);

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
