"""Near-duplicate queries on a local Citus cluster next to one node.

A coordinator and 2 workers on 127.0.0.1 (tests/toolbox/citus_cluster.py), all on this
machine.  The same fingerprints as bench_find_all.py (90% random, 10% copies
at 1-3 bits) go into a table distributed by id (32 shards, a GIN index on each)
and into a plain table on the coordinator.  Reported side by side: the latency
of radius queries (hamming_within(fp, q, 3), p50 and p99), and the time of
find_all and clusters, single-node (simhash_find_all on the coordinator) and
distributed (simhash_find_all_distributed), with each node's CPU seconds and
peak private memory (the sum of its processes' anonymous memory, sampled),
and the load average of the machine, which the nodes share with whatever
else runs.  1M and 10M rows (--rows N ... for others, --quick for 100k);
--alternatives also times the designs not chosen (docs/citus.md): 1.1's
work table of copies, and up to 1M rows the two join-based ones.  Skipped
when Citus is not installed in the private installation.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from itertools import combinations
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the toolbox
from bench_find_all import fingerprints  # noqa: E402
from toolbox.citus_cluster import CitusCluster, citus_missing  # noqa: E402

K = 3
QUERIES = 300
SERVER_OPTIONS = ("-c shared_buffers=512MB -c work_mem=64MB -c maintenance_work_mem=1GB "
                  "-c max_wal_size=4GB -c synchronous_commit=off")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Runs of the single-node and distributed calls, alternating: the machine is shared.
REPEAT = 3
SETTLE_SECONDS = 30
# The join-based alternatives take minutes beyond this.
JOIN_ALTERNATIVES_MAX_ROWS = 1_000_000
# 1.1's design, as released (its upgrade script is frozen): the functions, renamed.
OLD_SQL = ROOT / "pg_ext" / "sql" / "simhash--1.0--1.1.sql"
OLD_FUNCTIONS = ("simhash_partition_rows", "simhash_find_all_distributed", "simhash_clusters_distributed")


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def stat_fields(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def node_cpu_seconds(postmaster: int) -> float:
    """CPU of a node so far: the postmaster with its exited children, and the live ones."""
    fields = stat_fields(postmaster)
    total = sum(int(f) for f in fields[11:15]) if fields else 0
    for child in children(postmaster):
        fields = stat_fields(child)
        total += sum(int(f) for f in fields[11:13]) if fields else 0
    return total / CLOCK_TICKS


def node_private_bytes(postmaster: int) -> int:
    total = 0
    for pid in [postmaster, *children(postmaster)]:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class NodeMeter:
    """Each node's CPU seconds and peak private memory growth over a `with` block."""

    def __init__(self, postmasters: list[int]) -> None:
        self.postmasters = postmasters

    def _sample(self) -> None:
        while not self.done.is_set():
            for i, pid in enumerate(self.postmasters):
                self.peak[i] = max(self.peak[i], node_private_bytes(pid))
            time.sleep(0.02)

    def __enter__(self) -> NodeMeter:
        self.base = [node_private_bytes(p) for p in self.postmasters]
        self.peak = list(self.base)
        self.cpu0 = [node_cpu_seconds(p) for p in self.postmasters]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample)
        self.thread.start()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.start
        self.done.set()
        self.thread.join()
        self.cpu = [node_cpu_seconds(p) - c for p, c in zip(self.postmasters, self.cpu0)]
        self.memory = [peak - base for peak, base in zip(self.peak, self.base)]

    def line(self, label: str) -> str:
        cpu = " ".join(f"{c:6.1f}" for c in self.cpu)
        memory = " ".join(f"{m / 2**20:6.0f}" for m in self.memory)
        return f"{label:<44}{self.wall:>8.2f}   CPU s {cpu}   peak MB {memory}"


