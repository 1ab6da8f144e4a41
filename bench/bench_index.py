"""Benchmark of the near-duplicate indexes (simhash_mih and the GIN operator
class simhash64_ops) against the sequential scan.

Needs a server with the extension available ($SIMHASH_DSN; `make bench` starts
one).  Prints:

1. for each size (--rows, else SIMHASH_BENCH_SIZES, default 10M and 1M rows):
   build time, size, and for k = 0..8 query latency p50/p99 and the
   candidate rows each query fetches from the heap, side by side: the
   simhash_mih access method (3 runs, its default), the GIN default index
   with the probes of multi-index hashing (simhash.index_max_probes at its
   default), the same index with the 1.0 behaviour (index_max_probes = 5, the
   blocks alone: lookups up to max_distance 4, a whole-index scan beyond) and
   the `bit_count` sequential scan users run today; with --compare-dsn, also
   simhash_mih on another server (another build of the extension, e.g. an
   earlier commit's), its queries interleaved one by one with this server's
   so that both see the same load, and the ratio of their p50s;
2. top-n nearest neighbours: hamming_nearest() against ORDER BY ... LIMIT n,
   for n = 3 and n = 10;
3. the default layout against the former default (blocks = 4,
   max_distance = 3) on the same table: build, size, p50 and heap rows for
   k = 0..3;
4. (blocks, max_distance) trade-offs at SIMHASH_BENCH_TRADEOFF_ROWS rows
   (default 200k: the layouts with many tables take minutes to build at 1M).

5. builds side by side at each size (--only builds: this table alone): btree,
   simhash_mih and GIN on the same column with 0, 1 and 2 parallel workers
   (max_parallel_maintenance_workers), one after the other by worker count:
   time, size, the leader's and workers' peak private memory (RssAnon of
   each process, sampled every 20 ms, summed) and, for simhash_mih, its own
   report (sort memory, chunks spilled, where the time went); the machine's
   load average before and after.

6. single-row inserts while queries run (--only writes: this table alone), on
   the smallest size: for simhash_mih and GIN (fastupdate = off), one client
   inserting rows one by one (autocommit, synchronous_commit as the server
   has it) while another queries k = 3 and k = 8 in turn, for WRITE_SECONDS
   each, the kinds taking turns twice: inserts/s, query p50/p99.

Options (others are other benchmarks'): --rows 1000000,10000000; --only
radius (table 1 alone), --only builds (table 5 alone), --only writes (table 6); --columns mih,gin,gin-1.0,bit_count (which of table
1's columns; at 100M rows the 1.0 behaviour and bit_count take hours);
--queries N (per radius, default 300); --compare-dsn DSN; --mih-runs 2,3,4
(after table 1, simhash_mih with each run count, one after the other);
--builds btree,simhash_mih,GIN (table 5's indexes; at 100M rows GIN's builds
take minutes each).

Latencies are measured at the client over a Unix socket, with server-side
prepared statements, on a warm cache (table and index loaded into shared
buffers with pg_prewarm when the server has it).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import threading
import time
from math import comb
from pathlib import Path

import numpy as np
import psycopg

COLUMNS = ("mih", "gin", "gin-1.0", "bit_count")
TRADEOFF_ROWS = int(os.environ.get("SIMHASH_BENCH_TRADEOFF_ROWS", 200_000))
SEQSCAN_QUERIES = 15
DEFAULT_LAYOUT = (5, 4)  # (blocks, max_distance) of simhash64_ops without options
RADII = range(9)
BLOCKS_ONLY = 5  # simhash.index_max_probes that gives the 1.0 behaviour of the default layout
SIDE_BY_SIDE = ((4, 3), DEFAULT_LAYOUT)
TRADEOFFS = ((2, 1), (3, 2), (4, 3), (5, 3), (6, 3), (5, 4))

INDEXED = "SELECT id FROM docs WHERE hamming_within(fp, %s::bigint::simhash64, {k})"
BIT_COUNT = "SELECT id FROM docs WHERE bit_count((fp::bigint # %s::bigint)::bit(64)) <= {k}"
NEAREST = "SELECT id FROM hamming_nearest(NULL::docs, 'fp', %s::bigint::simhash64, {n})"
ORDER_BY = "SELECT id FROM docs ORDER BY fp <~> %s::bigint::simhash64 LIMIT {n}"


def fingerprints(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Random fingerprints with 1% of rows in clusters of near-duplicates
    (each cluster: a centre and 4 copies 1 to 4 bits away)."""
    n_clusters = rows // 500
    base = rng.integers(0, 2**64, size=rows - 4 * n_clusters, dtype=np.uint64)
    copies = [base[:n_clusters] ^ flips(rng, n_clusters, bits) for bits in (1, 2, 3, 4)]
    return np.concatenate([base, *copies])


