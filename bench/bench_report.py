"""The near-duplicate report (pysimhash-sql report) on a large table: time, memory, file weight.

A table of --rows rows (default 1M; --quick 100k) is generated in the server
with generate_series: pseudo-random fingerprints, every tenth row a copy of
the one before with 1-3 bits flipped, and a short text each; a simhash_mih
index.  Then simhash_nn_histogram alone, and the whole report command (as a
user runs it), are timed; the command's peak memory (its resident set) and the
HTML file's size are printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

GENERATE = """
DROP TABLE IF EXISTS bench_report;
CREATE TABLE bench_report AS
SELECT g AS id,
       CASE WHEN g % 10 = 0
            THEN (base(g - 1) # (1::bigint << (g % 61)) # ((g % 3)::bigint << (g % 59)))::simhash64
            ELSE base(g)::simhash64 END AS fingerprint,
       'document ' || (g - (g % 10 = 0)::int) || CASE WHEN g % 10 = 0 THEN ' again, edited' ELSE '' END AS body
FROM generate_series(1, %(rows)s) AS g;
"""
BASE = """
CREATE OR REPLACE FUNCTION pg_temp.base(g bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT (hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295) $$
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sample-size", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="100k rows")
    args, _ = parser.parse_known_args()
    rows = 100_000 if args.quick else args.rows
    dsn = os.environ["SIMHASH_DSN"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        conn.execute(BASE)
        started = time.perf_counter()
        conn.execute(GENERATE.replace("base(", "pg_temp.base(").replace("%(rows)s", str(int(rows))))
        conn.execute("CREATE INDEX ON bench_report USING simhash_mih (fingerprint)")
        conn.execute("ANALYZE bench_report")
        print(f"{rows} rows generated and indexed (simhash_mih) in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        histogram = conn.execute("SELECT distance, documents FROM simhash_nn_histogram('bench_report', 'id', "
                                 "'fingerprint', NULL, %s)", (args.sample_size,)).fetchall()
        print(f"simhash_nn_histogram, sample {args.sample_size}: {time.perf_counter() - started:.2f} s  "
              + " ".join(f"{'>' if d is None else d}:{n}" for d, n in histogram if n))
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "report.html"
        cli = Path(sys.executable).with_name("pysimhash-sql")
        started = time.perf_counter()
        result = subprocess.run([str(cli), "report", "--dsn", dsn, "--table", "bench_report", "--text-column",
                                 "body", "--sample-size", str(args.sample_size), "-o", str(out)],
                                capture_output=True, text=True)
        wall = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if result.returncode != 0:
            print(f"report failed ({result.returncode}): {result.stderr.strip()}")
            return
        print(f"pysimhash-sql report: {wall:.1f} s wall, peak RSS {peak_mb:.0f} MB (the command), "
              f"HTML {out.stat().st_size / 2**20:.2f} MiB")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE bench_report")


if __name__ == "__main__":
    main()
