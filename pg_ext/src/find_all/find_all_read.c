/*
 * find_all_read.c — a plain table's rows read straight from its heap, by
 * the backend and parallel workers together (find_all_read.h).  Layer:
 * reading, below the query's (find_all_query.c, which hands it plain reads
 * of a table), above the engine's parallel run it reads into.
 *
 * The query was prepared through SPI (parsed, analysed, rewritten: views
 * expanded, row-level security applied), so its one Query tells whether it
 * is a plain read of two columns of one table.  Only then is the executor
 * bypassed, and what the executor would do is done here: the privileges
 * checked as ExecutorStart checks them, the snapshot taken as SPI takes it
 * (a new one, after a CommandCounterIncrement), so that the rows are exactly
 * those the query would return, the transaction's own included.
 *
 * With workers, a ParallelContext as parallel CREATE INDEX uses one: a
 * parallel heap scan with that snapshot (the workers restore it and the
 * transaction's state, so they see what the backend sees, its own rows
 * included), in which the backend takes part.  The rows go straight where
 * the search wants them: the search's run (find_all_parallel.c) is begun
 * first, its shared memory sized from the table's estimate and a little
 * more, and every process attaches it and claims CLAIM entries of it at a
 * time, so that after the scan there is nothing to gather and copy, only
 * the gaps of each process's last claim to close.  Each process reads its
 * blocks in increasing order (no synchronized scan), so its claims, in the
 * order it claimed them, are one increasing run of ids when the table is in
 * id order: the id check merges those runs instead of sorting.
 *
 * Rows past the room (a stale estimate) go to the rows (the backend's) and
 * to a file per worker in a SharedFileSet, and then everything is added to
 * the rows and the search begins its own run as for any query; likewise
 * when there is no run (the search would get no workers).
 *
 * Without workers the backend reads the table alone into the rows, the same
 * scan as each process's share: only the number of processes differs.
 *
 * An ERROR or a cancel ends the workers and deletes the files (the
 * ParallelContext and the SharedFileSet go at abort); an ERROR in a worker
 * is rethrown in the backend.
 */
#include "find_all/find_all_read.h"

#include "access/parallel.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "optimizer/plancat.h"
#include "portability/instr_time.h"
#include "storage/sharedfileset.h"
#include "storage/shm_toc.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "find_all/find_all_parallel.h"
#include "find_all/find_all_spill.h"
#include "find_all/progress.h"

/* The shm_toc keys of the segment. */
#define KEY_READ_SHARED UINT64CONST(0x53494D4841534811)
#define KEY_READ_SCAN UINT64CONST(0x53494D4841534812)
#define KEY_READ_CHUNKS UINT64CONST(0x53494D4841534813)

/* Processes whose rows the id check merges (more: the rows are sorted). */
#define SIMHASH_PARALLEL_READ_MAX_PROCESSES 64

/* Entries a process claims in the run's memory at a time (64 kB). */
#define CLAIM 4096

/* Entries a worker writes to its file at a time, and the backend reads back at a time. */
#define WRITE_BATCH 1024
#define LOAD_BATCH 16384

/* A claimed stretch of the entries, as its process left it. */
typedef struct ChunkInfo
{
	uint64		first;			/* its first key and its last */
	uint64		last;
	uint32		used;			/* entries written; 0: never claimed */
	bool		increasing;		/* each key above the one before */
	int			owner;			/* the process: 0 the backend, then the workers */
} ChunkInfo;

/* What the backend shares with the workers. */
typedef struct ReadShared
{
	Oid			relid;
	AttrNumber	id_attnum;
	AttrNumber	hash_attnum;
	Oid			id_type;		/* the id's base type: int2, int4 or int8 */
	char		caller[NAMEDATALEN];
	/* The search run's entries, or DSM_HANDLE_INVALID: every row to a file. */
	dsm_handle	entries_handle;
	Size		entries_offset;
	uint64		nchunks;		/* room for nchunks * CLAIM entries */
	pg_atomic_uint64 next_chunk;
	SharedFileSet fileset;
	int64		rows_written[FLEXIBLE_ARRAY_MEMBER];	/* per worker, to its file; -1: none */
} ReadShared;

/*
 * Where a process puts its rows: the run's entries, CLAIM at a time, and
 * once they are all claimed (more rows than the table's estimate), the
 * backend's to the rows, a worker's to its file.
 */
