/*
 * progress.c — progress NOTICEs of find_all and clusters runs (progress.h).
 * Layer: the engine's base; it calls nothing of find_all.
 */
#include "find_all/progress.h"

#include <limits.h>

#include "access/parallel.h"
#include "portability/instr_time.h"
#include "utils/guc.h"

/*
 * Each stage's share of a run's time, for the percentage: measured on 10M
 * rows at distance 3 (bench/bench_find_all.py); a guide, not a promise.
 */
static const double stage_weight[SIMHASH_STAGES] = {0.20, 0.05, 0.70, 0.05};
static const char *const stage_name[SIMHASH_STAGES] = {"read", "prepare", "search", "output"};

static int	progress_interval_ms = 0;

static struct
{
	bool		active;
	const char *caller;
	SimhashStage stage;
	instr_time	start;
	instr_time	stage_start;
	instr_time	last_report;
	double		stage_seconds[SIMHASH_STAGES];
} run;

void
simhash_progress_init(void)
{
	DefineCustomIntVariable("simhash.progress_interval",
							"Reports the progress of simhash_find_all and simhash_clusters runs this often, as NOTICEs.",
							"0 reports nothing; otherwise a NOTICE at most this often, and one at the end with the time of each stage.",
							&progress_interval_ms,
							0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
}

static double
seconds_since(instr_time from)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	return simhash_seconds_between(from, now);
}

void
simhash_progress_begin(const char *caller)
{
	memset(&run, 0, sizeof(run));
	if (IsParallelWorker())
		return;
	run.active = true;
	run.caller = caller;
	run.stage = SIMHASH_STAGE_READ;
	INSTR_TIME_SET_CURRENT(run.start);
	run.stage_start = run.last_report = run.start;
}

/* Closes the stages before `stage`. */
static void
enter_stage(SimhashStage stage)
{
	while (run.stage < stage)
	{
		run.stage_seconds[run.stage] += seconds_since(run.stage_start);
		INSTR_TIME_SET_CURRENT(run.stage_start);
		run.stage++;
	}
}

void
simhash_progress_at(SimhashStage stage, uint64 done, uint64 total)
{
	double		share = 0;
	double		fraction = total > 0 ? Min(1.0, (double) done / total) : 0;

	if (!run.active)
		return;
	enter_stage(stage);
	if (progress_interval_ms == 0 || seconds_since(run.last_report) * 1000 < progress_interval_ms)
		return;
	INSTR_TIME_SET_CURRENT(run.last_report);
	for (int s = 0; s < stage; s++)
		share += stage_weight[s];
	share += stage_weight[stage] * fraction;
	if (total > 0)
		ereport(NOTICE,
				errmsg("%s: %d%% done, %s " UINT64_FORMAT " of " UINT64_FORMAT ", %.1f s",
					   run.caller, (int) (share * 100), stage_name[stage], done, total,
					   seconds_since(run.start)));
	else if (stage == SIMHASH_STAGE_READ)
		ereport(NOTICE,
				errmsg("%s: %d%% done, %s " UINT64_FORMAT " rows, %.1f s",
					   run.caller, (int) (share * 100), stage_name[stage], done,
					   seconds_since(run.start)));
	else
		ereport(NOTICE,
				errmsg("%s: %d%% done, %s, %.1f s",
					   run.caller, (int) (share * 100), stage_name[stage], seconds_since(run.start)));
}

void
simhash_progress_end(uint64 rows, uint64 results)
{
	if (!run.active)
		return;
	run.active = false;
	run.stage_seconds[run.stage] += seconds_since(run.stage_start);
	if (progress_interval_ms == 0)
		return;
	ereport(NOTICE,
			errmsg("%s: 100%% done, " UINT64_FORMAT " rows, " UINT64_FORMAT " results, %.1f s "
				   "(read %.2f s, prepare %.2f s, search %.2f s, output %.2f s)",
				   run.caller, rows, results, seconds_since(run.start),
				   run.stage_seconds[SIMHASH_STAGE_READ], run.stage_seconds[SIMHASH_STAGE_PREPARE],
				   run.stage_seconds[SIMHASH_STAGE_SEARCH], run.stage_seconds[SIMHASH_STAGE_OUTPUT]));
}
