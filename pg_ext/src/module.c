/*
 * module.c — the shared library's entry point: the module magic block and
 * _PG_init, which sets up each subsystem that needs it once per backend.
 * It calls into every subsystem and nothing calls into it: the top layer.
 */
#include "simhash.h"

#include "find_all/citus/results.h"
#include "find_all/find_all_parallel.h"
#include "find_all/find_all_spill.h"
#include "find_all/progress.h"
#include "fingerprint/fingerprint.h"
#include "index/mih/mih.h"
#include "index/planner_support.h"
#include "index/probe_plan.h"
#include "simd.h"
#include "type/hamming.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	simhash_popcount_init();
	simhash_simd_init();
	simhash_fingerprint_init();
	simhash_probe_plan_define_setting();
	simhash_mih_init();
	simhash_mih_planner_init();
	simhash_planner_support_init();
	simhash_find_all_parallel_init();
	simhash_progress_init();
	simhash_spill_init();
	simhash_citus_init();
}
