"""How simhash_find_all and simhash_clusters scale: 1M, 10M (and, with --large, 100M) rows.

For each size, a table of that many rows is generated in SQL (90% random
fingerprints, 10% copies of some of them with 1-3 bits flipped), and each
function runs once at distance 3 in a fresh backend with
maintenance_work_mem = 1GB (so at 100M rows the run spills to temporary
files): wall time, where the time went (the stages of the run's last
progress NOTICE: read, prepare, search, output), the backend's peak memory
(VmHWM, whole and per row), and the bytes of temporary files written.  The
result is checked on a sample of 100 rows (the planted copies' partners
among them) against brute force over the whole table, and every planted pair
must be found.

    make bench BENCH=find_all_scale                       # 1M and 10M
    make bench BENCH=find_all_scale BENCH_ARGS=--large    # and 100M (about 15 GB of disk, 30+ minutes)
    make bench BENCH=find_all_scale BENCH_ARGS="--sizes 10000000 --workers 0 1"   # one size, serial against 1 worker
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import psycopg

K = 3
SAMPLE = 100
STAGES = re.compile(r"read ([\d.]+) s, prepare ([\d.]+) s, search ([\d.]+) s, output ([\d.]+) s")


def generate(conn: psycopg.Connection, n: int) -> None:
    """t(id, fp): rows 1..0.9n random, the rest copies of random earlier rows with 1-3 bits flipped."""
    base = n * 9 // 10
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute(
        f"""CREATE UNLOGGED TABLE t AS
        SELECT i AS id,
               CASE WHEN i <= {base} THEN hashint8extended(i, 1)
                    ELSE hashint8extended(1 + abs(hashint8extended(i, 2)) % {base}, 1)
                         # (1::bigint << (abs(hashint4(i)) % 64))
                         # CASE WHEN i % 3 > 0 THEN 1::bigint << (abs(hashint4(i + 1)) % 64) ELSE 0 END
                         # CASE WHEN i % 3 > 1 THEN 1::bigint << (abs(hashint4(i + 2)) % 64) ELSE 0 END
               END::simhash64 AS fp,
               CASE WHEN i > {base} THEN 1 + abs(hashint8extended(i, 2)) % {base} END AS copy_of
        FROM generate_series(1, {n}) i"""
    )
    conn.execute("VACUUM ANALYZE t")


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """The CPU time a backend has used so far (steadier than wall time on a busy machine)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def temp_bytes(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()").fetchone()[0]


def run(dsn: str, function: str, n: int, workers: int) -> dict:
    """One run in a fresh backend: wall seconds, stages, peak memory, temp bytes, result table."""
    notices: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET work_mem = '64MB'")
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        conn.execute("SET simhash.progress_interval = '1h'")  # only the last NOTICE: stage times
        conn.execute(f"DROP TABLE IF EXISTS result_{function}")
        before_kb, before_temp, before_cpu = peak_kb(pid), temp_bytes(conn), cpu_seconds(pid)
        start = time.perf_counter()
        conn.execute(f"CREATE UNLOGGED TABLE result_{function} AS SELECT * FROM {function}('SELECT id, fp FROM t', {K})")
        wall = time.perf_counter() - start
        after_kb, cpu = peak_kb(pid), cpu_seconds(pid) - before_cpu
    with psycopg.connect(dsn, autocommit=True) as conn:
        time.sleep(1.0)  # the statistics of the finished backend
        spilled = temp_bytes(conn) - before_temp
        rows = conn.execute(f"SELECT count(*) FROM result_{function}").fetchone()[0]
    stages = next((m.groups() for m in map(STAGES.search, notices) if m), ("?",) * 4)
    return {"wall": wall, "cpu": cpu, "stages": stages, "peak_mb": (after_kb - before_kb) / 1024,
            "per_row": (after_kb - before_kb) * 1024 / n, "temp_gb": spilled / 1e9, "rows": rows}


def check_sample(conn: psycopg.Connection, n: int) -> str:
    """The pairs of 100 sampled rows (half of them planted copies) by brute force over the
    whole table, against the find_all result; and every planted pair found."""
    base = n * 9 // 10
    conn.execute("DROP TABLE IF EXISTS sample")
    conn.execute(
        f"CREATE TEMP TABLE sample AS SELECT id, fp FROM t WHERE id IN "
        f"(SELECT 1 + abs(hashint4(g)) % {base} FROM generate_series(1, {SAMPLE // 2}) g "
        f" UNION SELECT {base} + 1 + abs(hashint4(-g)) % {n - base} FROM generate_series(1, {SAMPLE // 2}) g)"
    )
    conn.execute("SET max_parallel_workers_per_gather = 2")
    brute = conn.execute(
        f"SELECT least(s.id, t.id), greatest(s.id, t.id), hamming_distance(s.fp, t.fp) FROM sample s JOIN t"
        f" ON hamming_distance(s.fp, t.fp) <= {K} AND s.id <> t.id"
    ).fetchall()
    found = conn.execute(
        "SELECT id1, id2, distance FROM result_simhash_find_all WHERE id1 IN (SELECT id FROM sample)"
        " OR id2 IN (SELECT id FROM sample)"
    ).fetchall()
    # a copy has 1-3 bits of its row flipped (fewer when two flips meet): always a pair
    missing_planted = conn.execute(
        "SELECT count(*) FROM t LEFT JOIN result_simhash_find_all r ON (r.id1, r.id2) = (t.copy_of, t.id)"
        " WHERE t.copy_of IS NOT NULL AND r.id1 IS NULL"
    ).fetchone()[0]
    same = sorted(set(brute)) == sorted(set(found))
    return f"sample of {SAMPLE} rows: {len(brute)} pairs by brute force, {'the same' if same else 'DIFFERENT'}; planted pairs missing: {missing_planted}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also 100M rows")
    parser.add_argument("--sizes", type=int, nargs="+", help="row counts (default 1M 10M, and 100M with --large)")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2], help="worker counts (default 0 2)")
    args, _ = parser.parse_known_args()
    sizes = args.sizes or [1_000_000, 10_000_000] + ([100_000_000] if args.large else [])
    dsn = os.environ["SIMHASH_DSN"]
    print(f"distance {K}, maintenance_work_mem 1GB, {os.cpu_count()} CPUs")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPU s: the backend's alone")
    print(f"{'rows':>11} {'function':<17}{'workers':>8}{'wall s':>8}{'CPU s':>8}{'us/row':>8}  {'read / prepare / search / output s':<36}"
          f"{'peak MB':>8}{'B/row':>7}{'temp GB':>8}{'results':>11}")
    for n in sizes:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
            start = time.perf_counter()
            generate(conn, n)
            print(f"({n} rows generated in {time.perf_counter() - start:.0f} s)")
        # past maintenance_work_mem (about 22 bytes a row) the run spills, in parallel as in memory
        worker_counts = args.workers
        for function in ("simhash_find_all", "simhash_clusters"):
            for workers in worker_counts:
                r = run(dsn, function, n, workers)
                stages = " / ".join(r["stages"])
                print(f"{n:>11} {function:<17}{workers:>8}{r['wall']:>8.1f}{r['cpu']:>8.1f}{r['wall'] / n * 1e6:>8.2f}  {stages:<36}"
                      f"{r['peak_mb']:>8.0f}{r['per_row']:>7.1f}{r['temp_gb']:>8.2f}{r['rows']:>11}", flush=True)
        with psycopg.connect(dsn, autocommit=True) as conn:
            print(check_sample(conn, n), flush=True)
            conn.execute("DROP TABLE IF EXISTS result_simhash_find_all, result_simhash_clusters, t")


if __name__ == "__main__":
    main()
