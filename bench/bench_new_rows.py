"""Benchmark of new rows against stored rows: the batch check
`fresh n WHERE EXISTS (SELECT FROM stored s WHERE hamming_within(s.fp, n.fp, k))`.

Needs a server with the extension available ($SIMHASH_DSN; `make bench` starts
one).  For each index kind (simhash_mih, GIN) on SIMHASH_BENCH_STORED stored rows
(default 1M; 10M with --large): the time to check SIMHASH_BENCH_FRESH new rows
(default 100k; 10 % near copies of stored rows, 2 bits away) at k = 3 and
k = 5, with the new rows' side serial and in 1 and 2 parallel workers (the new
rows' table set to `parallel_workers`, as docs/find_all.md advises for staging
tables), side by side, and the rows found (the same in every column).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import psycopg

from bench_index import flips, prewarm

KINDS = {"simhash_mih": "simhash_mih (fp)", "gin": "gin (fp)"}
RADII = (3, 5)
WORKERS = (0, 1, 2)
CHECK = "SELECT count(*) FROM fresh n WHERE EXISTS (SELECT FROM stored s WHERE hamming_within(s.fp, n.fp, {k}))"


def load(conn: psycopg.Connection, table: str, fps: np.ndarray) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id serial PRIMARY KEY, fp simhash64 NOT NULL)")
    with conn.cursor().copy(f"COPY {table} (fp) FROM STDIN") as copy:
        copy.write("\n".join(map(str, fps.tolist())) + "\n")
    conn.execute(f"VACUUM ANALYZE {table}")


def timed_check(conn: psycopg.Connection, k: int, workers: int) -> tuple[float, int, int]:
    """(seconds, rows found, workers launched) of one batch check."""
    conn.execute(f"ALTER TABLE fresh SET (parallel_workers = {max(workers, 1)})")
    conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
    sql = CHECK.format(k=k)
    start = time.perf_counter()
    (found,) = conn.execute(sql).fetchone()
    seconds = time.perf_counter() - start
    plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}"))
    launched = sum(int(line.split(":")[1]) for line in plan.splitlines() if "Workers Launched" in line)
    return seconds, found, launched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="10M stored rows")
    parser.add_argument("--quick", action="store_true", help="100k stored rows, 10k new")
    args, _ = parser.parse_known_args()
    stored_rows = int(os.environ.get("SIMHASH_BENCH_STORED", 10_000_000 if args.large else 100_000 if args.quick else 1_000_000))
    fresh_rows = int(os.environ.get("SIMHASH_BENCH_FRESH", 10_000 if args.quick else 100_000))
    rng = np.random.default_rng(7)
    stored = rng.integers(0, 2**64, size=stored_rows, dtype=np.uint64)
    near = stored[rng.integers(0, stored_rows, size=fresh_rows // 10)] ^ flips(rng, fresh_rows // 10, 2)
    fresh = np.concatenate([near, rng.integers(0, 2**64, size=fresh_rows - len(near), dtype=np.uint64)])
    with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        load(conn, "stored", stored)
        load(conn, "fresh", fresh)
        conn.execute("SET parallel_setup_cost = 0")
        print(f"{fresh_rows:,} new rows against {stored_rows:,} stored rows; seconds (rows found, workers launched)")
        print(f"{'index':<12} {'k':>2} " + " ".join(f"{f'{w} workers' if w else 'serial':>22}" for w in WORKERS)
              + f" {'serial/2 workers':>17}")
        for kind, using in KINDS.items():
            conn.execute("DROP INDEX IF EXISTS stored_fp")
            conn.execute(f"CREATE INDEX stored_fp ON stored USING {using}")
            conn.execute("ANALYZE stored")
            prewarm(conn, "stored", "stored_fp")
            for k in RADII:
                timed_check(conn, k, 0)  # warm
                runs = [timed_check(conn, k, w) for w in WORKERS]
                cells = " ".join(f"{s:>10.3f}s ({n:>6}, {l})" for s, n, l in runs)
                print(f"{kind:<12} {k:>2} {cells} {runs[0][0] / runs[-1][0]:>16.2f}x")
        conn.execute("DROP TABLE stored, fresh")


if __name__ == "__main__":
    main()
