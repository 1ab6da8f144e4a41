"""pysimhash-sql dedupe end to end, beside text-dedup's simhash script, on
one corpus of real text with near-duplicates injected (dedupe_corpus.py):
precision, recall and F1 of the removed documents, documents/s and MB/s,
and peak memory (the largest resident set of the run's processes, from
wait4); then the in-memory engine's state per document at --state documents
(default 10M), from which 100M is said; with --size, the size run: that many
documents end to end through the command (dedupe_corpus.repeated: the corpus
repeated with varied copies, plain JSON Lines), its peak per document and
the 100M figure said from it.

    make bench BENCH=dedupe                                   # 200,000 documents
    make bench BENCH=dedupe BENCH_ARGS="--documents 50000 --state 1000000"
    make bench BENCH=dedupe BENCH_ARGS="--skip-text-dedup"    # ours only
    make bench BENCH=dedupe BENCH_ARGS="--documents 0 --state 0 --size 10000000"   # the size run alone
    make bench BENCH=dedupe BENCH_ARGS="--documents 0 --state 100000000"  # 100M fingerprints searched

text-dedup runs with its defaults (character 3-grams, 64 bits, 3 bits
apart, 4 blocks) on as many processes as --jobs (default every core), as we do.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dedupe_corpus

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("pysimhash-sql"))


# Linux keeps a process's largest resident set across exec, and a child forked
# from this (large) process starts as large as it: run_measured's commands are
# forked by this small launcher instead, which reports its child's own peak.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\n{sys.argv[1]} {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""
PEAK_MARKER = "peak-kib"


def run_measured(argv: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """Runs argv; its wall time and CPU time (user and system, of it and its
    children: the machine is shared, and CPU time moves far less with the
    load than wall time) in seconds, and the largest resident set of it and
    its children (wait4's ru_maxrss, through LAUNCHER) in MiB.  Fails if it does."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", LAUNCHER, PEAK_MARKER, *argv], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    stderr, _, peak = stderr.rstrip(b"\n").rpartition(b"\n")
    if os.waitstatus_to_exitcode(status) not in (0, 3) or not peak.startswith(PEAK_MARKER.encode()):
        sys.exit(f"{argv[:3]} failed: {stderr.decode(errors='replace')[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, int(peak.split()[1]) / 1024


def ours(corpus: Path, work: Path, jobs: int, dsn: str | None,
         removed: bool = True) -> tuple[float, float, float, set[int]]:
    """pysimhash-sql dedupe's run (and with ``removed``, the ids it removed: --removed)."""
    listed = work / "removed.jsonl"
    argv = [CLI, "dedupe", str(corpus), "-o", str(work / "out.jsonl"), "--jobs", str(jobs)]
    argv += (["--removed", str(listed)] if removed else []) + (["--dsn", dsn] if dsn else [])
    seconds, cpu, mib = run_measured(argv)
    if not removed:
        return seconds, cpu, mib, set()
    return seconds, cpu, mib, {json.loads(line)["id"] for line in listed.read_text().splitlines()}


def text_dedup(corpus: Path, work: Path, jobs: int, total: int) -> tuple[float, float, float, set[int]]:
    out = work / "text-dedup"
    argv = [sys.executable, "-m", "text_dedup.simhash", "--path", "json", "--data_files", str(corpus),
            "--split", "train", "--cache_dir", str(work / "cache"), "--output", str(out), "--column", "text",
            "--num_proc", str(jobs), "--clean_cache"]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(work / "hf")}
    seconds, cpu, mib = run_measured(argv, env)
    from datasets import load_from_disk

    kept = set(load_from_disk(str(out))["id"])
    return seconds, cpu, mib, set(range(total)) - kept


def one_core_mb_s(corpus: dedupe_corpus.Corpus, size: int) -> float:
    """MB of the corpus's JSON Lines (``size`` bytes) per CPU-second of one core
    fingerprinting its texts (fingerprint_batch as dedupe calls it, the
    default text spec): the goal's "one core's fingerprint MB/s"."""
    from pysimhash_sql.corpus_dedupe import fingerprint_batch
    from pysimhash_sql.text_spec import TEXT_SPEC_VERSION_LATEST

    texts = [r["text"] for r in corpus.records()]
    start = time.process_time()
    fingerprint_batch(texts, version=TEXT_SPEC_VERSION_LATEST, jobs=1)
    return size / 1e6 / (time.process_time() - start)


STATE_SCRIPT = """
import sys, time, numpy as np, resource
from pysimhash_sql.corpus_dedupe import Collector
def resident():  # bytes resident now
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
n = int(sys.argv[1]); rng = np.random.default_rng(1)
base = resident()
collector = Collector(sys.argv[2])
chunk = 1 << 16
for start in range(0, n, chunk):
    m = min(chunk, n - start)
    fps = rng.integers(0, 2**64, m, dtype=np.uint64, endpoint=False)
    copies = rng.random(m) < 0.3  # 30 % near copies of a document, 1 bit away
    flips = np.uint64(1) << rng.integers(0, 64, int(copies.sum()), dtype=np.uint64)
    fps[copies] = fps[rng.integers(0, m, int(copies.sum()))] ^ flips
    collector.add(fps, [""] * m if sys.argv[2] == "longest" else (), None)
collector.fingerprints()
held = resident()
t = time.perf_counter()
clusters = collector.clusters(3)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(base, held, peak, time.perf_counter() - t, int((~clusters.keep_mask).sum()))
"""


def state(documents: int, keep: str) -> tuple[float, float, float, int]:
    """The in-memory engine at ``documents`` fingerprints (of the keep rule):
    bytes a document held, bytes a document at the peak (the search), seconds, removed."""
    out = subprocess.run([sys.executable, "-c", STATE_SCRIPT, str(documents), keep], capture_output=True,
                         text=True, check=True).stdout.split()
    base, held, peak = map(int, out[:3])
    return (held - base) / documents, (peak - base) / documents, float(out[3]), int(out[4])


def lines_of(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 24), b""))