typedef struct Writer
{
	ReadShared *read;
	SimhashEntry *entries;		/* the run's, or NULL */
	ChunkInfo  *chunks;
	SimhashEntry *pos;			/* in the chunk being written */
	SimhashEntry *end;
	ChunkInfo  *chunk;
	uint64		last;
	bool		increasing;
	SimhashRows *rows;			/* the backend's overflow */
	SimhashEntryFile out;		/* a worker's overflow */
	bool		out_open;
	SimhashEntry *batch;
	int			used;
	int			slot;			/* a worker's number */
	int			owner;			/* 0: the backend, else slot + 1 */
	uint64		rows_put;
} Writer;

PGDLLEXPORT void simhash_find_all_read_worker_main(dsm_segment *seg, shm_toc *toc);

/* The one relation of a plain read of two of its columns, or NULL. */
static RangeTblEntry *
plain_table_read(CachedPlanSource *source, Query **query_out)
{
	Query	   *query;
	RangeTblEntry *rte;
	Node	   *from;
	ListCell   *cell;

	if (list_length(source->query_list) != 1)
		return NULL;
	query = linitial_node(Query, source->query_list);
	if (query->commandType != CMD_SELECT || query->utilityStmt != NULL ||
		query->hasAggs || query->hasWindowFuncs || query->hasTargetSRFs ||
		query->hasSubLinks || query->hasDistinctOn || query->hasRecursive ||
		query->hasModifyingCTE || query->hasForUpdate ||
		query->cteList != NIL || query->rowMarks != NIL || query->groupClause != NIL ||
		query->groupingSets != NIL || query->havingQual != NULL || query->windowClause != NIL ||
		query->distinctClause != NIL || query->sortClause != NIL ||
		query->limitOffset != NULL || query->limitCount != NULL || query->setOperations != NULL)
		return NULL;
	if (list_length(query->rtable) != 1 || query->jointree == NULL ||
		query->jointree->quals != NULL || list_length(query->jointree->fromlist) != 1)
		return NULL;
	from = linitial(query->jointree->fromlist);
	if (!IsA(from, RangeTblRef) || ((RangeTblRef *) from)->rtindex != 1)
		return NULL;
	rte = linitial_node(RangeTblEntry, query->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION ||
		rte->tablesample != NULL || rte->securityQuals != NIL)
		return NULL;
	if (list_length(query->targetList) != 2)
		return NULL;
	foreach(cell, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, cell);
		Var		   *var = (Var *) tle->expr;

		if (tle->resjunk || !IsA(var, Var) || var->varno != 1 || var->varlevelsup != 0 ||
			var->varattno <= 0)
			return NULL;
	}
	if (rte->inh && has_subclass(rte->relid))
		return NULL;

	/*
	 * Row-level security applied: its quals are in securityQuals, and the
	 * rows are the executor's to filter.  (hasRowSecurity is also set for a
	 * user it does not apply to, the owner or a superuser: those read all.)
	 */
	if (check_enable_rls(rte->relid, InvalidOid, false) == RLS_ENABLED)
		return NULL;
	*query_out = query;
	return rte;
}

/*
 * Whether the planner reads the table with a plain sequential scan.  An
 * extension's planner hook may plan it otherwise (Citus: a distributed
 * table's rows are on its workers and the coordinator's table is empty),
 * and then only the executor knows where the rows are.  The plan is the
 * one SPI executes on the fallback path: made once either way (SPI's
 * unsaved plan: no resource owner keeps it).
 */
static bool
planned_as_seq_scan(CachedPlanSource *source)
{
	CachedPlan *cplan = GetCachedPlan(source, NULL, NULL, NULL);
	PlannedStmt *stmt = list_length(cplan->stmt_list) == 1 ?
		linitial_node(PlannedStmt, cplan->stmt_list) : NULL;
	Plan	   *plan = stmt != NULL ? stmt->planTree : NULL;
	bool		plain = plan != NULL && stmt->commandType == CMD_SELECT && IsA(plan, SeqScan) &&
		((Scan *) plan)->scanrelid == 1 && plan->qual == NIL && plan->initPlan == NIL &&
		plan->lefttree == NULL && plan->righttree == NULL;

	ReleaseCachedPlan(cplan, NULL);
	return plain;
}

