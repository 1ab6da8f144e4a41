"""Text fingerprints in Python beside SQL's, side by side in one run.

MB/s of UTF-8 of one core: SQL's simhash_v3(text), simhash_v2(text) and simhash(text) (one
backend, by its CPU time), the package's compiled core (hashing.COMPILED:
pysimhash_sql._simhash_core, by this process's CPU time) and its pure-Python
reference (hashing.PURE_PYTHON, on a tenth of the text), on English (the
licenses of examples/corpus, 20 kB documents) and Chinese (Debian's
manpages-zh, 7,000-character documents); then hashing.fingerprints() in 1
and 2 threads (wall clock: the GIL is released; each call at least half a
second of one thread, the texts repeated), and the time `import
pysimhash_sql` takes with the compiled core and without it
(PYSIMHASH_SQL_PURE_PYTHON=1).  Goals (issue 49): compiled >= 0.8 x SQL a
core; 2 threads >= 1.8 x one; the CLI's fingerprint (JSON Lines in, one
job a core) >= 0.8 x cores x one core's MB/s, end to end (and past the
interpreter's start, which an empty file measures).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from benchlib import CHINESE_MAN_PAGES, best_of, chinese_text, cpu_clock, documents, english_text, quick_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from pysimhash_sql import hashing  # noqa: E402
from pysimhash_sql.cli.jsonl import JSON_PARSER  # noqa: E402
from pysimhash_sql.text_spec import TEXT_SPEC_VERSION_LATEST  # noqa: E402

SQL_FUNCTIONS = {3: "simhash_v3", 2: "simhash_v2", 1: "simhash"}
THREADS_SECONDS = 0.5


def mb(docs: list[str]) -> float:
    return sum(len(doc.encode()) for doc in docs) / 1e6


def sql_rates(dsn: str, corpora: dict[str, list[str]], repeat: int) -> dict[tuple[str, int], float]:
    """MB/s of each SQL function on each corpus, by the backend's CPU time (else the wall clock)."""
    rates = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        conn.execute("SET max_parallel_workers_per_gather = 0")
        clock = cpu_clock(conn.execute("SELECT pg_backend_pid()").fetchone()[0]) or time.perf_counter
        for name, docs in corpora.items():
            conn.execute("DROP TABLE IF EXISTS bench_python_docs")
            conn.execute("CREATE TABLE bench_python_docs (body text) WITH (toast_tuple_target = 8160)")
            conn.execute("ALTER TABLE bench_python_docs ALTER body SET STORAGE EXTERNAL")  # no decompression cost
            with conn.cursor().copy("COPY bench_python_docs FROM STDIN") as copy:
                for doc in docs:
                    copy.write_row((doc,))
            conn.execute("VACUUM ANALYZE bench_python_docs")
            for version, function in SQL_FUNCTIONS.items():
                sql = f"SELECT count({function}(body)) FROM bench_python_docs"
                seconds, _ = best_of(repeat, lambda: conn.execute(sql).fetchall(), clock)
                rates[name, version] = mb(docs) / seconds
        conn.execute("DROP TABLE bench_python_docs")
    return rates


def python_rate(implementation, docs: list[str], version: int, repeat: int) -> float:
    """MB/s of one implementation, one document at a time, by this process's CPU time."""
    one = {3: implementation.simhash_v3, 2: implementation.simhash_v2}.get(
        version, lambda doc: implementation.simhash(doc, 3))
    seconds, _ = best_of(repeat, lambda: [one(doc) for doc in docs], time.process_time)
    return mb(docs) / seconds


def threads_rates(docs: list[str], version: int, repeat: int) -> dict[int, tuple[float, float]]:
    """hashing.fingerprints(jobs=1) and (jobs=2), interleaved, best of repeat:
    MB/s by the wall clock, and by this process's CPU time (all threads': it
    stays one thread's where nothing is serialised)."""
    # Each timed call at least THREADS_SECONDS of one thread (the texts repeated):
    # the kernel takes some milliseconds to move a new thread to an idle core,
    # a tenth of a 40 ms call of version 1, nothing on a corpus.
    wall = time.perf_counter()
    hashing.fingerprints(docs, version=version, jobs=1)
    docs = docs * max(1, math.ceil(THREADS_SECONDS / (time.perf_counter() - wall)))
    best = {1: (0.0, 0.0), 2: (0.0, 0.0)}
    for _ in range(repeat):
        for jobs in best:
            wall, cpu = time.perf_counter(), time.process_time()
            hashing.fingerprints(docs, version=version, jobs=jobs)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[jobs] = (max(best[jobs][0], mb(docs) / wall), max(best[jobs][1], mb(docs) / cpu))
    return best