def flips(rng: np.random.Generator, count: int, bits: int) -> np.ndarray:
    """count masks with `bits` distinct bits set."""
    positions = np.argsort(rng.random((count, 64)), axis=1)[:, :bits].astype(np.uint64)
    return np.bitwise_or.reduce(np.uint64(1) << positions, axis=1)


def signed(values: np.ndarray) -> list[int]:
    return values.view(np.int64).tolist()


def load(conn: psycopg.Connection, fps: np.ndarray) -> None:
    conn.execute("DROP TABLE IF EXISTS docs")
    conn.execute("CREATE TABLE docs (id serial PRIMARY KEY, fp simhash64 NOT NULL)")
    with conn.cursor().copy("COPY docs (fp) FROM STDIN") as copy:
        for start in range(0, len(fps), 1_000_000):  # in chunks: 100M rows as one string would take 7 GB
            copy.write("\n".join(map(str, fps[start:start + 1_000_000].tolist())) + "\n")
    conn.execute("VACUUM ANALYZE docs")


def build_index(conn: psycopg.Connection, options: str = "", using: str = "") -> tuple[float, float]:
    """(seconds, index bytes per row), leaving table and index in shared buffers:
    a GIN index with the given options, or the index `using` names."""
    conn.execute("DROP INDEX IF EXISTS docs_fp")
    start = time.perf_counter()
    conn.execute(f"CREATE INDEX docs_fp ON docs USING {using or f'gin (fp simhash64_ops {options})'}")
    seconds = time.perf_counter() - start
    conn.execute("ANALYZE docs")
    prewarm(conn)
    size = conn.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    return seconds, size / conn.execute("SELECT count(*) FROM docs").fetchone()[0]