def size_run(documents: int, jobs: int) -> None:
    """``documents`` documents end to end through the command (no --removed:
    the dedupe's own memory), beside a run of its first ROUND_DOCUMENTS //
    10 documents for the fixed part (the interpreter, the modules): the peak
    per document past that, and 100M documents said from it."""
    corpus = dedupe_corpus.repeated(documents)
    size = corpus.path.stat().st_size
    work = Path(tempfile.mkdtemp(prefix="bench-dedupe-size-"))
    try:
        small = work / "small.jsonl"
        with open(corpus.path, "rb") as src, open(small, "wb") as dst:
            for _, line in zip(range(dedupe_corpus.ROUND_DOCUMENTS // 10), src):
                dst.write(line)
        _, _, fixed, _ = ours(small, work, jobs, None, removed=False)
        load = os.getloadavg()[0]
        seconds, cpu, mib, _ = ours(corpus.path, work, jobs, None, removed=False)
        kept = lines_of(work / "out.jsonl")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    should = documents - len(np.unique(corpus.groups))
    per_document = (mib - fixed) * 2**20 / documents
    print(f"\nsize run: {documents:,} documents, {size / 1e9:.1f} GB of JSON Lines (dedupe_corpus.repeated), "
          f"{jobs} jobs, load {load:.1f} on {os.cpu_count()} CPUs at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"  {seconds:.0f} s wall ({documents / seconds:,.0f} documents/s, {size / 1e6 / seconds:.1f} MB/s), "
          f"{cpu:.0f} CPU-s ({documents / cpu:,.0f} documents a CPU-second); removed {documents - kept:,} "
          f"(copies injected: {should:,})")
    print(f"  peak resident {mib:,.0f} MiB, {mib * 2**20 / documents:.1f} bytes a document; "
          f"{fixed:.0f} MiB at {dedupe_corpus.ROUND_DOCUMENTS // 10:,} documents (the fixed part): "
          f"{per_document:.1f} bytes a document past it; 100M documents: "
          f"{(fixed * 2**20 + per_document * 1e8) / 2**30:.1f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000, help="corpus size (default 200,000)")
    parser.add_argument("--state", type=int, default=10_000_000,
                        help="documents of the state measure (default 10M; 0: none)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--skip-text-dedup", action="store_true")
    parser.add_argument("--skip-dsn", action="store_true")
    parser.add_argument("--size", type=int, default=0,
                        help="documents of the size run end to end (dedupe_corpus.repeated; default 0: none)")
    parser.add_argument("--quick", action="store_true", help="20,000 documents, state at 1M")
    args, _ = parser.parse_known_args()
    if args.quick:
        args.documents, args.state = 20_000, 1_000_000

    if args.documents:
        compare(args)
    if args.size:
        size_run(args.size, args.jobs)
    if args.state:
        print(f"\nthe in-memory engine's state at {args.state:,} documents (30 % near copies), "
              f"resident bytes a document (load {os.getloadavg()[0]:.1f}):")
        for keep in ("first", "longest"):
            held, peak, seconds, removed = state(args.state, keep)
            print(f"  --keep {keep:8} held {held:5.1f}, at the search's peak {peak:5.1f} "
                  f"({seconds:.1f} s, {removed:,} removed); 100M documents: {peak * 1e8 / 2**30:.1f} GiB")


def compare(args) -> None:
    """The corpus of --documents through ours and text-dedup's, side by side."""
    corpus = dedupe_corpus.build(args.documents)
    work = Path(tempfile.mkdtemp(prefix="bench-dedupe-"))
    try:
        plain = work / "corpus.jsonl"  # JSON Lines in, JSON Lines out: no decompression in the figures
        with gzip.open(corpus.path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        total, size = len(corpus.groups), plain.stat().st_size
        should = total - len(set(corpus.groups))
        print(f"corpus: {total} documents, {size / 1e6:.1f} MB of JSON Lines, {should} copies to remove "
              f"(dedupe_corpus.py), {args.jobs} jobs on {os.cpu_count()} CPUs")
        dsn = None
        if not args.skip_dsn and os.environ.get("PGHOST"):
            import psycopg

            dsn = "postgresql://"
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        runs = [("pysimhash-sql dedupe", lambda: ours(plain, work, args.jobs, None))]
        if dsn:
            runs.append(("pysimhash-sql dedupe --dsn", lambda: ours(plain, work, args.jobs, dsn)))
        if not args.skip_text_dedup:
            runs.append(("text-dedup simhash", lambda: text_dedup(plain, work, args.jobs, total)))
        print("wall: seconds of the run; CPU: seconds of CPU time of its processes, and documents and MB a "
              "CPU-second (the machine is shared: CPU time is the steadier measure)")
        print(f"{'':28} {'wall s':>8} {'CPU s':>8} {'docs/CPU-s':>10} {'MB/CPU-s':>8} {'docs/s':>7} {'peak MiB':>9} "
              f"{'removed':>8} {'precision':>9} {'recall':>7} {'F1':>6}")
        results = {}
        for name, run in runs:
            seconds, cpu, mib, removed = run()
            precision, recall, f1 = dedupe_corpus.scores(corpus.groups, removed)
            results[name] = (seconds, cpu, mib, removed)
            print(f"{name:28} {seconds:8.1f} {cpu:8.1f} {total / cpu:10.0f} {size / 1e6 / cpu:8.2f} "
                  f"{total / seconds:7.0f} {mib:9.0f} {len(removed):8d} {precision:9.3f} {recall:7.3f} {f1:6.3f}",
                  flush=True)
        if dsn:
            same = results["pysimhash-sql dedupe"][3] == results["pysimhash-sql dedupe --dsn"][3]
            print(f"--dsn removes the same documents as in memory: {same}")
        if "text-dedup simhash" in results:
            a, b = results["pysimhash-sql dedupe"], results["text-dedup simhash"]
            print(f"against text-dedup: {b[1] / a[1]:.1f}x its speed in CPU time ({b[0] / a[0]:.1f}x in wall time), "
                  f"{a[2] / b[2]:.2f}x its peak memory")
        mb_s = one_core_mb_s(corpus, size)
        wall, cpu = results["pysimhash-sql dedupe"][:2]
        print(f"one core's fingerprints: {mb_s:.2f} MB of JSON Lines a CPU-second; end to end (first row): "
              f"{size / 1e6 / cpu:.2f} MB a CPU-second of all its processes, "
              f"{size / 1e6 / cpu / mb_s:.2f}x one core's fingerprints; by the wall clock {size / 1e6 / wall:.2f} MB/s "
              f"= {size / 1e6 / wall / (args.jobs * mb_s):.2f} x jobs x one core's (goal >= 0.5 x cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