static AttrNumber
column_of(Query *query, int position)
{
	return ((Var *) ((TargetEntry *) list_nth(query->targetList, position))->expr)->varattno;
}

static void
read_file_name(char *name, int worker)
{
	snprintf(name, MAXPGPATH, "simhash-read.%d", worker);
}

static void
writer_init(Writer *w, ReadShared *read, SimhashEntry *entries, ChunkInfo *chunks,
			SimhashRows *rows, int slot)
{
	memset(w, 0, sizeof(Writer));
	w->read = read;
	w->entries = entries;
	w->chunks = chunks;
	w->rows = rows;
	w->slot = slot;
	w->owner = rows != NULL ? 0 : slot + 1;
}

/* The chunk being written, as it is left. */
static void
writer_close_chunk(Writer *w)
{
	if (w->chunk == NULL)
		return;
	w->chunk->last = w->last;
	w->chunk->increasing = w->increasing;
	w->chunk->used = (uint32) (w->pos - (w->entries + (w->chunk - w->chunks) * (Size) CLAIM));
	w->chunk = NULL;
	w->pos = w->end = NULL;
}

/* A row past the chunk: the next chunk, or the overflow. */
static pg_noinline void
writer_put_slow(Writer *w, uint64 key, uint64 hash)
{
	writer_close_chunk(w);
	if (w->entries != NULL)
	{
		uint64		c = pg_atomic_fetch_add_u64(&w->read->next_chunk, 1);

		if (c < w->read->nchunks)
		{
			w->chunk = &w->chunks[c];
			w->chunk->owner = w->owner;
			w->pos = w->entries + c * CLAIM;
			w->end = w->pos + CLAIM;
			w->chunk->first = w->last = key;
			w->increasing = true;
			w->pos->key = key;
			w->pos->hash = hash;
			w->pos++;
			return;
		}
		w->entries = NULL;		/* all claimed */
	}
	if (w->rows != NULL)
	{
		simhash_rows_add(w->rows, key, hash);
		return;
	}
	if (!w->out_open)
	{
		char		name[MAXPGPATH];

		read_file_name(name, w->slot);
		simhash_entry_file_create_shared(&w->out, &w->read->fileset, name);
		w->batch = palloc(sizeof(SimhashEntry) * WRITE_BATCH);
		w->out_open = true;
	}
	w->batch[w->used].key = key;
	w->batch[w->used].hash = hash;
	if (++w->used == WRITE_BATCH)
	{
		simhash_entry_file_write(&w->out, w->batch, w->used);
		w->used = 0;
	}
}

static inline void
writer_put(Writer *w, uint64 key, uint64 hash)
{
	if (likely(w->pos < w->end))
	{
		if (key <= w->last)
			w->increasing = false;
		w->last = key;
		w->pos->key = key;
		w->pos->hash = hash;
		w->pos++;
	}
	else if (w->entries == NULL && w->rows != NULL)
		simhash_rows_add(w->rows, key, hash);	/* the backend alone, or past the room */
	else
		writer_put_slow(w, key, hash);
}

/* The end of a process's rows: its chunk left, a worker's file exported (rows_written). */
static void
writer_finish(Writer *w)
{
	writer_close_chunk(w);
	if (w->out_open)
	{
		simhash_entry_file_write(&w->out, w->batch, w->used);
		w->read->rows_written[w->slot] = (int64) w->out.count;
		simhash_entry_file_export(&w->out);
	}
}

/*
 * A scan's rows to a writer (without the run, all to the rows or the
 * file).  Ends the scan.  A NULL id is an ERROR, a NULL fingerprint a row
 * skipped, as the SPI path's.
 */
static void
scan_rows(Relation rel, TableScanDesc scan, const ReadShared *read, Writer *w)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int			id = read->id_attnum - 1;
	int			hash = read->hash_attnum - 1;
	int			natts = Max(id, hash) + 1;
	Oid			id_type = read->id_type;
	uint64		seen = 0;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		slot_getsomeattrs(slot, natts);
		if (slot->tts_isnull[id])
			simhash_null_id_error(read->caller);
		if (!slot->tts_isnull[hash])
			w->rows_put++, writer_put(w, SIMHASH_KEY_OF_ID(simhash_id_datum(slot->tts_values[id], id_type)),
					   DatumGetSimhash64(slot->tts_values[hash]));
		if ((++seen & SIMHASH_INTERRUPT_EVERY_MASK) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			if (w->rows != NULL)
				simhash_progress_at(SIMHASH_STAGE_READ, seen, 0);
		}
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
}

