"""simhash_find_all and simhash_clusters inside PostgreSQL, next to Python's find_all.

A table of 1M rows (90% random fingerprints, 10% copies of some of them with
1-3 bits flipped) is searched at distance 3: the time of
``SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM t', 3, blocks)``
and of simhash_clusters for several block counts, best of a few runs (wall
clock, and the backend's CPU time, which other load on the machine disturbs
less), and the backend's peak memory per row.  On the same fingerprints, in
the same run: pysimhash_sql.hashing.find_all, and simhash-cpp's find_all:
SIMHASH_CPP_FIND_ALL names a program (built by you from simhash-cpp, not part of
this project) that reads decimal hashes on stdin, takes the blocks and the
distance as arguments and prints "hashes pairs wall_seconds cpu_seconds
[peak_rss_kb]" of find_all alone; else simhash-py's C++ core if the
simhash-pybind package is installed; else its published figures are quoted.

Then the same runs with parallel workers (workers => 0, 1, 2) side by side,
and the backend's peak memory per row, serial and with 2 workers.
bench_find_all_scale.py takes the sizes up to 100M rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

K = 3
BLOCKS = (4, 5, 6, None)  # None: the function's own choice
# simhash-py's C++ core, 1M random unique hashes at distance 3, same machine class.
CPP_REFERENCE_SECONDS = {5: 1.96, 6: 3.50}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPP_PEAK_KB: dict[int, int] = {}  # simhash-cpp's peak RSS per block count, when its program reports it


def fingerprints(n: int, seed: int = 1) -> np.ndarray:
    """n fingerprints: 90% random, 10% near-duplicates of those at 1-3 bits."""
    rng = np.random.default_rng(seed)
    planted = n // 10
    base = rng.integers(0, 2**64, size=n - planted, dtype=np.uint64)
    copies = base[rng.integers(0, base.size, size=planted)]
    for i in range(planted):
        for bit in rng.choice(64, size=rng.integers(1, 4), replace=False):
            copies[i] ^= np.uint64(1) << np.uint64(bit)
    return np.concatenate([base, copies])


def load(conn: psycopg.Connection, fps: np.ndarray) -> None:
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute("CREATE TABLE t (id bigint, fp simhash64)")
    with conn.cursor().copy("COPY t (id, fp) FROM STDIN") as copy:
        copy.write("".join(f"{i}\t{v}\n" for i, v in enumerate(fps.tolist(), 1)))
    conn.execute("VACUUM ANALYZE t")


def cpu_seconds(pid: int | None) -> float:
    """CPU time used so far by a process (a backend), or NaN when /proc won't say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def best_of(repeat: int, run, pid: int | None = None) -> tuple[float, float, object]:
    """Best wall-clock seconds, best CPU seconds of process pid, last result."""
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        cpu, start = cpu_seconds(pid), time.perf_counter()
        result = run()
        best_wall = min(best_wall, time.perf_counter() - start)
        best_cpu = min(best_cpu, cpu_seconds(pid) - cpu)
    return best_wall, best_cpu, result


def peak_rss_kb(pid: int) -> int | None:
    """The backend's peak resident set (VmHWM), when /proc lets us read it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def bytes_per_row(dsn: str, sql: str, n: int, workers: int = 0) -> float | None:
    """Growth of a fresh backend's peak RSS over one run, per input row (with
    workers, the backend's own: the rows in shared memory are counted where the
    backend touches them, the workers' buffers are theirs)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        conn.execute("SET maintenance_work_mem = '1GB'")
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        # Touch all of the table's shared buffers first, in this backend alone.
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("SELECT count(*) FROM t")
        before = peak_rss_kb(pid)
        conn.execute(sql).fetchone()
        after = peak_rss_kb(pid)
    if before is None or after is None:
        return None
    return (after - before) * 1024 / n


