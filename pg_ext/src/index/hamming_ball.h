/*
 * hamming_ball.h — the query value of the index operator class: a centre and
 * a radius, i.e. every fingerprint within `radius` bits of `center`.
 *
 * In SQL it is the composite type simhash64_ball (center simhash64, radius
 * integer), built with hamming_ball(center, radius) or a ROW(...) cast.
 */
#ifndef SIMHASH_HAMMING_BALL_H
#define SIMHASH_HAMMING_BALL_H

#include "simhash.h"

/* A radius is checked as every radius is. */
#include "type/hamming.h"

typedef struct SimhashBall
{
	simhash64	center;
	int32		radius;
} SimhashBall;

/* Attribute numbers of the composite type's fields. */
#define SIMHASH_BALL_CENTER_ATTNUM 1
#define SIMHASH_BALL_RADIUS_ATTNUM 2

/*
 * Reads a simhash64_ball datum.  Returns false when a field is NULL (the ball
 * contains nothing); ERROR when the radius is outside 0..64.
 */
extern bool simhash_ball_read(Datum ball, SimhashBall *out);

#endif							/* SIMHASH_HAMMING_BALL_H */