void
simhash_find_all_read_worker_main(dsm_segment *seg, shm_toc *toc)
{
	ReadShared *read = shm_toc_lookup(toc, KEY_READ_SHARED, false);
	ParallelTableScanDesc pscan = shm_toc_lookup(toc, KEY_READ_SCAN, false);
	ChunkInfo  *chunks = shm_toc_lookup(toc, KEY_READ_CHUNKS, false);
	dsm_segment *run_segment = NULL;
	SimhashEntry *entries = NULL;
	Writer		w;
	Relation	rel;

	SharedFileSetAttach(&read->fileset, seg);
	if (read->entries_handle != DSM_HANDLE_INVALID)
	{
		run_segment = dsm_attach(read->entries_handle);
		if (run_segment == NULL)
			ereport(ERROR,
					errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("could not map dynamic shared memory segment"));
		entries = (SimhashEntry *) ((char *) dsm_segment_address(run_segment) + read->entries_offset);
	}
	rel = table_open(read->relid, AccessShareLock);
	writer_init(&w, read, entries, chunks, NULL, ParallelWorkerNumber);
	scan_rows(rel, table_beginscan_parallel(rel, pscan), read, &w);
	writer_finish(&w);
	table_close(rel, AccessShareLock);
	if (run_segment != NULL)
		dsm_detach(run_segment);
}

/* A worker's file added to the rows. */
static void
load_worker_rows(ReadShared *read, int worker, SimhashRows *rows, SimhashEntry *buffer)
{
	char		name[MAXPGPATH];
	SimhashEntryFile file;
	Size		got;

	read_file_name(name, worker);
	simhash_entry_file_open_shared(&file, &read->fileset, name);
	while ((got = simhash_entry_file_read(&file, buffer, LOAD_BATCH)) > 0)
	{
		for (Size i = 0; i < got; i++)
			simhash_rows_add(rows, buffer[i].key, buffer[i].hash);
		CHECK_FOR_INTERRUPTS();
		simhash_progress_at(SIMHASH_STAGE_READ, rows->count, 0);
	}
	simhash_entry_file_close(&file);
}

