"""simhash_find_all and simhash_clusters inside PostgreSQL, next to Python's find_all.

A table of 1M rows (90% random fingerprints, 10% copies of some of them with
1-3 bits flipped) is searched at distance 3: the time of
``SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM t', 3, blocks)``
and of simhash_clusters for several block counts, best of a few runs, and the
backend's peak memory per row.  pysimhash_sql.hashing.find_all, if present,
runs on the same fingerprints in the same process for comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

K = 3
BLOCKS = (4, 5, 6, None)  # None: the function's own choice
# simhash-py's C++ core, 1M random unique hashes at distance 3, same machine class.
CPP_SECONDS = {5: 1.96, 6: 3.50}


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


def best_of(repeat: int, run) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_rss_kb(pid: int) -> int | None:
    """The backend's peak resident set (VmHWM), when /proc lets us read it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def bytes_per_row(dsn: str, sql: str, n: int) -> float | None:
    """Growth of a fresh backend's peak RSS over one run, per input row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100k rows, one run each")
    args, _ = parser.parse_known_args()
    n, repeat = (100_000, 1) if args.quick else (args.rows, args.repeat)
    dsn = os.environ["SIMHASH_DSN"]
    fps = fingerprints(n)

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        load(conn, fps)
        conn.execute("SET maintenance_work_mem = '1GB'")
        print(f"{n} rows ({n // 10} planted near-duplicates at 1-3 bits), distance {K}")
        print(f"{'function':<18}{'blocks':>8}{'seconds':>10}{'result rows':>13}{'vs C++':>9}")
        for function in ("simhash_find_all", "simhash_clusters"):
            for blocks in BLOCKS:
                sql = f"SELECT count(*) FROM {function}('SELECT id, fp FROM t', {K}, {'NULL' if blocks is None else blocks})"
                seconds, (count,) = best_of(repeat, lambda: conn.execute(sql).fetchone())
                cpp = CPP_SECONDS.get(blocks)
                ratio = f"{seconds / cpp:.2f}x" if cpp else ""
                label = "default" if blocks is None else str(blocks)
                print(f"{function:<18}{label:>8}{seconds:>10.3f}{count:>13}{ratio:>9}")

    for function in ("simhash_find_all", "simhash_clusters"):
        per_row = bytes_per_row(dsn, f"SELECT count(*) FROM {function}('SELECT id, fp FROM t', {K})", n)
        if per_row is not None:
            print(f"{function}: backend peak memory {per_row:.1f} bytes per row")

    find_all = python_find_all()
    if find_all is None:
        print("Python find_all: not available, skipped")
        return
    hashes = fps.tolist()
    for blocks in (5, 6):
        seconds, pairs = best_of(1, lambda: find_all(hashes, blocks, K))
        print(f"{'Python find_all':<18}{blocks:>8}{seconds:>10.3f}{len(pairs):>13}{seconds / CPP_SECONDS[blocks]:>8.2f}x")


if __name__ == "__main__":
    main()
