/*
 * planner_support.h — the planner's side of radius queries
 * (planner_support.c): hamming_within's support function, the estimators of
 * <@, and the rewriting of `fp <~> q <= k` into hamming_within(fp, q, k).
 */
#ifndef SIMHASH_PLANNER_SUPPORT_H
#define SIMHASH_PLANNER_SUPPORT_H

#include "simhash.h"

/* Installs the rewriting (planner_hook); from _PG_init. */
extern void simhash_planner_support_init(void);

#endif							/* SIMHASH_PLANNER_SUPPORT_H */
