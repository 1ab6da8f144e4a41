"""simhash_mih under continuous writes (issue 29): queries while several writers
insert, per 10-second window, this checkout's write path beside an older one's.

Needs a server with the extension available ($SIMHASH_DSN; `make bench` starts
one).

First, writer scaling (--only scaling: this alone): rows/s of 1 and 4 writers
(--scaling-writers) for the same table with no index on fp (its serial
primary key only), a btree on fp and simhash_mih, side by side, so that
simhash_mih's scaling can be judged against what the machine and the clients
allow at all.  The writers are pgbench's (the server's PostgreSQL's, least
client overhead: a thread a client, prepared statements, the fingerprints
drawn by pgbench), transactions of 100 single-row INSERTs of random
fingerprints; no queries run.  For each index a table of --rows rows is
built, prewarmed and checkpointed, then takes windows of --scaling-seconds
(15) of each writer count in turn, --scaling-rounds (2) times, each window
once the last one's work is done (flushes and merges included); the best
window of each writer count is reported (the machine is shared: others'
load only slows a window).  Printed: rows/s, mean transaction latency, the
machine's idle CPU share, and the CPU time a row took in the server
(background workers included) and in pgbench, per index and writer count;
the most writers' rows/s over one writer's, and that ratio over the table's
without an index ("of ceiling").  Skipped where there is no pgbench.

Then the continuous writes (--only workload: these alone).  For each writer
count (--writers, default 4) and each design (this
checkout's, and with --baseline-ref REF the extension of git commit REF on a
second server of the same PostgreSQL):

1. builds --rows rows (random fingerprints, 1% in clusters of near copies, as
   bench_index.py), CREATE INDEX ... USING simhash_mih, autovacuum off for the
   table (--autovacuum on: left on), prewarms table and index (pg_prewarm), and
   measures the fresh index: p50/p99 at k = 3, 5, 8 of --queries queries
   (1,000) drawn from stored rows 0 to 4 bits away; then the same queries
   again for --loaded-seconds (30) while the W writers of step 2 fill
   another table of docs' shape with its own simhash_mih index, empty at
   first (docs_load, dropped after): the writers' load, their index work
   included, with the queried index left fresh; on a machine with fewer
   cores than writers and queries, what waiting for a core costs a query,
   for the windows to be read against;
2. W writer processes, each with its own connection, insert --inserts rows
   between them: transactions of 100 single-row INSERTs or, for --copy-share
   of the transactions, a COPY of --copy-rows rows (a tenth of the rows are
   near copies of stored rows, as a crawler's refetches), as fast as they can
   or, with --rate, at most that many rows a second between them; every
   INSERT (through libpq's own calls: Inserts), COMMIT and COPY is timed.
   Meanwhile one query process runs the queries at k = 3, 5, 8 in turn,
   without pause;
3. every --window seconds (10): rows/s, INSERT/COMMIT p99 and max, COPY max,
   query p50/p99 per k, simhash_mih_stats (pending rows with the sealed ones
   a flush is sorting: what every query reads whole; run sets, those being
   merged, merges done;
   "—" where the extension has no such function), the index's size, and the
   WAL written per inserted row (pg_current_wal_flush_lsn) and of it the
   index's own (the Generic WAL records simhash_mih writes, through
   pg_walinspect, PostgreSQL 15 on);
4. the same queries once the writers are done and the flush and merge
   workers they started have finished, nothing else running;
5. a summary (per k the worst window's p50 and p99 over the fresh ones, of
   the windows of half a window's length or more, the
   p50 of the query backend's CPU time a query (/proc/<pid>/schedstat: the
   index's own cost, without the wait for a core) in the median and the worst
   window over the fresh one's and over the loaded fresh one's (on a VM an
   idle machine may run a query's CPU slower than a busy one); where the
   slowest 1 % of the queries spent their time, in the worst p99 window: the
   backend's and the client's time on a CPU and waiting for one, and the
   rest asleep; the same for the middle queries (p40 to p60: what the p50
   is made of) of the loaded fresh index and of the median window; rows/s
   in the last whole window over the first, the longest wait, WAL per row;
   the same split for the slowest COPY batch, and how many took over 100 ms)
   and exactness: for --exact-queries queries (half the query set, half
   stored rows that were inserted, 0 to 2 bits away) at k = 0..8 the index's
   answer against brute force (every row read in one binary COPY, its
   distance to each probe counted by numpy), and simhash_mih_check.  Any mismatch or check failure
   makes the benchmark exit with status 1.

Then, with several runs, the summaries side by side (the older design over
this one, and rows/s of the most writers over one writer's).

Sizes: default 1M rows built, 2.4M inserted (the issue's table; a few minutes
a run on 2 cores), --large 100M + 20M (hours; give the server
BENCH_SERVER_OPTIONS="-c shared_buffers=8GB").  --quick: 100k + 200k.

    make bench BENCH=mih_writes
    make bench BENCH=mih_writes BENCH_ARGS="--only scaling --scaling-seconds 20"
    make bench BENCH=mih_writes BENCH_ARGS="--writers 1,4 --baseline-ref 927033a"
    make bench BENCH=mih_writes BENCH_ARGS="--large --baseline-ref 927033a"

(927033a: main before issue 29's write path, the design of 1.2.)

--baseline-ref builds REF's extension as the harness builds this checkout's
(its own scripts/temp-install.sh, warnings as errors) in a private copy of
REF's tree, build/bench-baseline/<commit>/, kept for the next run.
Latencies are measured at the client over a Unix socket, with prepared
statements; the client's processes share the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import psycopg
from bench_index import INDEXED, build_index, fingerprints, flips, load, p, prewarm, signed

from pysimhash_sql.throwaway import ThrowawayServer

ROOT = Path(__file__).resolve().parents[1]
RADII = (3, 5, 8)              # the radii queried while writers insert
EXACT_RADII = range(9)         # the radii checked against brute force at the end
SIZES = {"default": (1_000_000, 2_400_000), "quick": (100_000, 200_000), "large": (100_000_000, 20_000_000)}
INSERTS_PER_TRANSACTION = 100
NEAR_SHARE = 0.1               # inserted rows that are near copies (1 to 3 bits) of stored rows
SEED = 20261126
INSERT = "INSERT INTO {table} (fp) VALUES (%s::bigint::simhash64)"
LOAD_TABLE = "docs_load"       # what the writers fill while the fresh index is queried under their load
# Brute force reads every row once, in binary: (field count, id's length and int4, fp's length and int8) a row.
ROWS_OUT = "COPY (SELECT id, fp::bigint FROM docs) TO STDOUT (FORMAT binary)"
BINARY_ROW = np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", ">i4"), ("fp_len", ">i4"), ("fp", ">i8")])
BINARY_HEADER, BINARY_TRAILER = 19, 2
DASH = "—"


# ---------------------------------------------------------------- the data

def near(rng: np.random.Generator, fps: np.ndarray, count: int, max_bits: int) -> np.ndarray:
    """count fingerprints drawn from fps, each 0 to max_bits bits away (as many of each)."""
    picked = fps[rng.integers(0, len(fps), size=count)]
    bits = rng.integers(0, max_bits + 1, size=count)
    for b in range(1, max_bits + 1):
        chosen = bits == b
        picked[chosen] ^= flips(rng, int(chosen.sum()), b)
    return picked


def new_rows(rng: np.random.Generator, count: int, sources: np.ndarray) -> np.ndarray:
    """A writer's next rows: random fingerprints, NEAR_SHARE of them near copies of sources."""
    rows = rng.integers(0, 2**64, size=count, dtype=np.uint64)
    copies = rng.random(count) < NEAR_SHARE
    rows[copies] = sources[rng.integers(0, len(sources), size=int(copies.sum()))] ^ flips(
        rng, int(copies.sum()), int(rng.integers(1, 4)))
    return rows