def load(conn: psycopg.Connection, table: str, fps, distributed: bool) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, fp simhash64)")
    if distributed:
        conn.execute(f"SELECT create_distributed_table('{table}', 'id', shard_count := 32)")
    with conn.cursor().copy(f"COPY {table} (id, fp) FROM STDIN") as copy:
        for start in range(0, len(fps), 100_000):
            chunk = fps[start:start + 100_000].tolist()
            copy.write("".join(f"{i}\t{v}\n" for i, v in enumerate(chunk, start + 1)))
    conn.execute(f"CREATE INDEX ON {table} USING gin (fp) WITH (fastupdate = off)")
    conn.execute(f"VACUUM ANALYZE {table}")


def radius_latency(conn: psycopg.Connection, table: str, queries: list[int]) -> tuple[float, float]:
    """p50 and p99 in ms of hamming_within(fp, q, 3), through the index."""
    times = []
    for q in queries:
        start = time.perf_counter()
        conn.execute(f"SELECT id FROM {table} WHERE hamming_within(fp, %s::text::simhash64, {K})", (str(q),)).fetchall()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def create_old_design(conn: psycopg.Connection) -> None:
    """1.1's simhash_partition_rows and the two functions on it, as bench_old_*."""
    sql = OLD_SQL.read_text()
    for name in OLD_FUNCTIONS:
        start = sql.index(f"CREATE FUNCTION {name}(")
        body = sql[start:sql.index("$function$;", start) + len("$function$;")]
        for other in OLD_FUNCTIONS:
            body = re.sub(rf"\b{other}\(", f"bench_old_{other.removeprefix('simhash_')}(", body)
        conn.execute(body.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))


