/*
 * simhash.c — the shared library's entry point: the module magic block and
 * _PG_init, which sets up each subsystem that needs it once per backend.
 */
#include "postgres.h"

#include "fingerprint/vote.h"
#include "index/mih/mih.h"
#include "index/probe_plan.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	simhash_fingerprint_init();
	simhash_probe_plan_define_setting();
	simhash_mih_init();
}