def prewarm(conn: psycopg.Connection, table: str = "docs", index: str = "docs_fp") -> None:
    """Load the table and the index into shared buffers: COPY and sequential
    scans go through small buffer rings, so they leave them cold."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    except psycopg.errors.UndefinedFile:
        print("(pg_prewarm is not installed: the first queries warm the cache)")
        return
    conn.execute("SELECT pg_prewarm(%s), pg_prewarm(%s)", (table, index))


def queries(rng: np.random.Generator, fps: np.ndarray, count: int) -> list[int]:
    """Half near cluster centres (0 or 1 bit away), half random."""
    near = fps[rng.integers(0, len(fps) // 500, size=count // 2)] ^ (
        flips(rng, count // 2, 1) * rng.integers(0, 2, size=count // 2, dtype=np.uint64)
    )
    far = rng.integers(0, 2**64, size=count - count // 2, dtype=np.uint64)
    return signed(np.concatenate([near, far]))


def latencies_ms(conn: psycopg.Connection, sql: str, centres: list[int]) -> list[float]:
    return interleaved_latencies_ms([(conn, sql)], centres)[0]


def interleaved_latencies_ms(targets: list[tuple[psycopg.Connection, str]], centres: list[int]) -> list[list[float]]:
    """Latencies of each (connection, sql) for every centre, the targets taking
    turns query by query, so that servers compared see the same load."""
    for conn, sql in targets:
        for centre in centres[:5]:  # warm the cache and the plan
            conn.execute(sql, (centre,), prepare=True).fetchall()
    times: list[list[float]] = [[] for _ in targets]
    for centre in centres:
        for (conn, sql), own in zip(targets, times):
            start = time.perf_counter()
            conn.execute(sql, (centre,), prepare=True).fetchall()
            own.append((time.perf_counter() - start) * 1000)
    return times


def p(times: list[float], q: float) -> float:
    return float(np.percentile(times, q))


def heap_visits(conn: psycopg.Connection, k: int, centres: list[int]) -> tuple[float, float]:
    """Mean (candidate rows the index hands to the heap, true matches) per query."""
    candidates, matches = [], []
    for centre in centres:
        plan = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + INDEXED.format(k=k), (centre,)
        ).fetchone()[0][0]["Plan"]
        if plan["Node Type"] != "Bitmap Heap Scan":
            return float("nan"), float("nan")
        candidates.append(plan["Plans"][0]["Actual Rows"])
        matches.append(plan["Actual Rows"])
    return statistics.mean(candidates), statistics.mean(matches)


def options_text(blocks: int, max_distance: int) -> str:
    return f"(blocks = {blocks}, max_distance = {max_distance})"


def cell(conn: psycopg.Connection, k: int, centres: list[int], times: list[float]) -> tuple[str, float]:
    """One cell of table 1 for the index on docs now: p50, p99, heap rows; and the matches."""
    candidates, matches = heap_visits(conn, k, centres[:50])
    return f"{p(times, 50):>8.3f}ms {p(times, 99):>7.3f}ms {candidates:>9.1f}", matches


def measured(conn: psycopg.Connection, k: int, centres: list[int], tag: str) -> tuple[str, float]:
    # A comment per setting: a prepared plan is made under the setting in force.
    return cell(conn, k, centres, latencies_ms(conn, f"/* {tag} */ " + INDEXED.format(k=k), centres))


CELL = f"{'p50':>10} {'p99':>9} {'heap rows':>9}"  # what cell() prints, 30 characters


def gin_cells(conn: psycopg.Connection, centres: list[int], columns: list[str]) -> dict[str, dict[int, str]]:
    """Of the columns asked for, for each k: GIN with probes, GIN as 1.0, the bit_count scan."""
    cells: dict[str, dict[int, str]] = {}
    for k in RADII:
        if "gin" in columns:
            cells.setdefault("GIN, probes (default)", {})[k] = measured(conn, k, centres, "probes")[0]
        if "gin-1.0" in columns:
            conn.execute(f"SET simhash.index_max_probes = {BLOCKS_ONLY}")
            cells.setdefault("GIN, blocks only (1.0)", {})[k] = measured(conn, k, centres, "blocks only")[0]
            conn.execute("RESET simhash.index_max_probes")
        if "bit_count" in columns:
            scan = latencies_ms(conn, BIT_COUNT.format(k=k), centres[:SEQSCAN_QUERIES])
            cells.setdefault("bit_count", {})[k] = f"{p(scan, 50):>10.1f}ms"
    return cells


def mih_cells(servers: list[psycopg.Connection], centres: list[int]) -> dict[str, dict[int, str]]:
    """For each k, simhash_mih on each server (queries interleaved), the ratio
    of the other server's p50 to this one's, and the matches."""
    names = ["simhash_mih (3 runs)", "simhash_mih, other server"]
    cells: dict[str, dict[int, str]] = {}
    for k in RADII:
        sql = "/* simhash_mih */ " + INDEXED.format(k=k)
        times = interleaved_latencies_ms([(conn, sql) for conn in servers], centres)
        for name, conn, own in zip(names, servers, times):
            text, matches = cell(conn, k, centres, own)
            cells.setdefault(name, {})[k] = text
        if len(servers) > 1:
            cells.setdefault("other/this", {})[k] = f"{p(times[1], 50) / p(times[0], 50):>9.2f}x"
        cells.setdefault("matches", {})[k] = f"{matches:>8.2f}"
    # The same queries again on the same connection: the first pass is a new
    # backend's, which faults in every shared buffer it touches and finds each
    # in the buffer table; a pooled connection's queries are the second's.
    for k in RADII:
        again = latencies_ms(servers[0], "/* simhash_mih */ " + INDEXED.format(k=k), centres)
        cells.setdefault("again", {})[k] = f"{p(again, 50):>8.3f}ms"
    return cells


def radius_table(servers: list[psycopg.Connection], rng: np.random.Generator, rows: int, options) -> list[int]:
    """Loads `rows` rows (on every server) and prints table 1 for them; returns the queries."""
    conn = servers[0]
    fps = fingerprints(rng, rows)
    centres = queries(rng, fps, options.queries)
    for server in servers:
        load(server, fps)
    table_mb = conn.execute("SELECT pg_table_size('docs') / 1e6").fetchone()[0]
    builds, columns = [], {}
    gin_columns = [c for c in options.columns if c != "mih"]
    if gin_columns:
        seconds, per_row = build_index(conn)
        builds.append(f"GIN default {options_text(*DEFAULT_LAYOUT)} build {seconds:.1f} s, {per_row:.1f} bytes/row")
        gin = gin_cells(conn, centres, gin_columns)
        conn.execute("DROP INDEX docs_fp")
    if "mih" in options.columns:
        for name, server in zip(("simhash_mih", "simhash_mih (other server)"), servers):
            seconds, per_row = build_index(server, using="simhash_mih (fp)")
            builds.append(f"{name} build {seconds:.1f} s, {per_row:.1f} bytes/row")
        columns = mih_cells(servers, centres)
        for server in servers[1:]:
            server.execute("DROP TABLE docs")
    matches = columns.pop("matches", None)
    if gin_columns:
        columns.update(gin)
    if matches:
        columns["matches"] = matches
    print(f"{rows:,} rows (table {table_mb:.0f} MB): " + "; ".join(builds))
    widths = {name: len(next(iter(cells.values()))) for name, cells in columns.items()}
    print(f"{'':>3} " + " ".join(f"{name:^{widths[name]}}" for name in columns))
    print(f"{'k':>3} " + " ".join(CELL if widths[name] == len(CELL) else f"{'p50' if name != 'matches' else '':>{widths[name]}}"
                                  for name in columns))
    for k in RADII:
        print(f"{k:>3} " + " ".join(cells[k] for cells in columns.values()), flush=True)
    print("(latencies at the client; heap rows: candidates the index hands to the heap per query;"
          " blocks only beyond k = 4 scans the whole index; again: simhash_mih's queries a second time"
          " on the same connection, as a pooled connection runs them)\n")
    return centres


def runs_table(conn: psycopg.Connection, rows: int, centres: list[int], runs: list[int]) -> None:
    """simhash_mih with each run count on the loaded table, one after the other:
    build, size, p50 (p99 at k = 8)."""
    print(f"simhash_mih by run count at {rows:,} rows: p50 for each k")
    print(f"{'runs':>4} {'build':>7} {'bytes/row':>9}" + "".join(f" {'k = ' + str(k):>8}" for k in RADII)
          + f" {'k = 8 p99':>10}")
    for count in runs:
        seconds, per_row = build_index(conn, using=f"simhash_mih (fp) WITH (runs = {count})")
        times = [latencies_ms(conn, f"/* runs {count} */ " + INDEXED.format(k=k), centres) for k in RADII]
        print(f"{count:>4} {seconds:>6.1f}s {per_row:>9.1f}" + "".join(f" {p(t, 50):>6.3f}ms" for t in times)
              + f" {p(times[-1], 99):>8.3f}ms", flush=True)
    print()


def main_table(servers: list[psycopg.Connection], rng: np.random.Generator, options) -> list[int]:
    """Prints table 1 for every size (and the run counts of --mih-runs), then
    table 2 on the last (on the GIN index); returns its queries."""
    for rows in options.rows:
        centres = radius_table(servers, rng, rows, options)
        if options.mih_runs:
            runs_table(servers[0], rows, centres, options.mih_runs)
    if options.only == "radius":
        return centres
    conn = servers[0]
    build_index(conn)
    in_clusters = centres[: len(centres) // 2]
    print(f"{'nearest':>10} {'hamming_nearest p50':>20} {'p99':>8} {'ORDER BY p50':>13} {'p99':>8} {'speedup p50':>12}")
    for n in (3, 10):
        nearest = latencies_ms(conn, NEAREST.format(n=n), in_clusters[:100])
        ordered = latencies_ms(conn, ORDER_BY.format(n=n), in_clusters[:SEQSCAN_QUERIES])
        print(f"{'top-' + str(n):>10} {p(nearest, 50):>18.3f}ms {p(nearest, 99):>6.1f}ms {p(ordered, 50):>11.1f}ms"
              f" {p(ordered, 99):>6.1f}ms {p(ordered, 50) / p(nearest, 50):>11.0f}x")
    return centres


def layouts_side_by_side(conn: psycopg.Connection, centres: list[int], rows: int) -> None:
    """Table 3: the layouts of SIDE_BY_SIDE on the loaded table, one after the other."""
    print(f"\nlayouts at {rows:,} rows: p50 (heap rows per query) for each k")
    print(f"{'layout':>32} {'build':>7} {'bytes/row':>9}" + "".join(f" {'k = ' + str(k):>18}" for k in range(4)))
    for layout in SIDE_BY_SIDE:
        seconds, per_row = build_index(conn, options_text(*layout))
        cells = []
        for k in range(4):
            times = latencies_ms(conn, INDEXED.format(k=k), centres)
            candidates, _ = heap_visits(conn, k, centres[:50])
            cells.append(f"{p(times, 50):.3f}ms ({candidates:.1f})")
        print(f"{options_text(*layout):>32} {seconds:>6.1f}s {per_row:>9.1f}" + "".join(f" {c:>18}" for c in cells))


def tradeoff_table(conn: psycopg.Connection, rng: np.random.Generator) -> None:
    fps = fingerprints(rng, TRADEOFF_ROWS)
    load(conn, fps)
    centres = queries(rng, fps, 100)
    print(f"\n(blocks, max_distance) trade-offs at {TRADEOFF_ROWS:,} rows, queries at k = max_distance")
    print(f"{'blocks':>6} {'max_d':>5} {'keys/row':>8} {'build':>8} {'bytes/row':>10} {'p50':>8} {'p99':>8}"
          f" {'heap rows/q':>12}")
    for blocks, max_distance in TRADEOFFS:
        seconds, per_row = build_index(conn, options_text(blocks, max_distance))
        times = latencies_ms(conn, INDEXED.format(k=max_distance), centres)
        candidates, _ = heap_visits(conn, max_distance, centres[:50])
        print(f"{blocks:>6} {max_distance:>5} {comb(blocks, max_distance):>8} {seconds:>7.1f}s {per_row:>10.1f} {p(times, 50):>6.3f}ms"
              f" {p(times, 99):>6.3f}ms {candidates:>12.1f}")


BUILDS = {  # table 5: what each index is, and whether its build takes parallel workers
    "btree": "btree (fp)",
    "simhash_mih": "simhash_mih (fp)",
    "GIN": "gin (fp simhash64_ops) WITH (fastupdate = off)",
}
BUILD_WORKERS = (0, 1, 2)
MIH_REPORT = re.compile(r"chunks spilled \((?P<spilled>[\d.]+ MB)\).*peak sort memory (?P<leader>[\d.]+ MB) in the leader, "
                        r"(?P<worker>[\d.]+ MB) in a worker; scan (?P<scan>[\d.]+) s, runs (?P<runs>[\d.]+) s, WAL (?P<wal>[\d.]+) s")


def private_kb(pid: int) -> int:
    """A process's private (anonymous) resident memory: not shared buffers."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_private_mb(dsn: str, leader: int, stop: threading.Event, out: list[float]) -> None:
    """Samples, until stop, the private memory of the backend `leader` and its
    parallel workers (found in pg_stat_activity), summed; appends the peak (MB)
    above the backend's own before the build."""
    with psycopg.connect(dsn, autocommit=True) as watcher:
        base = private_kb(leader)
        peak = 0
        workers: list[int] = []
        while not stop.is_set():
            workers = [r[0] for r in watcher.execute(
                "SELECT pid FROM pg_stat_activity WHERE leader_pid = %s AND pid <> %s", (leader, leader))] or workers
            peak = max(peak, private_kb(leader) - base + sum(private_kb(w) for w in workers))
            time.sleep(0.02)
        out.append(peak / 1024)


