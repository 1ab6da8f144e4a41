/*
 * gin_ops.h — what the planner needs to know about a simhash64_ops index.
 */
#ifndef SIMHASH_GIN_OPS_H
#define SIMHASH_GIN_OPS_H

#include "simhash.h"

/*
 * Whether an index with these opclass options (NULL: the defaults) answers
 * the radius by key lookups rather than by scanning itself whole.
 */
extern bool simhash_gin_looks_up(const bytea *options, int radius);

#endif							/* SIMHASH_GIN_OPS_H */