/* The entries of the claimed chunks added to the rows (more rows than room). */
static void
add_placed_rows(const SimhashEntry *entries, const ChunkInfo *chunks, uint64 nchunks,
				SimhashRows *rows)
{
	for (uint64 c = 0; c < nchunks; c++)
	{
		for (uint32 i = 0; i < chunks[c].used; i++)
			simhash_rows_add(rows, entries[c * CLAIM + i].key, entries[c * CLAIM + i].hash);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The claimed chunks' entries moved together into entries[0..n), n
 * returned: each process's last chunk is partly written, and entries from
 * the end fill those gaps.
 */
static Size
compact(SimhashEntry *entries, const ChunkInfo *chunks, uint64 nchunks)
{
	Size		n = 0;
	uint64		source_chunk = nchunks;
	Size		from = 0;
	Size		from_end = 0;

	for (uint64 c = 0; c < nchunks; c++)
		n += chunks[c].used;
	for (uint64 c = 0; c < nchunks && c * CLAIM < n; c++)
	{
		Size		gap_end = Min((c + 1) * CLAIM, n);

		for (Size to = c * CLAIM + chunks[c].used; to < gap_end; to++)
		{
			while (from == from_end)
			{
				if (source_chunk == 0)
					elog(ERROR, "simhash: the rows read do not add up");
				source_chunk--;
				from_end = source_chunk * CLAIM + chunks[source_chunk].used;
				from = Min(Max(source_chunk * CLAIM, n), from_end);
			}
			entries[to] = entries[from++];
		}
	}
	return n;
}

/* Entries [start, start + count) of the run's, and the next stretch of their process (-1: none). */
typedef struct Stretch
{
	Size		start;
	Size		count;
	int64		next;
} Stretch;

/* A run's place in the merge: its next entry, and the stretches after. */
typedef struct RunCursor
{
	const SimhashEntry *pos;
	const SimhashEntry *end;
	int64		stretch;		/* -1: the run is done */
} RunCursor;

static void
cursor_at(RunCursor *cursor, const SimhashEntry *entries, const Stretch *stretches,
		  int64 stretch)
{
	/* Skip empty stretches. */
	while (stretch >= 0 && stretches[stretch].count == 0)
		stretch = stretches[stretch].next;
	cursor->stretch = stretch;
	cursor->pos = cursor->end = NULL;
	if (stretch >= 0)
	{
		cursor->pos = entries + stretches[stretch].start;
		cursor->end = cursor->pos + stretches[stretch].count;
	}
}

/*
 * Whether runs of entries, each increasing (run r the chain of stretches
 * from first[r]), share a key (*key): the runs merged, the entries of the
 * run with the smallest next key that lie below every other run's next one
 * skipped in a tight loop (the processes' runs interleave in long
 * stretches).
 */
static bool
runs_repeat_a_key(const SimhashEntry *entries, const Stretch *stretches,
				  const int64 *first, int nruns, uint64 *key)
{
	RunCursor  *cursor = palloc(sizeof(RunCursor) * Max(nruns, 1));
	uint64		rounds = 0;
	bool		repeated = false;

	for (int r = 0; r < nruns; r++)
		cursor_at(&cursor[r], entries, stretches, first[r]);
	for (;;)
	{
		int			smallest = -1;
		bool		have_second = false;
		uint64		second = 0;

		/* The run with the smallest next key, and the next smallest key of the others. */
		for (int r = 0; r < nruns; r++)
		{
			uint64		head;

			if (cursor[r].stretch < 0)
				continue;
			head = cursor[r].pos->key;
			if (smallest < 0 || head < cursor[smallest].pos->key)
			{
				if (smallest >= 0)
				{
					second = cursor[smallest].pos->key;
					have_second = true;
				}
				smallest = r;
			}
			else if (!have_second || head < second)
			{
				second = head;
				have_second = true;
			}
		}
		if (!have_second)
			break;				/* one run left: increasing */
		if (cursor[smallest].pos->key == second)
		{
			*key = second;
			repeated = true;
			break;
		}
		/* The smallest run's entries below the others' next ones, stretch after stretch. */
		for (RunCursor *run = &cursor[smallest]; run->stretch >= 0;)
		{
			while (run->pos < run->end && run->pos->key < second)
				run->pos++;
			if (run->pos < run->end)
				break;
			cursor_at(run, entries, stretches, stretches[run->stretch].next);
		}
		SIMHASH_CHECK_FOR_INTERRUPTS_EVERY(++rounds);
	}
	pfree(cursor);
	return repeated;
}

/*
 * Whether the ids of the claimed chunks (before compact()) are unique, when
 * each process's entries, its chunks in the order it claimed them, are
 * increasing (a table in id order): those runs merged.  Sets *checked false
 * if they are not increasing (then a sort must tell).
 */
static bool
runs_unique(const SimhashEntry *entries, const ChunkInfo *chunks, uint64 nchunks, bool *checked,
			uint64 *repeated)
{
	Stretch *stretches = palloc(sizeof(Stretch) * Max(nchunks, 1));
	int64		first[SIMHASH_PARALLEL_READ_MAX_PROCESSES];
	int64		last[SIMHASH_PARALLEL_READ_MAX_PROCESSES];
	bool		unique;

	*checked = true;
	for (int r = 0; r < SIMHASH_PARALLEL_READ_MAX_PROCESSES; r++)
		first[r] = last[r] = -1;
	/* Each process's chain of chunks, each increasing, and each above the one before. */
	for (uint64 c = 0; c < nchunks; c++)
	{
		int			owner = chunks[c].owner;

		stretches[c].start = c * CLAIM;
		stretches[c].count = chunks[c].used;
		stretches[c].next = -1;
		if (chunks[c].used == 0)
			continue;
		if (owner < 0 || owner >= SIMHASH_PARALLEL_READ_MAX_PROCESSES || !chunks[c].increasing ||
			(last[owner] >= 0 && chunks[last[owner]].last >= chunks[c].first))
		{
			*checked = false;
			pfree(stretches);
			return false;
		}
		if (last[owner] >= 0)
			stretches[last[owner]].next = (int64) c;
		else
			first[owner] = (int64) c;
		last[owner] = (int64) c;
	}
	unique = !runs_repeat_a_key(entries, stretches, first, SIMHASH_PARALLEL_READ_MAX_PROCESSES,
										repeated);
	pfree(stretches);
	return unique;
}

/*
 * The table's rows by the backend and up to `workers` parallel workers:
 * into the entries of run (room for capacity) if there is a run, else to
 * the rows (the workers' through their files).
 */
static void
read_in_parallel(Relation rel, const ReadShared *columns, int workers, Snapshot snapshot,
				 SimhashParallelRun *run, SimhashEntry *entries, Size capacity, SimhashRows *rows)
{
	Size		shared_bytes = offsetof(ReadShared, rows_written) + sizeof(int64) * workers;
	Size		scan_bytes;
	uint64		nchunks = run != NULL ? capacity / CLAIM : 0;
	Size		chunk_bytes = sizeof(ChunkInfo) * Max(nchunks, 1);
	ParallelContext *pcxt;
	ReadShared *read;
	ParallelTableScanDesc pscan;
	ChunkInfo  *chunks;
	Writer		w;
	int			launched;
	bool		overflowed;
	instr_time	start;
	instr_time	scanned;
	instr_time	waited;
	instr_time	done;

	EnterParallelMode();
	pcxt = CreateParallelContext("simhash", "simhash_find_all_read_worker_main", workers);
	scan_bytes = table_parallelscan_estimate(rel, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, shared_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, scan_bytes);
	shm_toc_estimate_chunk(&pcxt->estimator, chunk_bytes);
	shm_toc_estimate_keys(&pcxt->estimator, 3);
	InitializeParallelDSM(pcxt);

	read = shm_toc_allocate(pcxt->toc, shared_bytes);
	memcpy(read, columns, offsetof(ReadShared, entries_handle));
	read->entries_handle = DSM_HANDLE_INVALID;
	if (run != NULL)
		read->entries_handle = simhash_parallel_entries_handle(run, &read->entries_offset);
	if (read->entries_handle == DSM_HANDLE_INVALID)
		nchunks = 0;
	read->nchunks = nchunks;
	pg_atomic_init_u64(&read->next_chunk, 0);
	for (int i = 0; i < workers; i++)
		read->rows_written[i] = -1;
	SharedFileSetInit(&read->fileset, pcxt->seg);
	shm_toc_insert(pcxt->toc, KEY_READ_SHARED, read);
	pscan = shm_toc_allocate(pcxt->toc, scan_bytes);
	table_parallelscan_initialize(rel, pscan, snapshot);
	/* From the first block: each process's rows in the table's order, unbroken. */
	pscan->phs_syncscan = false;
	shm_toc_insert(pcxt->toc, KEY_READ_SCAN, pscan);
	chunks = shm_toc_allocate(pcxt->toc, chunk_bytes);
	memset(chunks, 0, chunk_bytes);
	shm_toc_insert(pcxt->toc, KEY_READ_CHUNKS, chunks);

	LaunchParallelWorkers(pcxt);
	launched = pcxt->nworkers_launched;
	ereport(DEBUG1,
			errmsg_internal("simhash: reading table \"%s\" by the backend with %d of %d parallel workers",
							RelationGetRelationName(rel), launched, workers));
	INSTR_TIME_SET_CURRENT(start);
	writer_init(&w, read, nchunks > 0 ? entries : NULL, chunks, rows, 0);
	scan_rows(rel, table_beginscan_parallel(rel, pscan), read, &w);
	writer_finish(&w);
	INSTR_TIME_SET_CURRENT(scanned);
	WaitForParallelWorkersToFinish(pcxt);
	INSTR_TIME_SET_CURRENT(waited);

	nchunks = Min(pg_atomic_read_u64(&read->next_chunk), nchunks);
	overflowed = rows->count > 0;
	for (int i = 0; i < launched; i++)
		overflowed |= read->rows_written[i] > 0;
	if (nchunks > 0 && !overflowed)
	{
		/* Every row in the run's memory: the ids checked, the gaps closed. */
		bool		checked;
		uint64		repeated = 0;
		bool		unique = runs_unique(entries, chunks, nchunks, &checked, &repeated);

		if (checked && !unique)
			simhash_duplicate_id_error(rows->caller, SIMHASH_ID_OF_KEY(repeated));
		rows->count = compact(entries, chunks, nchunks);
		if (!checked)
			simhash_entries_unique_ids(entries, rows->count, false, rows->caller);
		rows->placed_run = run;
		rows->placed_entries = entries;
	}
	else
	{
		SimhashEntry *buffer = palloc(sizeof(SimhashEntry) * LOAD_BATCH);

		add_placed_rows(entries, chunks, nchunks, rows);
		for (int i = 0; i < launched; i++)
			if (read->rows_written[i] > 0)
				load_worker_rows(read, i, rows, buffer);
		pfree(buffer);
	}
	INSTR_TIME_SET_CURRENT(done);
	ereport(DEBUG1,
			errmsg_internal("simhash: the backend read " UINT64_FORMAT " rows in %.3f s, waited %.3f s for the workers, then %.3f s for %zu rows%s",
							w.rows_put, simhash_seconds_between(start, scanned), simhash_seconds_between(scanned, waited),
							simhash_seconds_between(waited, done), rows->count,
							rows->placed_run != NULL ? " in place" : ""));
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	if (run != NULL && rows->placed_run == NULL)
		simhash_parallel_end(run);
}

/* Rows past the table's estimate that a run's memory has room for, in whole chunks. */
static Size
room_for(double tuples, int processes)
{
	double		rows = tuples + tuples / 16 + (double) CLAIM * processes;

	return (Size) (rows / CLAIM + 1) * CLAIM;
}

bool
simhash_read_table(CachedPlanSource *source, int requested, SimhashRows *rows)
{
	Query	   *query;
	RangeTblEntry *rte = plain_table_read(source, &query);
	ReadShared	columns = {0};
	Relation	rel;
	BlockNumber pages;
	double		tuples;
	double		allvisfrac;
	int			workers;
	Snapshot	snapshot;

	if (rte == NULL || !planned_as_seq_scan(source))
		return false;
	rel = table_open(rte->relid, AccessShareLock);
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
	{
		table_close(rel, AccessShareLock);
		return false;
	}
	/* What ExecutorStart checks, with its ERROR. */
	simhash_check_query_permissions(query);

	columns.relid = rte->relid;
	columns.id_attnum = column_of(query, 0);
	columns.hash_attnum = column_of(query, 1);
	columns.id_type = getBaseType(TupleDescAttr(RelationGetDescr(rel), columns.id_attnum - 1)->atttypid);
	strlcpy(columns.caller, rows->caller, NAMEDATALEN);

	/* The workers the search would get for the rows the planner expects. */
	estimate_rel_size(rel, NULL, &pages, &tuples, &allvisfrac);
	tuples = Max(tuples, 0);
	workers = RelationUsesLocalBuffers(rel) ? 0 : simhash_parallel_allowed_workers(requested, (Size) tuples);

	/* The snapshot SPI takes for a query that is not read-only. */
	PushActiveSnapshot(GetTransactionSnapshot());
	CommandCounterIncrement();
	UpdateActiveSnapshotCommandId();
	snapshot = GetActiveSnapshot();
	if (workers > 0)
	{
		/*
		 * The search's run first, with room for the estimate and more,
		 * where every process puts its rows: nothing to gather after.
		 */
		Size		capacity = room_for(tuples, workers + 1);
		int			search_workers = simhash_parallel_workers(requested, capacity);
		SimhashParallelRun *run = NULL;
		SimhashEntry *entries = NULL;

		if (search_workers > 0 && simhash_rows_fit(rows, capacity))
		{
			/* The run outlives SPI's memory: the rows' context, as the rows. */
			MemoryContext old = MemoryContextSwitchTo(rows->context);

			run = simhash_parallel_begin(capacity, search_workers, &entries);
			MemoryContextSwitchTo(old);
		}
		read_in_parallel(rel, &columns, workers, snapshot, run, entries, capacity, rows);
	}
	else
	{
		Writer		w;

		/* No synchronized scan: the rows in the table's order, from its first block. */
		writer_init(&w, &columns, NULL, NULL, rows, 0);
		scan_rows(rel, table_beginscan_strat(rel, snapshot, 0, NULL, true, false), &columns, &w);
	}
	PopActiveSnapshot();
	table_close(rel, AccessShareLock);
	return true;
}