def python_find_all():
    """pysimhash_sql.hashing.find_all: installed, or from the main checkout."""
    try:
        from pysimhash_sql.hashing import find_all

        return find_all
    except ImportError:
        pass
    main = Path("/work/main/pysimhash_sql")
    if not (main / "hashing.py").exists():
        return None
    spec = importlib.util.spec_from_file_location(
        "main_pysimhash_sql", main / "__init__.py", submodule_search_locations=[str(main)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["main_pysimhash_sql"] = package
    spec.loader.exec_module(package)
    hashing = importlib.import_module("main_pysimhash_sql.hashing")
    return getattr(hashing, "find_all", None)


def cpp_seconds(fps: np.ndarray) -> tuple[dict[int, tuple[float, float]], str]:
    """simhash-cpp's find_all on the distinct fingerprints: (wall, CPU) seconds
    per block count."""
    program = os.environ.get("SIMHASH_CPP_FIND_ALL")
    if program:
        text = "".join(f"{h}\n" for h in set(fps.tolist()))
        seconds = {}
        for blocks in CPP_REFERENCE_SECONDS:
            out = subprocess.run([program, str(blocks), str(K)], input=text, capture_output=True, text=True, check=True)
            fields = out.stdout.split()
            seconds[blocks] = (float(fields[2]), float(fields[3]))
            if len(fields) > 4:
                CPP_PEAK_KB[blocks] = int(fields[4])
        return seconds, f"simhash-cpp find_all ({program}), measured in this run"
    try:
        from simhash import c_find_all  # the simhash-pybind package
    except ImportError:
        figures = {b: (s, s) for b, s in CPP_REFERENCE_SECONDS.items()}
        return figures, "published figures for 1M random unique hashes"
    hashes = set(fps.tolist())
    seconds = {}
    for blocks in CPP_REFERENCE_SECONDS:
        wall, cpu, _ = best_of(1, lambda: c_find_all(hashes, blocks, K), os.getpid())
        seconds[blocks] = (wall, cpu)
    return seconds, "simhash-pybind c_find_all, measured in this run"


def ratios(wall: float, cpu: float, versus: tuple[float, float] | None) -> str:
    return f"{wall / versus[0]:.2f}x {cpu / versus[1]:.2f}x" if versus else ""


def parallel_table(conn: psycopg.Connection, repeat: int) -> dict[tuple[str, int], float]:
    """Both functions with workers => 0, 1, 2 side by side: workers are the
    parallel workers besides the backend, which works too, so workers => 1
    runs on 2 cores.  Wall clock only (the CPU time is spread over the
    processes), with the machine's load average, as other load skews it."""
    conn.execute("SET max_parallel_maintenance_workers = 2")
    print(f"parallel workers (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs)")
    print(f"{'function':<18}{'workers':>8}{'wall s':>9}{'result rows':>13}  speed-up vs workers 0")
    walls = {}
    for function in ("simhash_find_all", "simhash_clusters"):
        for workers in (0, 1, 2):
            sql = f"SELECT count(*) FROM {function}('SELECT id, fp FROM t', {K}, workers => {workers})"
            wall, _, (count,) = best_of(repeat, lambda: conn.execute(sql).fetchone())
            walls[function, workers] = wall
            print(f"{function:<18}{workers:>8}{wall:>9.3f}{count:>13}  {walls[function, 0] / wall:.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100k rows, one run each")
    args, _ = parser.parse_known_args()
    n, repeat = (100_000, 1) if args.quick else (args.rows, args.repeat)
    dsn = os.environ["SIMHASH_DSN"]
    fps = fingerprints(n)

    cpp, cpp_source = cpp_seconds(fps)
    print(f"C++ core ({cpp_source}):")
    for blocks, (wall, cpu) in cpp.items():
        print(f"{'C++ find_all':<18}{blocks:>8}{wall:>9.3f}{cpu:>8.2f}")

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        load(conn, fps)
        conn.execute("SET maintenance_work_mem = '1GB'")
        # One core, as simhash-cpp's find_all: the parallel table follows.
        conn.execute("SET max_parallel_maintenance_workers = 0")
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        print(f"{n} rows ({n // 10} planted near-duplicates at 1-3 bits), distance {K}")
        print(f"{'function':<18}{'blocks':>8}{'wall s':>9}{'CPU s':>8}{'result rows':>13}  vs C++ (wall, CPU)")
        for function in ("simhash_find_all", "simhash_clusters"):
            for blocks in BLOCKS:
                sql = f"SELECT count(*) FROM {function}('SELECT id, fp FROM t', {K}, {'NULL' if blocks is None else blocks})"
                wall, cpu, (count,) = best_of(repeat, lambda: conn.execute(sql).fetchone(), pid)
                # The default is compared with the C++ core's best (5 blocks).
                versus = cpp[5] if blocks is None else cpp.get(blocks)
                label = "default" if blocks is None else str(blocks)
                print(f"{function:<18}{label:>8}{wall:>9.3f}{cpu:>8.2f}{count:>13}  {ratios(wall, cpu, versus)}")

        parallel_table(conn, repeat)

    for function in ("simhash_find_all", "simhash_clusters"):
        for workers in (0, 2):
            per_row = bytes_per_row(dsn, f"SELECT count(*) FROM {function}('SELECT id, fp FROM t', {K})", n, workers)
            if per_row is None:
                continue
            versus = ""
            if function == "simhash_find_all" and 5 in CPP_PEAK_KB:
                versus = f", {per_row * n / 1024 / CPP_PEAK_KB[5]:.2f}x simhash-cpp's peak RSS ({CPP_PEAK_KB[5] / 1024:.0f} MB)"
            print(f"{function}, {workers} workers: backend peak memory {per_row:.1f} bytes per row{versus}")

    find_all = python_find_all()
    if find_all is None:
        print("Python find_all: not available, skipped")
        return
    hashes = fps.tolist()
    for blocks in (5, 6):
        wall, cpu, pairs = best_of(1, lambda: find_all(hashes, blocks, K), os.getpid())
        print(f"{'Python find_all':<18}{blocks:>8}{wall:>9.3f}{cpu:>8.2f}{len(pairs):>13}  {ratios(wall, cpu, cpp[blocks])}")


if __name__ == "__main__":
    main()