def table_masks(blocks: int) -> list[int]:
    """The key masks of the C(blocks, K) tables of a contiguous layout (as simhash-cpp's)."""
    widths = [64 // blocks + (i < 64 % blocks) for i in range(blocks)]
    starts = [sum(widths[:i]) for i in range(blocks)]
    block_masks = [((1 << w) - 1) << s for w, s in zip(widths, starts)]
    masks = [sum(block_masks[b] for b in chosen) for chosen in combinations(range(blocks), blocks - K)]
    return [m - (1 << 64) if m >= 1 << 63 else m for m in masks]


def join_alternatives(conn: psycopg.Connection, meter) -> None:
    """The join-based designs, each on 5-block tables (10 copies of every row)."""
    masks = ", ".join(f"({t}, {m}::bigint)" for t, m in enumerate(table_masks(5)))
    pair_count = ("SELECT count(*) FROM (SELECT DISTINCT a.id, b.id FROM {0} a JOIN {0} b ON a.{1} = b.{1}"
                  " AND a.id < b.id WHERE hamming_within(a.fp, b.fp, 3)) s")
    conn.execute("SET statement_timeout = '30min'")
    # co-located key table: distributed by the key, the self-join pushed down to each shard
    with meter() as m:
        conn.execute("CREATE UNLOGGED TABLE kf (bucket bigint, id bigint, fp simhash64)")
        conn.execute("SELECT create_distributed_table('kf', 'bucket', shard_count := 32, colocate_with := 'none')")
        conn.execute(f"INSERT INTO kf SELECT hashint8(fp::bigint & m.mask) # m.t, id, fp FROM pages_citus"
                     f" CROSS JOIN (VALUES {masks}) m(t, mask)")
        pairs = conn.execute(pair_count.format("kf", "bucket")).fetchone()[0]
        conn.execute("DROP TABLE kf")
    print(m.line(f"co-located key table join ({pairs})"))
    # repartition join: the key table co-located with the pages, Citus repartitions both
    # sides (not inside a transaction that created a table: Citus then fails to fetch
    # the intermediate results)
    with meter() as m:
        conn.execute("SET citus.enable_repartition_joins = on")
        conn.execute("CREATE UNLOGGED TABLE kr (id bigint, bucket bigint, fp simhash64)")
        conn.execute("SELECT create_distributed_table('kr', 'id', colocate_with := 'pages_citus')")
        conn.execute(f"INSERT INTO kr SELECT id, hashint8(fp::bigint & m.mask) # m.t, fp FROM pages_citus"
                     f" CROSS JOIN (VALUES {masks}) m(t, mask)")
        pairs = conn.execute(pair_count.format("kr", "bucket")).fetchone()[0]
        conn.execute("DROP TABLE kr")
        conn.execute("RESET citus.enable_repartition_joins")
    print(m.line(f"repartition join ({pairs})"))


def run(cluster: CitusCluster, conn: psycopg.Connection, n: int, with_alternatives: bool) -> None:
    fps = fingerprints(n)
    rng = random.Random(5)
    queries = [int(fps[rng.randrange(n)]) ^ (1 << rng.randrange(64)) for _ in range(QUERIES)]

    def meter():
        return NodeMeter(cluster.backend_pids())

    for table, distributed in (("pages_local", False), ("pages_citus", True)):
        with meter() as m:
            load(conn, table, fps, distributed)
        print(m.line(f"load + index {table}"))
    # The loads' own work out of the load average, and of the caches' way.
    time.sleep(SETTLE_SECONDS)
    print(f"{n} rows, distance {K}; nodes: coordinator, worker 1, worker 2 (all on this machine);"
          f" load average {' '.join(f'{a:.2f}' for a in os.getloadavg())}")
    for table in ("pages_local", "pages_citus"):
        p50, p99 = radius_latency(conn, table, queries)
        print(f"radius query {table:<31} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms")
    print(f"{'':<44}{'wall s':>8}   (single node and distributed: the fastest of {REPEAT} runs, alternating)")
    for function in ("find_all", "clusters"):
        runs = {
            "single node": f"simhash_{function}('SELECT id, fp FROM pages_local', {K})",
            "distributed": f"simhash_{function}_distributed('pages_citus', 'id', 'fp', {K})",
        }
        best: dict[str, NodeMeter] = {}
        for _ in range(REPEAT):
            for label, call in runs.items():
                with meter() as m:
                    m.count = conn.execute(f"SELECT count(*) FROM {call}").fetchone()[0]
                if label not in best or m.wall < best[label].wall:
                    best[label] = m
        once = {"single node, rows via Citus": f"simhash_{function}('SELECT id, fp FROM pages_citus', {K})"}
        if with_alternatives:
            once["distributed, 1.1's copies"] = f"bench_old_{function}_distributed('pages_citus', 'id', 'fp', {K})"
        for label, call in once.items():
            with meter() as m:
                m.count = conn.execute(f"SELECT count(*) FROM {call}").fetchone()[0]
            best[label] = m
        for label in ("single node", "single node, rows via Citus", "distributed", "distributed, 1.1's copies"):
            if label in best:
                print(best[label].line(f"{function} {label} ({best[label].count})"))
        print(f"{function}: distributed / single node {best['distributed'].wall / best['single node'].wall:.2f}")
    with meter() as m, conn.transaction(force_rollback=True):
        conn.execute(f"SELECT simhash_partition_rows('pages_citus', 'id', 'fp', {K}, 'bench')")
    print(m.line("  of which sending the rows to the buckets"))
    if with_alternatives:
        with meter() as m, conn.transaction(force_rollback=True):
            conn.execute(f"SELECT bench_old_partition_rows('pages_citus', 'id', 'fp', {K}, 'bench')")
        print(m.line("  1.1's: of which the key table"))
        if n <= JOIN_ALTERNATIVES_MAX_ROWS:
            join_alternatives(conn, meter)
    print(f"load average {' '.join(f'{a:.2f}' for a in os.getloadavg())}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--quick", action="store_true", help="100k rows")
    parser.add_argument("--alternatives", action="store_true", help="also time the designs not chosen")
    args, _ = parser.parse_known_args()
    missing = citus_missing()
    if missing:
        print(f"skipped: {missing}")
        return
    with tempfile.TemporaryDirectory(prefix="bench-citus-") as workdir, \
            CitusCluster(Path(workdir), server_options=SERVER_OPTIONS) as cluster, cluster.connect() as conn:
        if args.alternatives:
            create_old_design(conn)
        for n in [100_000] if args.quick else args.rows:
            run(cluster, conn, n, args.alternatives)


if __name__ == "__main__":
    main()