def build_row(conn: psycopg.Connection, dsn: str, rows: int, name: str, workers: int) -> str:
    """One row of table 5: builds the index with `workers` workers asked for."""
    messages: list[str] = []
    conn.add_notice_handler(lambda d: messages.append(d.message_primary or ""))
    conn.execute("DROP INDEX IF EXISTS docs_fp")
    conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
    conn.execute("SET client_min_messages = debug1")
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    stop, peak = threading.Event(), []
    watcher = threading.Thread(target=peak_private_mb, args=(dsn, pid, stop, peak))
    watcher.start()
    start = time.perf_counter()
    conn.execute(f"CREATE INDEX docs_fp ON docs USING {BUILDS[name]}")
    seconds = time.perf_counter() - start
    stop.set()
    watcher.join()
    conn.execute("RESET client_min_messages")
    conn.execute("RESET max_parallel_maintenance_workers")
    size = conn.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    launched = next((m for m in messages if "parallel workers" in m or "serially" in m), "")
    report = next((MIH_REPORT.search(m) for m in messages if MIH_REPORT.search(m)), None)
    detail = (f"sort memory {report['leader']} leader, {report['worker']} a worker, spilled {report['spilled']};"
              f" scan {report['scan']} s, runs {report['runs']} s, WAL {report['wal']} s") if report else ""
    conn.execute("DROP INDEX docs_fp")
    workers_text = (re.search(r"request for (\d+) parallel workers", launched)
                    or next((re.search(r"\((\d+) parallel workers requested\)", m) for m in messages
                             if "parallel workers requested" in m), None))
    return (f"{name:<12} {workers:>7} {workers_text[1] if workers_text else 0:>9} {seconds:>8.1f}s"
            f" {size / rows:>9.1f} {peak[0]:>10.0f}  {detail}")


