/*
 * gin_ops.h — what the planner needs to know about a simhash64_ops index.
 */
#ifndef SIMHASH_GIN_OPS_H
#define SIMHASH_GIN_OPS_H

#include "simhash.h"

/*
 * The largest radius an index answers by key lookup, from the opclass
 * options of its column (NULL: the defaults).
 */
extern int	simhash_gin_max_distance(const bytea *options);

#endif							/* SIMHASH_GIN_OPS_H */