def cli_rates(docs: list[str], repeat: int, size_mb: int) -> tuple[dict[int, float], dict[int, float], float]:
    """`pysimhash-sql fingerprint` over the documents, repeated to size_mb, as
    one JSON Lines file with --jobs 1 and with one job a core, interleaved, best
    of repeat: MB/s of JSON Lines by the wall clock, end to end (the
    interpreter's start, reading, parsing, fingerprinting, writing); the same
    past the start (the run over an empty file: imports), and the start's seconds."""
    import json
    import tempfile

    cli = Path(sys.executable).with_name("pysimhash-sql")
    jobs_all = os.cpu_count() or 1
    best, start = {1: 0.0, jobs_all: 0.0}, float("inf")
    docs = docs * max(1, round(size_mb / mb(docs)))
    with tempfile.TemporaryDirectory(prefix="bench-cli-fingerprint-") as tmp:
        corpus, empty = Path(tmp, "corpus.jsonl"), Path(tmp, "empty.jsonl")
        corpus.write_text("".join(json.dumps({"id": i, "text": doc}) + "\n" for i, doc in enumerate(docs)))
        empty.write_text("")
        size = corpus.stat().st_size / 1e6

        def run(jobs: int, path: Path) -> float:
            wall = time.perf_counter()
            subprocess.run([str(cli), "fingerprint", "--jobs", str(jobs), "-o", os.devnull, str(path)], check=True)
            return time.perf_counter() - wall

        for _ in range(repeat):
            start = min(start, run(jobs_all, empty))
            for jobs in best:
                best[jobs] = max(best[jobs], size / run(jobs, corpus))
    return best, {jobs: size / (size / rate - start) for jobs, rate in best.items()}, start


def import_ms(module: str, env: dict[str, str], repeat: int = 15, part: str | None = None) -> float:
    """Milliseconds `import module` takes in a fresh interpreter, as -X importtime
    reports it (cumulative, the interpreter's own start left out), best of
    repeat; with part, the time of that module alone (its own, not its imports')."""
    def once() -> float:
        run = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], check=True,
                             capture_output=True, text=True, env={**os.environ, **env})
        line = next(line for line in run.stderr.splitlines() if line.split("|")[-1].strip() == (part or module))
        return int(line.split("|")[0 if part else 1].split(":")[-1]) / 1000

    return min(once() for _ in range(repeat))


def main() -> None:
    quick = quick_run(__doc__)
    text_mb, repeat = (5, 3) if quick else (30, 3)
    corpora = {"English": documents(english_text(), text_mb * 1_000_000, 20_000)}
    chinese = chinese_text()
    if chinese:
        corpora["Chinese"] = documents(chinese, text_mb * 1_000_000, 7_000)
    sql = sql_rates(os.environ["SIMHASH_DSN"], corpora, repeat)
    compiled = hashing.COMPILED

    print(f"fingerprint implementation in use: {hashing.IMPLEMENTATION}"
          + (f" (SIMD {compiled.core.SIMD_LEVEL})" if compiled else " (no compiled core: pip install . with a C compiler)"))
    print(f"{text_mb} MB of each text; MB/s of one core (pure Python on a tenth of it); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (2 threads beat one only where a core is idle)")
    print(f"{'':<26} {'':>8} {'':>16} {'':>19}   fingerprints(), wall clock; CPU MB/s in 2")
    print(f"{'text':<8} {'spec':<17} {'SQL':>8} {'compiled':>9} {'/ SQL':>6} {'pure Python':>12} {'/ SQL':>6}"
          f" {'1 thread':>9} {'2 threads':>10} {'2 / 1':>6} {'CPU':>6}")
    for name, docs in corpora.items():
        for version, function in SQL_FUNCTIONS.items():
            base = sql[name, version]
            pure = python_rate(hashing.PURE_PYTHON, docs[: max(1, len(docs) // 10)], version, 1)
            if compiled:
                fast = python_rate(compiled, docs, version, repeat)
                rates = threads_rates(docs, version, repeat)
                (one, _), (two, two_cpu) = rates[1], rates[2]
                columns = f"{fast:9.1f} {fast / base:6.2f}"
                threads = f"{one:9.1f} {two:10.1f} {two / one:6.2f} {two_cpu:6.0f}"
            else:
                columns, threads = f"{'-':>9} {'-':>6}", ""
            print(f"{name:<8} {function + '(text)':<17} {base:8.1f} {columns} {pure:12.1f} {pure / base:6.2f} {threads}")
    if compiled:
        one_core = python_rate(compiled, corpora["English"], TEXT_SPEC_VERSION_LATEST, repeat)  # the CLI's default
        cli, past, start = cli_rates(corpora["English"], repeat, 20 if quick else 400)
        jobs_all, all_rate = max(cli.items())
        print(f"pysimhash-sql fingerprint (text spec {TEXT_SPEC_VERSION_LATEST}), English JSON Lines (20 kB documents), "
              f"JSON parsed by {JSON_PARSER}, end "
              f"to end: --jobs 1 {cli[1]:.1f} MB/s, --jobs {jobs_all} {all_rate:.1f} MB/s = "
              f"{all_rate / (jobs_all * one_core):.2f} x cores x one core's {one_core:.1f} MB/s (goal >= 0.8); "
              f"past the start ({start:.2f} s of imports): {past[1]:.1f} and {past[jobs_all]:.1f} MB/s = "
              f"{past[jobs_all] / (jobs_all * one_core):.2f} x")
    if not chinese:
        print(f"Chinese: missing {CHINESE_MAN_PAGES} (Debian's manpages-zh)")
    for module in ("pysimhash_sql", "pysimhash_sql.hashing"):
        with_core, without = import_ms(module, {}), import_ms(module, {"PYSIMHASH_SQL_PURE_PYTHON": "1"})
        print(f"import {module}: {with_core:.1f} ms with the compiled core, {without:.1f} ms without it")
    if compiled:
        own = import_ms("pysimhash_sql.hashing", {}, part="pysimhash_sql._simhash_core")
        print(f"  of which the compiled core's own: {own:.2f} ms (numpy is imported by the pure-Python code's first call, "
              "not here)")


if __name__ == "__main__":
    main()