def builds_table(conn: psycopg.Connection, dsn: str, rng: np.random.Generator, rows_list: list[int],
                 kinds: list[str]) -> None:
    """Table 5 at each size: each index kind's build with 0, 1, 2 workers."""
    for rows in rows_list:
        load(conn, fingerprints(rng, rows))
        conn.execute("CHECKPOINT")
        mwm = conn.execute("SHOW maintenance_work_mem").fetchone()[0]
        print(f"Builds at {rows:,} rows (maintenance_work_mem {mwm}), load average {os.getloadavg()[0]:.1f}:")
        print(f"{'index':<12} {'workers':>7} {'requested':>9} {'time':>9} {'bytes/row':>9} {'peak MB':>10}"
              "  simhash_mih's own report")
        for workers in BUILD_WORKERS:
            for name in kinds:
                print(build_row(conn, dsn, rows, name, workers), flush=True)
        print(f"(peak MB: private memory of the backend and its workers; load average after {os.getloadavg()[0]:.1f})\n")


WRITE_SECONDS = 10
WRITES = {  # table 6: the index each kind's writes go through
    "simhash_mih": "simhash_mih (fp)",
    "GIN, fastupdate off": "gin (fp simhash64_ops) WITH (fastupdate = off)",
}


def insert_loop(dsn: str, rng_seed: int, stop: threading.Event, count: list[int]) -> None:
    rng = np.random.default_rng(rng_seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            conn.execute("INSERT INTO docs (fp) VALUES (%s::bigint::simhash64)",
                         (int(rng.integers(-(2**63), 2**63 - 1)),), prepare=True)
            count[0] += 1


WRITE_RADII = (3, 8)


def query_loop(dsn: str, centres: list[int], stop: threading.Event, times: dict[int, list[float]]) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        i = 0
        while not stop.is_set():
            k = WRITE_RADII[i % len(WRITE_RADII)]
            start = time.perf_counter()
            conn.execute(INDEXED.format(k=k), (centres[i % len(centres)],), prepare=True).fetchall()
            times[k].append((time.perf_counter() - start) * 1000)
            i += 1


def writes_table(conn: psycopg.Connection, dsn: str, rng: np.random.Generator, rows: int) -> None:
    """Table 6: inserts and queries at once, each index kind in turn, twice
    (the first turn inserts into the table as loaded, the second after it)."""
    fps = fingerprints(rng, rows)
    centres = queries(rng, fps, 300)
    load(conn, fps)
    print(f"Single-row inserts while another client queries (k = 3 and 8 in turn), {rows:,} rows,"
          f" {WRITE_SECONDS} s a turn; load average {os.getloadavg()[0]:.1f}")
    print(f"{'index':<22} {'turn':>4} {'inserts/s':>10} {'queries/s':>10}"
          + "".join(f" {'k = ' + str(k) + ' p50':>11} {'p99':>9}" for k in WRITE_RADII))
    for turn in (1, 2):
        for name, using in WRITES.items():
            conn.execute("DROP INDEX IF EXISTS docs_fp")
            conn.execute(f"CREATE INDEX docs_fp ON docs USING {using}")
            conn.execute("VACUUM ANALYZE docs")
            prewarm(conn)
            stop, count, times = threading.Event(), [0], {k: [] for k in WRITE_RADII}
            threads = [threading.Thread(target=insert_loop, args=(dsn, turn, stop, count)),
                       threading.Thread(target=query_loop, args=(dsn, centres, stop, times))]
            for thread in threads:
                thread.start()
            time.sleep(WRITE_SECONDS)
            stop.set()
            for thread in threads:
                thread.join()
            print(f"{name:<22} {turn:>4} {count[0] / WRITE_SECONDS:>10,.0f}"
                  f" {sum(map(len, times.values())) / WRITE_SECONDS:>10,.0f}"
                  + "".join(f" {p(times[k], 50):>9.3f}ms {p(times[k], 99):>7.3f}ms" for k in WRITE_RADII), flush=True)
    print(f"(load average after {os.getloadavg()[0]:.1f})\n")


def parse_options():
    sizes = os.environ.get("SIMHASH_BENCH_SIZES", "10000000,1000000")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=sizes, help=f"table sizes for table 1, comma-separated (default {sizes})")
    parser.add_argument("--only", choices=["radius", "builds", "writes"], help="table 1, 5 or 6 alone")
    parser.add_argument("--columns", default=",".join(COLUMNS), help="table 1's columns, of " + ",".join(COLUMNS))
    parser.add_argument("--queries", type=int, default=300, help="queries per radius (default 300)")
    parser.add_argument("--compare-dsn", help="another server whose simhash_mih is measured beside this one's")
    parser.add_argument("--mih-runs", default="", help="after table 1: simhash_mih with these run counts, e.g. 2,3,4")
    parser.add_argument("--builds", default=",".join(BUILDS), help="table 5's indexes, of " + ",".join(BUILDS))
    options = parser.parse_known_args()[0]
    options.rows = [int(n) for n in options.rows.split(",")]
    options.mih_runs = [int(n) for n in options.mih_runs.split(",") if n]
    options.columns = [c for c in options.columns.split(",") if c]
    options.builds = [b for b in options.builds.split(",") if b]
    unknown = set(options.columns) - set(COLUMNS) | set(options.builds) - set(BUILDS)
    if unknown:
        parser.error(f"unknown columns or builds {sorted(unknown)}")
    return options


def main() -> None:
    options = parse_options()
    rng = np.random.default_rng(20240603)
    dsns = [os.environ["SIMHASH_DSN"]] + ([options.compare_dsn] if options.compare_dsn else [])
    servers = [psycopg.connect(dsn, autocommit=True) for dsn in dsns]
    try:
        for server in servers:
            server.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        conn = servers[0]
        if options.only in (None, "radius"):
            centres = main_table(servers, rng, options)
        if options.only is None:
            layouts_side_by_side(conn, centres, options.rows[-1])
            tradeoff_table(conn, rng)
        if options.only in (None, "builds"):
            builds_table(conn, dsns[0], rng, options.rows, options.builds)
        if options.only in (None, "writes"):
            writes_table(conn, dsns[0], rng, min(options.rows))
        conn.execute("DROP TABLE docs")
    finally:
        for server in servers:
            server.close()


if __name__ == "__main__":
    main()