# ---------------------------------------------------------------- the workers (processes)

@dataclass
class Window:
    """What the workers did in one window of the run (merged from their reports)."""
    rows: int = 0
    waits: list[float] = field(default_factory=list)   # INSERT statements, ms
    commits: list[float] = field(default_factory=list)  # their transactions' COMMITs, ms
    copies: list[float] = field(default_factory=list)  # COPY batches (with their COMMIT), ms
    copy_sched: list[Sched] = field(default_factory=list)  # beside copies: empty where unknown
    queries: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in RADII})
    # each query's time as the scheduler counts it (Sched), beside queries: empty where unknown
    query_sched: dict[int, list[Sched]] = field(default_factory=lambda: {k: [] for k in RADII})

    def add(self, other: Window) -> None:
        self.rows += other.rows
        self.waits += other.waits
        self.commits += other.commits
        self.copies += other.copies
        self.copy_sched += other.copy_sched
        for k in RADII:
            self.queries[k] += other.queries[k]
            self.query_sched[k] += other.query_sched[k]


class Reporter:
    """A worker's records, sent to the main process window by window (when a
    record falls in a later window than the one being filled, and at the end)."""

    def __init__(self, out, worker: int, start: float, window: float) -> None:
        self.out, self.worker, self.start, self.window = out, worker, start, window
        self.index, self.current = 0, Window()

    def at(self, end: float) -> Window:
        index = max(0, int((end - self.start) // self.window))
        if index != self.index:
            self.out.put((self.worker, self.index, self.current))
            self.index, self.current = index, Window()
        return self.current

    def close(self) -> None:
        self.out.put((self.worker, self.index, self.current))
        self.out.put((self.worker, None, None))


@dataclass
class Start:
    """The moment the workers start together: each waits at `ready` once
    connected, then for `go`; the main process then sets `at` (perf_counter,
    the same clock in every process on one machine) and `go`."""
    ready: object
    go: object
    at: object

    def wait(self) -> float:
        self.ready.wait()
        self.go.wait()
        return self.at.value

    def release(self, timeout: float = 120) -> float:
        self.ready.wait(timeout)
        self.at.value = time.perf_counter() + 0.01
        self.go.set()
        return self.at.value


def timed(run) -> tuple[float, float]:
    """(end time, milliseconds) of run()."""
    begin = time.perf_counter()
    run()
    end = time.perf_counter()
    return end, (end - begin) * 1000


class Sched(NamedTuple):
    """A query's time as the scheduler counts it, ms: the backend's on a CPU
    (what the index costs) and runnable but waiting for one, and the same for
    the client's process.  The rest of its latency is sleeping: locks, I/O."""
    cpu: float
    wait: float
    client_cpu: float
    client_wait: float


WRITER = "a writer's statement"


def succeeded(result, who: str):
    """A libpq result (psycopg's PGconn calls, which raise nothing), or exit naming who failed."""
    if result.status not in (psycopg.pq.ExecStatus.COMMAND_OK, psycopg.pq.ExecStatus.TUPLES_OK):
        raise SystemExit(f"{who} failed: {result.error_message.decode(errors='replace')}")
    return result


class SchedCounts:
    """A task's scheduler counts (/proc/<task>/schedstat: time on a CPU and
    time runnable but waiting for one, ms), the file kept open and re-read
    with one pread: a few microseconds of the client's time a look, not the
    tens that opening it again takes.  None where it cannot be read (not
    Linux, or the server on another machine)."""

    def __init__(self, task: str) -> None:
        try:
            self.fd: int | None = os.open(f"/proc/{task}/schedstat", os.O_RDONLY)
        except OSError:
            self.fd = None

    def read(self) -> tuple[float, float] | None:
        if self.fd is None:
            return None
        try:
            ran, waited = os.pread(self.fd, 128, 0).split()[:2]
            return int(ran) / 1e6, int(waited) / 1e6
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Clock:
    """A statement's time at the client and as the scheduler counts it: the
    counts of a connection's backend and of this thread, read around it."""

    def __init__(self, pgconn) -> None:
        # the client's counts read closest to the statement: they include the reads' own
        # microsecond, outside the latency
        self.tasks = (SchedCounts(str(pgconn.backend_pid)), SchedCounts("thread-self"))

    def timed(self, run) -> tuple[float, float, Sched | None]:
        """(end time, milliseconds at the client, Sched or None) of run()."""
        server, client = self.tasks
        before = (server.read(), client.read())
        end, ms = timed(run)
        after = (server.read(), client.read())
        if None in before or None in after:
            return end, ms, None
        return end, ms, Sched(*(a - b for new, old in zip(after, before) for a, b in zip(new, old)))

    def close(self) -> None:
        for task in self.tasks:
            task.close()


class Queries:
    """The queries at k = 3, 5, 8, prepared once and run through libpq's own
    calls (psycopg's PGconn, the centre as text, the rows left unread but
    counted), each timed with the scheduler's counts of its backend and of
    this process: with fewer cores than busy processes a query's latency is
    mostly its wait for a core, and its CPU time is what the index costs.
    Through psycopg's execute() the client spent about 0.1 ms a query (its
    own Python, and opening the counts' files), CPU taken from the server
    where they share the cores, and a share of the slowest queries' time
    (issue 29's split: 0.5-0.9 ms of them on the client's CPU)."""

    def __init__(self, conn: psycopg.Connection, tag: str) -> None:
        self.pgconn = conn.pgconn
        for k in RADII:
            sql = f"/* {tag} k = {k} */ " + INDEXED.format(k=k).replace("%s", "$1")
            succeeded(self.pgconn.prepare(self.name(k), sql.encode()), "a query")
        self.clock = Clock(self.pgconn)

    @staticmethod
    def name(k: int) -> bytes:
        return f"bench_query_{k}".encode()

    def run(self, k: int, centre: int) -> int:
        """The rows one query found."""
        return succeeded(self.pgconn.exec_prepared(self.name(k), [str(centre).encode()]), "a query").ntuples

    def timed(self, k: int, centre: int) -> tuple[float, float, Sched | None]:
        """(end time, milliseconds at the client, Sched) of one query."""
        return self.clock.timed(lambda: self.run(k, centre))

    def close(self) -> None:
        """The counts' files closed and the statements deallocated (the connection may go on)."""
        self.clock.close()
        for k in RADII:
            succeeded(self.pgconn.exec_(b"DEALLOCATE " + self.name(k)), "a query")


class Inserts:
    """A writer's single-row INSERTs, sent through libpq itself (psycopg's
    PGconn: a prepared statement, the value as text).  Through psycopg's
    execute() the client spent tens of microseconds a row, CPU taken from the
    server where they share the cores: the 4 writers and the query process
    took 0.9 of 2 cores, the writers' backends 0.5."""

    NAME = b"bench_insert"

    def __init__(self, conn: psycopg.Connection, table: str) -> None:
        self.pgconn = conn.pgconn
        succeeded(self.pgconn.prepare(self.NAME, INSERT.format(table=table).replace("%s", "$1").encode()), WRITER)

    def run(self, command: bytes) -> None:
        succeeded(self.pgconn.exec_(command), WRITER)

    def insert(self, fp: int) -> None:
        succeeded(self.pgconn.exec_prepared(self.NAME, [str(fp).encode()]), WRITER)


def writer(dsn: str, worker: int, plan: dict, claimed, sources: np.ndarray, out, starting: Start) -> None:
    """Inserts rows until plan['inserts'] rows are claimed by all writers
    together; with plan['rate'], at most that many rows a second between them
    (each writer its share, a transaction at a time)."""
    rng = np.random.default_rng([SEED, worker])
    with psycopg.connect(dsn) as conn:
        if plan["pending_limit"]:
            conn.execute(f"SET simhash.mih_pending_limit = {int(plan['pending_limit'])}")
        conn.commit()
        inserts = Inserts(conn, plan["table"])
        clock = Clock(conn.pgconn)
        start = starting.wait()
        report = Reporter(out, worker, start, plan["window"])
        pace = plan["writers"] / plan["rate"] if plan["rate"] else 0.0   # seconds a row, this writer
        due = start
        while True:
            copy = rng.random() < plan["copy_share"]
            with claimed.get_lock():
                take = min(plan["copy_rows"] if copy else INSERTS_PER_TRANSACTION, plan["inserts"] - claimed.value)
                claimed.value += max(take, 0)
            if take <= 0 or time.perf_counter() > start + plan["seconds"]:
                break
            if pace:   # no bursts to catch up after a stall: the rate is a ceiling
                now = time.perf_counter()
                time.sleep(max(0.0, due - now))
                due = max(due, now) + take * pace
            rows = new_rows(rng, take, sources)
            if copy:
                def batch() -> None:
                    with conn.cursor().copy(f"COPY {plan['table']} (fp) FROM STDIN") as stream:
                        stream.write("".join(f"{fp}\n" for fp in rows.tolist()))  # unsigned, as simhash64's text
                    conn.commit()
                end, ms, sched = clock.timed(batch)
                window = report.at(end)
                window.copies.append(ms)
                if sched is not None:
                    window.copy_sched.append(sched)
            else:
                inserts.run(b"BEGIN")
                for fp in signed(rows):
                    end, ms = timed(lambda fp=fp: inserts.insert(fp))
                    report.at(end).waits.append(ms)
                end, ms = timed(lambda: inserts.run(b"COMMIT"))
                window = report.at(end)
                window.commits.append(ms)
            window.rows += take
    clock.close()
    report.close()


def querier(dsn: str, worker: int, plan: dict, centres: list[int], stop, out, starting: Start) -> None:
    """Runs the queries at k = 3, 5, 8 in turn until stop is set."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        queries = Queries(conn, "window")
        for k in RADII:  # the plans, before the clock starts
            queries.run(k, centres[0])
        start = starting.wait()
        report = Reporter(out, worker, start, plan["window"])
        i = 0
        while not stop.is_set():
            k = RADII[i % len(RADII)]
            end, ms, sched = queries.timed(k, centres[i // len(RADII) % len(centres)])
            window = report.at(end)
            window.queries[k].append(ms)
            if sched is not None:
                window.query_sched[k].append(sched)
            i += 1
        queries.close()
    report.close()


# ---------------------------------------------------------------- the server side of a window

class Sampler:
    """The server's side of the windows: the index's stats and size, and WAL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.has_stats = conn.execute("SELECT to_regprocedure('simhash_mih_stats(regclass)') IS NOT NULL").fetchone()[0]
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            self.walinspect = True
        except psycopg.Error:  # before PostgreSQL 15, or not installed
            self.walinspect = False

    def sample(self) -> dict:
        row = self.conn.execute("SELECT pg_current_wal_flush_lsn(), pg_relation_size('docs_fp')").fetchone()
        taken = {"lsn": row[0], "index_bytes": row[1]}
        if self.has_stats:
            cursor = self.conn.execute("SELECT * FROM simhash_mih_stats('docs_fp')")
            stats = dict(zip((c.name for c in cursor.description), cursor.fetchone()))
            # The rows every query reads unsorted: pending, and sealed for a flush that is sorting them.
            stats["pending_rows"] += stats.get("sealed_rows") or 0
            taken["stats"] = stats
        return taken

    def wal_bytes(self, before: dict, after: dict) -> tuple[int, int | None]:
        """WAL written between two samples: all of it, and the Generic records
        (simhash_mih's own) where pg_walinspect can tell."""
        total = self.conn.execute("SELECT %s::pg_lsn - %s::pg_lsn", (after["lsn"], before["lsn"])).fetchone()[0]
        if not self.walinspect or total == 0:
            return int(total), 0 if self.walinspect else None
        generic = self.conn.execute(
            "SELECT coalesce(sum(combined_size), 0) FROM pg_get_wal_stats(%s, %s) WHERE \"resource_manager/record_type\" = 'Generic'",
            (before["lsn"], after["lsn"])).fetchone()[0]
        return int(total), int(generic)


# ---------------------------------------------------------------- one run

@dataclass
class Run:
    design: str
    writers: int
    fresh: dict[int, tuple[float, float]]
    fresh_cpu: dict[int, float]  # p50 of the backend's CPU time a query, ms (empty where unknown)
    after: dict[int, tuple[float, float]] = field(default_factory=dict)  # the same queries once the writers are done
    after_cpu: dict[int, float] = field(default_factory=dict)
    # the fresh index's queries while the writers fill another table: what their load alone costs a query here
    loaded: dict[int, tuple[float, float]] = field(default_factory=dict)
    loaded_queries: Window | None = None  # those queries' latencies and scheduler counts
    # per window: what the workers did, the sample at its end, WAL (all, index), seconds, end (s from the start)
    windows: list[tuple[Window, dict, tuple[int, int | None], float, float]] = field(default_factory=list)
    inserted: int = 0
    seconds: float = 0.0
    wal: tuple[int, int | None] = (0, None)
    mismatches: int = 0
    checked: int = 0
    check_error: str = ""
    exact_seconds: float = 0.0
    final: dict = field(default_factory=dict)


def build(conn: psycopg.Connection, fps: np.ndarray, options) -> str:
    load(conn, fps)
    if options.autovacuum == "off":
        conn.execute("ALTER TABLE docs SET (autovacuum_enabled = off)")
    seconds, per_row = build_index(conn, using="simhash_mih (fp)")
    return f"built in {seconds:.1f} s, {per_row:.1f} bytes/row"


def fresh_latencies(conn: psycopg.Connection, centres: list[int],
                    tag: str = "fresh") -> tuple[dict[int, tuple[float, float]], dict[int, float]]:
    """p50 and p99 of the queries at each k, with nothing else running; and
    the p50 of their backend's CPU time (empty where it cannot be read)."""
    fresh, cpu = {}, {}
    queries = Queries(conn, tag)
    for k in RADII:
        for centre in centres[:5]:  # the cache and the plan
            queries.run(k, centre)
        timings = [queries.timed(k, centre)[1:] for centre in centres]
        fresh[k] = (p([ms for ms, _ in timings], 50), p([ms for ms, _ in timings], 99))
        if all(c is not None for _, c in timings):
            cpu[k] = p([c.cpu for _, c in timings], 50)
    queries.close()
    return fresh, cpu


def settle(conn: psycopg.Connection, limit: float = 900.0) -> float:
    """Waits until no simhash_mih flush or merge worker runs (those the writes
    started finish in the background), three looks in a row half a second
    apart; returns the seconds waited."""
    start, quiet = time.perf_counter(), 0
    while quiet < 3 and time.perf_counter() - start < limit:
        busy = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'simhash_mih %'").fetchone()[0]
        quiet = 0 if busy else quiet + 1
        time.sleep(0.5)
    return time.perf_counter() - start


def start_workers(dsn: str, writers: int, plan: dict, centres: list[int], sources: np.ndarray):
    """`writers` writer processes (workers 0..writers-1) and the query process
    (worker `writers`), started together: (their reports' queue, the event
    that stops the queries, the processes, the moment they started)."""
    spawn = multiprocessing.get_context("spawn")
    out, stop, claimed = spawn.Queue(), spawn.Event(), spawn.Value("q", 0)
    starting = Start(spawn.Barrier(writers + 2), spawn.Event(), spawn.Value("d", 0.0))
    processes = [spawn.Process(target=writer, args=(dsn, w, plan, claimed, sources, out, starting))
                 for w in range(writers)]
    processes.append(spawn.Process(target=querier, args=(dsn, writers, plan, centres, stop, out, starting)))
    for process in processes:
        process.start()
    return out, stop, processes, starting.release()


def join_workers(processes: list) -> None:
    for process in processes:
        process.join()
        if process.exitcode:
            raise SystemExit(f"a worker process failed (exit code {process.exitcode})")


def workload(dsn: str, run: Run, plan: dict, centres: list[int], sources: np.ndarray, sampler: Sampler) -> None:
    """The writers and the query process, the windows printed as they complete."""
    out, stop, processes, start = start_workers(dsn, run.writers, plan, centres, sources)
    samples = [sampler.sample()]
    windows: dict[int, Window] = {}
    reached = dict.fromkeys(range(run.writers + 1), -1)   # each worker's latest window reported
    writing = set(range(run.writers))
    ended = None
    print(header(), flush=True)
    while len(run.windows) < len(samples) - 1 or ended is None:
        boundary = start + len(samples) * plan["window"] if ended is None else math.inf
        try:
            worker, index, part = out.get(timeout=min(1.0, max(0.0, boundary - time.perf_counter())))
        except queue.Empty:
            worker = None
            failed = [process.exitcode for process in processes if process.exitcode]
            if failed:
                for process in processes:
                    process.terminate()
                raise SystemExit(f"a worker process failed (exit codes {failed})")
        if ended is None and time.perf_counter() >= boundary:
            samples.append(sampler.sample())
        if worker is not None:
            if index is None:
                reached[worker] = math.inf
                writing.discard(worker)
                if not writing and ended is None:     # the last writer is done: the run ends here
                    ended = time.perf_counter()
                    samples.append(sampler.sample())
                    stop.set()
            else:
                windows.setdefault(index, Window()).add(part)
                reached[worker] = max(reached[worker], index)
        while len(run.windows) < len(samples) - 1 and (
                min(reached.values()) > len(run.windows) or all(r == math.inf for r in reached.values())):
            index = len(run.windows)
            end = start + (index + 1) * plan["window"] if ended is None or index < len(samples) - 2 else ended
            seconds = end - (start + index * plan["window"])
            wal = sampler.wal_bytes(samples[index], samples[index + 1])
            run.windows.append((windows.pop(index, Window()), samples[index + 1], wal, seconds, end - start))
            print(row(*run.windows[-1]), flush=True)
    join_workers(processes)
    # Records after the last sample (queries finishing as the run stops) fall in a window never printed.
    run.seconds = ended - start
    run.inserted = sum(w.rows for w, *_ in run.windows)
    # The windows' sums: WAL segments a long run wrote may be gone by now (pg_walinspect reads them).
    generic = [wal[1] for _, _, wal, _, _ in run.windows]
    run.wal = (sum(wal[0] for _, _, wal, _, _ in run.windows), None if None in generic else sum(generic))
    run.final = samples[-1]


def loaded_latencies(conn: psycopg.Connection, dsn: str, writers: int, plan: dict, centres: list[int],
                     sources: np.ndarray, seconds: float) -> tuple[dict[int, tuple[float, float]], float, Window]:
    """p50 and p99 of the fresh index's queries at each k while `writers`
    writers insert as the run's will, for `seconds`, into LOAD_TABLE (docs'
    shape, its own simhash_mih index, empty at first), and the rows a second
    they inserted: on a machine with fewer cores than writers and queries, a
    query waits for a core; this is that wait under the same work a row
    (the flushes and merges of a small index, not of the queried one's
    size), for the windows to be read against.  Also the queries' own
    latencies and scheduler counts (a Window)."""
    conn.execute(f"CREATE TABLE {LOAD_TABLE} (LIKE docs INCLUDING DEFAULTS)")
    conn.execute(f"ALTER TABLE {LOAD_TABLE} ADD PRIMARY KEY (id)")
    conn.execute(f"CREATE INDEX ON {LOAD_TABLE} USING simhash_mih (fp)")
    loading = dict(plan, table=LOAD_TABLE, seconds=seconds, inserts=2**62)
    out, stop, processes, _ = start_workers(dsn, writers, loading, centres, sources)
    total, done = Window(), set()
    while len(done) < len(processes):
        worker, index, part = out.get(timeout=seconds + 120)
        if index is None:
            done.add(worker)
            if len(done & set(range(writers))) == writers:
                stop.set()
        else:
            total.add(part)
    join_workers(processes)
    conn.execute(f"DROP TABLE {LOAD_TABLE}")
    return {k: (p(total.queries[k], 50), p(total.queries[k], 99)) for k in RADII}, total.rows / seconds, total


def all_rows(conn: psycopg.Connection) -> tuple[np.ndarray, np.ndarray]:
    """Every row's (id, fingerprint as uint64), read in one binary COPY (at 120M rows about 2.6 GB
    in memory for a moment; a sequential scan comparing each row with each probe in SQL took
    over 15 minutes there)."""
    with conn.cursor().copy(ROWS_OUT) as copy:
        data = bytearray()
        for chunk in copy:
            data += chunk
    rows = np.frombuffer(data, dtype=BINARY_ROW, offset=BINARY_HEADER,
                         count=(len(data) - BINARY_HEADER - BINARY_TRAILER) // BINARY_ROW.itemsize)
    if len(rows) and not ((rows["fields"] == 2).all() and (rows["id_len"] == 4).all() and (rows["fp_len"] == 8).all()):
        raise SystemExit("the binary COPY of docs is not (int4, int8) rows")
    return rows["id"].astype(np.int64), rows["fp"].astype(np.int64).view(np.uint64)


def exactness(conn: psycopg.Connection, run: Run, centres: list[int], built: int, rng: np.random.Generator,
              count: int) -> None:
    """count queries at k = 0..8, the index's answers against a sequential scan's."""
    began = time.perf_counter()
    stored = np.array([r[0] for r in conn.execute(
        "SELECT fp::bigint FROM docs WHERE id > %s ORDER BY random() LIMIT %s", (built, count - count // 2))],
        dtype=np.int64).view(np.uint64)
    probes = centres[: count // 2] + (signed(near(rng, stored, len(stored), 2)) if len(stored) else [])
    ids, fps = all_rows(conn)
    truth: dict[int, dict[int, int]] = {}
    for n, centre in enumerate(probes):
        distances = np.bitwise_count(fps ^ np.int64(centre).view(np.uint64))
        near_ones = np.flatnonzero(distances <= max(EXACT_RADII))
        truth[n] = dict(zip(ids[near_ones].tolist(), distances[near_ones].tolist()))
    del ids, fps
    conn.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + INDEXED.format(k=8), (probes[0],)))
    if "docs_fp" not in plan:
        raise SystemExit(f"the exactness check's queries do not use the index:\n{plan}")
    for n, centre in enumerate(probes):
        for k in EXACT_RADII:
            found = [r[0] for r in conn.execute(INDEXED.format(k=k), (centre,), prepare=True)]
            run.mismatches += mismatch(found, truth[n], k)
            run.checked += 1
    conn.execute("RESET enable_seqscan")
    try:
        conn.execute("SELECT simhash_mih_check('docs_fp')")
    except psycopg.Error as error:
        run.check_error = str(error).strip()
    run.exact_seconds = time.perf_counter() - began


def mismatch(found: list[int], truth: dict[int, int], k: int) -> bool:
    """Whether an index answer (row ids) differs from brute force's (row id -> distance) at k."""
    return len(found) != len(set(found)) or set(found) != {i for i, d in truth.items() if d <= k}


def one_run(dsn: str, design: str, writers: int, options, plan: dict) -> Run:
    rng = np.random.default_rng(SEED)
    fps = fingerprints(rng, options.rows)
    centres = signed(near(rng, fps, options.queries, 4))
    sources = near(rng, fps, 10_000, 0)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        built = build(conn, fps, options)
        del fps
        run = Run(design, writers, *fresh_latencies(conn, centres))
        version = conn.execute("SHOW server_version").fetchone()[0]
        mix = (f"{INSERTS_PER_TRANSACTION} INSERTs a transaction" + (
            f", {options.copy_share:.0%} of transactions a COPY of {options.copy_rows:,} rows" if options.copy_share else ""))
        print(f"\n{design}, {writers} writer{'s' if writers > 1 else ''}, PostgreSQL {version}: {options.rows:,} rows"
              f" {built}; {options.inserts:,} to insert ({mix}"
              + (f", at most {options.rate:,.0f} rows/s" if options.rate else "") + f"), autovacuum {options.autovacuum}"
              + (f", simhash.mih_pending_limit {options.pending_limit}" if options.pending_limit else ""))
        print_latencies("fresh", run.fresh)
        if options.loaded_seconds > 0:
            run.loaded, loading, run.loaded_queries = loaded_latencies(conn, dsn, writers, plan, centres, sources,
                                                                       options.loaded_seconds)
            print_latencies(f"fresh, while {writers} writers fill another table with its own index ({LOAD_TABLE},"
                            f" {loading:,.0f} rows/s) for {options.loaded_seconds:.0f} s", run.loaded)
        workload(dsn, run, plan, centres, sources, Sampler(conn))
        settled = settle(conn)
        run.after, run.after_cpu = fresh_latencies(conn, centres, "after")
        print_latencies(f"after the writes and the flushes and merges they started ({settled:.1f} s more),"
                        " nothing else running", run.after)
        exactness(conn, run, centres, options.rows, rng, options.exact_queries)
        conn.execute("DROP TABLE docs")
    print_summary(run, plan["window"])
    return run


# ---------------------------------------------------------------- writer scaling (pgbench)

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100   # of /proc's CPU times, a second
# What the table's writers scale against: (name, the CREATE INDEX's USING, None for none).
SCALING_INDEXES = (("no index on fp", None), ("btree (fp)", "btree (fp)"), ("simhash_mih (fp)", "simhash_mih (fp)"))


@dataclass
class Scaling:
    """One pgbench window: rows/s and the mean transaction latency, for an index and a writer count."""
    index: str
    writers: int
    rows_per_second: float
    latency_ms: float
    idle: float | None   # the machine's idle share of CPU time meanwhile (None: no /proc/stat)
    server_us: float | None  # the server's CPU time per row, microseconds (None: not measurable here)
    client_us: float     # pgbench's CPU time per row, microseconds


def cpu_times() -> tuple[int, int] | None:
    """(idle, all) CPU time of the machine since boot, in ticks (Linux's /proc/stat), else None."""
    try:
        ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return ticks[3] + ticks[4], sum(ticks[:8])   # idle and iowait; user to steal


def idle_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def process_ticks(pid: int) -> tuple[int, int, int] | None:
    """(parent pid, own CPU ticks, reaped children's CPU ticks) of a process (/proc/<pid>/stat), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def server_ticks(postmaster: int | None) -> int | None:
    """CPU ticks of the server so far: the postmaster's, its processes' living
    (and exited, not yet reaped), and those it reaped (its children's times)."""
    own = process_ticks(postmaster) if postmaster else None
    if own is None:
        return None
    total = own[1] + own[2]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (child := process_ticks(int(entry.name))) and child[0] == postmaster:
            total += child[1]
    return total


def settled_server_ticks(conn: psycopg.Connection, postmaster: int | None, timeout: float = 120) -> int | None:
    """server_ticks once no pgbench session and no simhash_mih worker runs in this
    database (a window's work done, flushes and merges included) and their
    processes are reaped."""
    waited = time.perf_counter() + timeout
    while time.perf_counter() < waited and conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND (application_name = 'pgbench' OR backend_type LIKE 'simhash_mih%')").fetchone()[0]:
        time.sleep(0.05)
    time.sleep(0.2)   # the postmaster reaps an exited process within milliseconds
    return server_ticks(postmaster)


def pgbench_binary() -> str | None:
    """The pgbench of the server's PostgreSQL ($PG_CONFIG's bindir, as the harness
    exports it), else the one on PATH, else None."""
    try:
        bindir = subprocess.run([os.environ.get("PG_CONFIG", "pg_config"), "--bindir"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        bindir = ""
    found = Path(bindir, "pgbench")
    return str(found) if bindir and found.exists() else shutil.which("pgbench")


def pgbench_script(path: Path) -> Path:
    """A transaction of INSERTS_PER_TRANSACTION single-row INSERTs, each of a random
    fingerprint that pgbench draws (two halves: its random() takes no range of 2^64)."""
    insert = ("\\set fp random(-2147483648, 2147483647) * 4294967296 + random(0, 4294967295)\n"
              "INSERT INTO docs (fp) VALUES (:fp::bigint::simhash64);\n")
    path.write_text("BEGIN;\n" + insert * INSERTS_PER_TRANSACTION + "COMMIT;\n")
    return path


def pgbench_window(binary: str, dsn: str, script: Path, writers: int, seconds: float,
                   pending_limit: int | None) -> tuple[int, float, float]:
    """(transactions, transactions/s, mean latency ms) of `writers` pgbench clients,
    each a thread of its own, prepared statements, for `seconds`."""
    environment = dict(os.environ)
    if pending_limit:
        environment["PGOPTIONS"] = f"{environment.get('PGOPTIONS', '')} -c simhash.mih_pending_limit={int(pending_limit)}"
    done = subprocess.run([binary, "--no-vacuum", "--protocol=prepared", f"--file={script}", f"--client={writers}",
                           f"--jobs={writers}", f"--time={max(1, round(seconds))}", dsn],
                          capture_output=True, text=True, env=environment)
    if done.returncode:
        raise SystemExit(f"pgbench failed (exit status {done.returncode}):\n{done.stderr}")
    out = done.stdout
    def figure(pattern: str) -> str:
        return re.search(pattern, out, re.M).group(1)
    return (int(figure(r"^number of transactions actually processed: (\d+)")), float(figure(r"^tps = ([\d.]+)")),
            float(figure(r"^latency average = ([\d.]+) ms")))


def writer_scaling(dsn: str, options, script_dir: Path) -> list[Scaling]:
    """rows/s of 1 and more pgbench writers (--scaling-writers) for the table with no
    index on fp, with a btree on it and with simhash_mih, each on a table of
    --rows rows (the same data) built, prewarmed and checkpointed: windows of
    each writer count in turn, --scaling-rounds times, on the growing table,
    each once the last one's work (flushes, merges) is done; per index and
    writer count the best window (the machine is shared: others' load only
    slows a window).  dsn: host, port, user and dbname only (pgbench's libpq
    may be older than psycopg's, which spells out options the older one
    refuses)."""
    binary = pgbench_binary()
    if binary is None:
        print("writer scaling: no pgbench (neither in $PG_CONFIG's bindir nor on PATH): skipped")
        return []
    script = pgbench_script(script_dir / "inserts.pgbench")
    fps = fingerprints(np.random.default_rng(SEED), options.rows)
    best: dict[tuple[str, int], Scaling] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        version = conn.execute("SHOW server_version").fetchone()[0]
        # The server's processes are the postmaster's children; this connection's backend is one.
        postmaster = (process_ticks(conn.info.backend_pid) or (None,))[0]
        print(f"\nwriter scaling (pgbench {binary}, PostgreSQL {version}, {os.cpu_count()} cores shared with the"
              f" clients): {options.rows:,} rows built, then windows of {options.scaling_seconds:.0f} s of"
              f" transactions of {INSERTS_PER_TRANSACTION} single-row INSERTs (prepared, random fingerprints drawn"
              f" by pgbench), {options.scaling_rounds} round(s), the best window of each"
              + (f", simhash.mih_pending_limit {options.pending_limit}" if options.pending_limit else ""), flush=True)
        for name, using in SCALING_INDEXES:
            load(conn, fps)
            conn.execute("ALTER TABLE docs SET (autovacuum_enabled = off)")
            if using:
                build_index(conn, using=using)
            else:
                prewarm(conn, index="docs_pkey")
            conn.execute("CHECKPOINT")
            for _ in range(options.scaling_rounds):
                for writers in options.scaling_writers:
                    window = scaling_window(conn, postmaster, name, writers, binary, dsn, script, options)
                    print(f"  {name}, {writers} writer{'s' if writers > 1 else ''}: {window.rows_per_second:,.0f}"
                          f" rows/s, CPU idle {DASH if window.idle is None else f'{window.idle:.0%}'},"
                          f" load average {os.getloadavg()[0]:.1f}", flush=True)
                    if (name, writers) not in best or window.rows_per_second > best[name, writers].rows_per_second:
                        best[name, writers] = window
        conn.execute("DROP TABLE docs")
    results = list(best.values())
    print_scaling(results)
    return results


def scaling_window(conn: psycopg.Connection, postmaster: int | None, name: str, writers: int, binary: str, dsn: str,
                   script: Path, options) -> Scaling:
    """One pgbench window of `writers` writers on the table as it is, measured:
    the new rows counted against pgbench's transactions (a difference exits)."""
    rows_before = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    before = cpu_times(), settled_server_ticks(conn, postmaster), os.times()
    transactions, tps, latency = pgbench_window(binary, dsn, script, writers, options.scaling_seconds,
                                                options.pending_limit)
    idle = idle_share(before[0], cpu_times())
    after = settled_server_ticks(conn, postmaster), os.times()
    rows = transactions * INSERTS_PER_TRANSACTION
    inserted = conn.execute("SELECT count(*) FROM docs").fetchone()[0] - rows_before
    if inserted != rows:
        raise SystemExit(f"pgbench reported {transactions:,} transactions, the table has {inserted:,} new rows")
    server_us = None if None in (before[1], after[0]) else (after[0] - before[1]) / TICKS / rows * 1e6
    client = (after[1].children_user + after[1].children_system - before[2].children_user - before[2].children_system)
    return Scaling(name, writers, tps * INSERTS_PER_TRANSACTION, latency, idle, server_us, client / rows * 1e6)


def print_scaling(results: list[Scaling]) -> None:
    """rows/s per index and writer count side by side, with the mean transaction
    latency, the machine's idle CPU share meanwhile (none idle: the writers had
    all the machine gave them), and the CPU time a row took in the server and
    in pgbench (with no idle CPU, rows/s is about the cores free over their
    sum); then the most writers' rows/s over one writer's, and that ratio over
    the table's without an index (the ceiling of this machine and these
    clients)."""
    counts = sorted({r.writers for r in results})
    rates = {(r.index, r.writers): r for r in results}
    fewest, most = counts[0], counts[-1]
    print(f"  {'':<18}" + "".join(f" {f'{w} writer' + ('s' if w > 1 else ''):-^46}" for w in counts))
    print(f"  {'index':<18}" + f" {'rows/s':>9} {'latency':>8} {'idle':>5} {'server us/row':>13} {'pgbench':>7}" * len(counts)
          + f" {f'{most}w/{fewest}w':>7} {'of ceiling':>10}")
    ceiling = None
    for name, _ in SCALING_INDEXES:
        scale = rates[name, most].rows_per_second / rates[name, fewest].rows_per_second
        ceiling = ceiling or scale
        print(f"  {name:<18}" + "".join(
            f" {r.rows_per_second:>9,.0f} {r.latency_ms:>6.1f}ms {DASH if r.idle is None else f'{r.idle:.0%}':>5}"
            f" {DASH if r.server_us is None else f'{r.server_us:.1f}':>13} {r.client_us:>7.1f}"
            for r in (rates[name, w] for w in counts)) + f" {scale:>6.2f}x {scale / ceiling:>10.2f}")


# ---------------------------------------------------------------- printing

def ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def stat(sample: dict, name: str) -> str:
    value = sample.get("stats", {}).get(name)
    return DASH if value is None else f"{value:,}"


def per_row(wal: int | None, rows: int) -> str:
    return DASH if wal is None or not rows else f"{wal / rows:,.0f}"


def header() -> str:
    return (f"{'t (s)':>6} {'rows/s':>8} {'ins p99':>8} {'ins max':>8} {'copy max':>8}"
            + "".join(f" {f'k={k} p50':>8} {'p99':>7}" for k in RADII)
            + f" {'pending':>9} {'sets':>4} {'merging':>7} {'merges':>6} {'index MB':>8} {'WAL B/row':>9} {'index':>6}")


def percentiles(values: list[float], *qs: float) -> list[str]:
    return [ms(p(values, q)) if values else DASH for q in qs]


def row(window: Window, sample: dict, wal: tuple[int, int | None], seconds: float, end: float) -> str:
    """One window's line: end time (s since the writers started), then the columns of header()."""
    waits = window.waits + window.commits
    return (f"{end:>6.0f} {window.rows / seconds if seconds else 0:>8,.0f} {percentiles(waits, 99)[0]:>8}"
            f" {ms(max(waits)) if waits else DASH:>8} {ms(max(window.copies)) if window.copies else DASH:>8}"
            + "".join(f" {a:>8} {b:>7}" for k in RADII for a, b in [percentiles(window.queries[k], 50, 99)])
            + f" {stat(sample, 'pending_rows'):>9} {stat(sample, 'run_sets'):>4} {stat(sample, 'merging_sets'):>7}"
            f" {stat(sample, 'merges'):>6}"
            f" {sample['index_bytes'] / 1e6:>8.1f} {per_row(wal[0], window.rows):>9} {per_row(wal[1], window.rows):>6}")


SPLIT = "server CPU / server's core wait / client CPU / client's core wait / asleep (ms)"


def split(queries: list[tuple[float, Sched]]) -> tuple[float, ...]:
    """The mean of each part of these queries' time (SPLIT's five), and their mean latency first."""
    latency, *parts = (sum(column) / len(queries) for column in zip(*((ms, *sched) for ms, sched in queries)))
    return latency, *parts, max(0.0, latency - sum(parts))


def timed_queries(window: Window, k: int) -> list[tuple[float, Sched]]:
    """The queries at k with their scheduler counts; none where some could not be read."""
    if not window.queries[k] or len(window.query_sched[k]) != len(window.queries[k]):
        return []
    return list(zip(window.queries[k], window.query_sched[k]))


def middle_split(k: int, name: str, window: Window | None) -> tuple[str, float | None, str]:
    """Where the middle queries at k of a window (p40 to p60 of its latencies)
    spent their time: what the p50 is made of.  The value (for ratios) is
    their server CPU time."""
    label = f"k = {k} middle queries (p40-p60), {name}: {SPLIT}"
    queries = timed_queries(window, k) if window else []
    if not queries:
        return label, None, DASH
    low, high = p([ms for ms, _ in queries], 40), p([ms for ms, _ in queries], 60)
    _, *parts = split([(ms, sched) for ms, sched in queries if low <= ms <= high])
    return label, parts[0], " / ".join(f"{x:.3f}" for x in parts)


def slowest_split(k: int, windows: list[Window]) -> tuple[str, float | None, str]:
    """Where the slowest 1 % of the queries at k spent their time, in the
    window with the worst p99 (mean ms of the queries at or over its p99):
    the backend's and the client's time on a CPU and waiting for one, and the
    rest, asleep (locks, I/O).  The value (for ratios) is the share of their
    latency the backend spent waiting for a core."""
    name = f"k = {k} slowest 1 % of the worst p99 window: {SPLIT}"
    timed = [w for w in windows if timed_queries(w, k)]
    if not timed:
        return name, None, DASH
    worst = max(timed, key=lambda w: p(w.queries[k], 99))
    edge = p(worst.queries[k], 99)
    latency, *parts = split([(ms, sched) for ms, sched in timed_queries(worst, k) if ms >= edge])
    return name, parts[1] / latency if latency else None, " / ".join(f"{x:.3f}" for x in parts)


def slowest_copy(windows: list[Window]) -> tuple[str, float | None, str]:
    """Where the slowest COPY batch spent its time: on a CPU or waiting for
    one (the writer's backend, the writer), or asleep (locks, I/O, its WAL's
    flush).  The value (for ratios) is its time asleep."""
    name = f"COPY batch max: {SPLIT}"
    timed = [(ms, sched) for w in windows if len(w.copy_sched) == len(w.copies) for ms, sched in zip(w.copies, w.copy_sched)]
    if not timed:
        return name, None, DASH
    _, *parts = split([max(timed, key=lambda batch: batch[0])])
    return name, parts[-1], " / ".join(f"{x:.1f}" for x in parts)


def summary(run: Run, window_seconds: float) -> list[tuple[str, float | None, str]]:
    """The run's figures: (name, value for ratios or None, text)."""
    def figure(name: str, value: float | None, form: str = ".3f") -> tuple[str, float | None, str]:
        return name, value, DASH if value is None else format(value, form) + ("x" if name.endswith("fresh") else "")
    whole = [w for w, _, _, seconds, _ in run.windows if seconds >= 0.99 * window_seconds]
    # Latencies' worst and median windows: those of half a window or more (the last
    # one may last a moment, as the writers finish, with a few queries).
    lasting = [w for w, _, _, seconds, _ in run.windows if seconds >= 0.5 * window_seconds]
    inserts = [t for w, *_ in run.windows for t in w.waits]
    commits = [t for w, *_ in run.windows for t in w.commits]
    copies = [t for w, *_ in run.windows for t in w.copies]
    figures = [figure("rows/s", run.inserted / run.seconds, ",.0f"),
               figure("rows/s, last whole window / first", whole[-1].rows / whole[0].rows
                      if len(whole) > 1 and whole[0].rows else None, ".2f")]
    for k in RADII:
        for q, column in ((50, 0), (99, 1)):
            worst = max((p(w.queries[k], q) for w in lasting if w.queries[k]), default=None)
            figures.append(figure(f"k = {k} p{q} fresh (ms)", run.fresh[k][column]))
            figures.append(figure(f"k = {k} p{q} worst window (ms)", worst))
            figures.append(figure(f"k = {k} p{q} worst window / fresh", worst and worst / run.fresh[k][column], ".1f"))
            if run.loaded:
                figures.append(figure(f"k = {k} p{q} worst window / loaded fresh",
                                      worst and worst / run.loaded[k][column], ".1f"))
        figures.append(figure(f"k = {k} p50 after the writes / fresh", run.after[k][0] / run.fresh[k][0], ".1f"))
        figures.append(figure(f"k = {k} CPU p50 after the writes / fresh", run.after_cpu[k] / run.fresh_cpu[k]
                              if k in run.after_cpu and run.fresh_cpu.get(k) else None, ".1f"))
        figures.append(slowest_split(k, lasting))
        # the index's own cost apart from waiting for a core: the backend's CPU time a query
        cpu = [p([c.cpu for c in w.query_sched[k]], 50) for w in lasting if w.query_sched[k]]
        fresh_cpu = run.fresh_cpu.get(k)
        loaded_cpu = [c.cpu for _, c in timed_queries(run.loaded_queries, k)] if run.loaded_queries else []
        # on a VM an idle machine's CPU can run a query slower than a busy one's: the loaded fresh
        # index's CPU time is the one measured under the windows' conditions
        for name, base in (("fresh", fresh_cpu), ("loaded fresh", p(loaded_cpu, 50) if loaded_cpu else None)):
            figures.append(figure(f"k = {k} CPU p50 {name} (ms)", base))
            for window, value in (("median", p(cpu, 50) if cpu else None), ("worst", max(cpu, default=None))):
                figures.append(figure(f"k = {k} CPU p50 {window} window / {name}",
                                      value / base if value is not None and base else None, ".1f"))
        # what the p50 is made of, under the same load with the index fresh and in the median window
        median = sorted((w for w in lasting if timed_queries(w, k)), key=lambda w: p(w.queries[k], 50))
        figures.append(middle_split(k, "loaded fresh", run.loaded_queries))
        figures.append(middle_split(k, "the median p50 window", median[len(median) // 2] if median else None))
    # an INSERT waits for the index (and the table); a COMMIT for its WAL's flush
    figures += [figure("INSERT/COMMIT p99 (ms)", p(inserts + commits, 99) if inserts or commits else None),
                figure("INSERT/COMMIT max (ms)", max(inserts + commits, default=None), ".1f"),
                figure("INSERT p99 (ms)", p(inserts, 99) if inserts else None),
                figure("INSERT max (ms)", max(inserts, default=None), ".1f"),
                figure("COMMIT p99 (ms)", p(commits, 99) if commits else None),
                figure("COMMIT max (ms)", max(commits, default=None), ".1f"),
                figure("COPY batch max (ms)", max(copies, default=None), ".1f"),
                slowest_copy([w for w, *_ in run.windows]),
                figure("COPY batches over 100 ms", sum(ms > 100 for ms in copies) if copies else None, ",d"),
                figure("WAL bytes/row", run.wal[0] / run.inserted if run.inserted else None, ",.0f"),
                figure("index WAL bytes/row", run.wal[1] / run.inserted if run.inserted and run.wal[1] is not None
                       else None, ",.0f")]
    for name in ("pending_rows", "run_sets", "merges", "merged_rows"):
        figures.append(figure(f"{name} at the end", run.final.get("stats", {}).get(name), ",d"))
    return figures + [figure("index MB at the end", run.final["index_bytes"] / 1e6, ",.1f"),
                      ("exactness mismatches", run.mismatches, f"{run.mismatches} of {run.checked:,} ({run.exact_seconds:.0f} s)"),
                      ("simhash_mih_check", None, run.check_error or "clean")]


def print_latencies(name: str, latencies: dict[int, tuple[float, float]]) -> None:
    print(f"{name}: " + "; ".join(f"k = {k} p50 {latencies[k][0]:.3f} ms, p99 {latencies[k][1]:.3f} ms" for k in RADII))


def print_summary(run: Run, window_seconds: float) -> None:
    print(f"summary ({run.inserted:,} rows in {run.seconds:.0f} s):")
    for name, _, text in summary(run, window_seconds):
        print(f"  {name:<38} {text}")


def print_side_by_side(runs: list[Run], window_seconds: float) -> None:
    """Every run's summary in a column; the older design over this one per
    writer count, and rows/s of the most writers over one writer's."""
    columns = {f"{run.design.split()[0]}, {run.writers}w": summary(run, window_seconds) for run in runs}
    ratios: dict[str, list] = {}
    designs = sorted({run.design for run in runs}, key=[run.design for run in runs].index)
    if len(designs) == 2:
        for writers in sorted({run.writers for run in runs}):
            pair = [summary(r, window_seconds) for d in reversed(designs) for r in runs
                    if r.design == d and r.writers == writers]
            if len(pair) == 2:
                ratios[f"old/new, {writers}w"] = [(a[1] / b[1]) if a[1] and b[1] else None for a, b in zip(*pair)]
    names = [name for name, _, _ in next(iter(columns.values()))]
    width = max(14, *map(len, columns), *map(len, ratios), *(len(text) for figures in columns.values()
                                                               for _, _, text in figures))
    print("\nside by side: " + "; ".join(f"{name}: {run.design}" for name, run in zip(columns, runs)))
    print(f"  {'':<38}" + "".join(f" {name:>{width}}" for name in [*columns, *ratios]))
    for i, name in enumerate(names):
        print(f"  {name:<38}" + "".join(f" {figures[i][2]:>{width}}" for figures in columns.values())
              + "".join(f" {DASH if values[i] is None else f'{values[i]:.2f}x':>{width}}" for values in ratios.values()))
    for design in designs:
        rates = {r.writers: r.inserted / r.seconds for r in runs if r.design == design}
        if len(rates) > 1:
            most, fewest = max(rates), min(rates)
            print(f"  rows/s with {most} writers over {fewest}: {rates[most] / rates[fewest]:.2f}x ({design})")


# ---------------------------------------------------------------- the older design's server

def baseline_server(ref: str, server_options: str) -> tuple[ThrowawayServer, str]:
    """A server of the same PostgreSQL with REF's extension: REF's tree copied
    to build/bench-baseline/<commit>/ (once), its extension built and installed
    into its own private installation by REF's own scripts/temp-install.sh."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    tree = ROOT / "build" / "bench-baseline" / commit[:12]
    if not (tree / ".copied").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
        if archive.wait():
            raise SystemExit(f"git archive {commit} failed")
        (tree / ".copied").touch()
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("SIMHASH_PG_MAJOR", "SIMHASH_INSTALLED_BINDIR")}
    environment.setdefault("PG_CONFIG", "pg_config")
    print(f"building {ref} ({commit[:12]})'s extension for {environment['PG_CONFIG']} in {tree}", flush=True)
    bindir = subprocess.run([str(tree / "scripts" / "temp-install.sh")], env=environment, check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    server = ThrowawayServer(bindir, tree / "build" / "bench-server", postgres_options=server_options)
    return server, f"{ref} {commit[:9]}"


def this_design() -> str:
    """This checkout's branch and commit (with a + when files differ from it)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()
    changed = "+" if git("status", "--porcelain", "--untracked-files=no") else ""
    return f"{git('rev-parse', '--abbrev-ref', 'HEAD')} {git('rev-parse', '--short=9', 'HEAD')}{changed}"


# ---------------------------------------------------------------- main

def parse_options(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k rows built, 200k inserted")
    parser.add_argument("--large", action="store_true", help="100M rows built, 20M inserted")
    parser.add_argument("--rows", type=int, help="rows built (default 1M)")
    parser.add_argument("--inserts", type=int, help="rows inserted (default 2.4M)")
    parser.add_argument("--writers", default="4", help="writer counts, one run each, e.g. 1,4 (default 4)")
    parser.add_argument("--copy-share", type=float, default=0.2, help="transactions that are a COPY (default 0.2)")
    parser.add_argument("--copy-rows", type=int, default=1000, help="rows a COPY (default 1000)")
    parser.add_argument("--autovacuum", choices=["off", "on"], default="off", help="for the table (default off)")
    parser.add_argument("--window", type=float, default=10.0, help="seconds a window (default 10)")
    parser.add_argument("--seconds", type=float, default=math.inf, help="stop inserting after this long")
    parser.add_argument("--rate", type=float, help="rows a second the writers insert between them, at most"
                        " (default: as fast as they can)")
    parser.add_argument("--queries", type=int, default=1000, help="query centres (fresh: each once a radius; default 1000)")
    parser.add_argument("--exact-queries", type=int, default=200, help="queries checked at k = 0..8 (default 200)")
    parser.add_argument("--pending-limit", type=int, help="simhash.mih_pending_limit for the writers")
    parser.add_argument("--loaded-seconds", type=float, default=30.0,
                        help=f"query the fresh index this long while the writers fill {LOAD_TABLE} (0: not)")
    parser.add_argument("--baseline-ref", help="git commit whose extension runs the same workload beside this one")
    parser.add_argument("--only", choices=["scaling", "workload"], help="the pgbench writer scaling table alone, or the"
                        " continuous writes alone (default: both)")
    parser.add_argument("--scaling-writers", default="1,4", help="pgbench writer counts of the scaling table (default 1,4)")
    parser.add_argument("--scaling-seconds", type=float, help="seconds a pgbench window (default 15; --quick 5)")
    parser.add_argument("--scaling-rounds", type=int, default=2, help="windows of each writer count, the best"
                        " reported (default 2)")
    options = parser.parse_known_args(argv)[0]
    size = SIZES["large" if options.large else "quick" if options.quick else "default"]
    options.rows = options.rows or size[0]
    options.inserts = options.inserts or size[1]
    options.scaling_seconds = options.scaling_seconds or (5 if options.quick else 15)
    options.writers = [int(w) for w in options.writers.split(",") if w]
    options.scaling_writers = sorted({int(w) for w in options.scaling_writers.split(",") if w})
    if (not options.writers or min(options.writers) < 1 or not options.scaling_writers
            or min(options.scaling_writers) < 1 or options.scaling_rounds < 1 or not 0 <= options.copy_share <= 1
            or (options.rate is not None and not options.rate > 0)):
        parser.error("--writers and --scaling-writers take counts of 1 or more, --scaling-rounds 1 or more,"
                     " --copy-share a share from 0 to 1, --rate rows a second above 0")
    return options


def plan_of(options, writers: int) -> dict:
    """What the worker processes of a run of `writers` writers need of the
    options (plain values: they are spawned)."""
    return {"writers": writers, "inserts": options.inserts, "copy_share": options.copy_share, "copy_rows": options.copy_rows,
            "window": options.window, "seconds": options.seconds, "pending_limit": options.pending_limit,
            "rate": options.rate, "table": "docs"}


def main(argv: list[str] | None = None) -> int:
    options = parse_options(argv)
    runs = []
    if options.only != "workload":
        with tempfile.TemporaryDirectory() as script_dir:
            writer_scaling(os.environ["SIMHASH_DSN"], options, Path(script_dir))
    if options.only == "scaling":
        return 0
    with ExitStack() as stack:
        servers = [(this_design(), os.environ["SIMHASH_DSN"])]
        if options.baseline_ref:
            server, design = baseline_server(options.baseline_ref, os.environ.get("SIMHASH_SERVER_OPTIONS", ""))
            servers.append((design, stack.enter_context(server).dsn()))
        for writers in options.writers:
            for design, dsn in servers:
                runs.append(one_run(dsn, design, writers, options, plan_of(options, writers)))
    if len(runs) > 1:
        print_side_by_side(runs, options.window)
    failed = [run for run in runs if run.mismatches or run.check_error]
    for run in failed:
        print(f"NOT EXACT: {run.design}, {run.writers} writers: {run.mismatches} mismatches"
              f"{', simhash_mih_check: ' + run.check_error if run.check_error else ''}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
