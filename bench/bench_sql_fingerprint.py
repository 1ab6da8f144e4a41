"""Fingerprint throughput inside PostgreSQL (one backend, no parallel workers).

Prints MB/s of simhash(text) (spec version 1), simhash_v2(text) and
simhash_v3(text) side by side on English and on Chinese text, by the wall clock and by the backend's CPU
time (which other load on the machine disturbs far less; where /proc shows it),
version 2 also with its vector code held to AVX2 and to plain x86-64
(simhash.debug_simd: what a CPU without AVX-512 runs), and feature hashes/s of simhash(bigint[]),
next to md5(text) and sum(length(text)) in the same run as yardsticks for this
machine.  The Chinese text is Debian's Chinese manual pages (manpages-zh, which
`make bench` installs), roff stripped, the lines with Chinese in them.
"""

from __future__ import annotations

import os
import time

import psycopg
from benchlib import CHINESE_MAN_PAGES, best_of, chinese_text, cpu_clock, documents, english_text, quick_run

# simhash.debug_simd's levels: the best this CPU runs (AVX-512 where it has it), AVX2, plain x86-64.
SIMD_LEVELS = ("auto", "avx2", "none")


def main() -> None:
    quick = quick_run(__doc__)
    text_mb = 20 if quick else 100
    n_hashes = 5_000_000 if quick else 20_000_000

    with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("DROP TABLE IF EXISTS bench_docs, bench_zh_docs, bench_hashes")
        chinese = chinese_text()
        corpora = {"bench_docs": documents(english_text(), text_mb * 1_000_000, 20_000)}
        if chinese:  # 20 kB documents of either: 20,000 ASCII characters, about 7,000 Chinese
            corpora["bench_zh_docs"] = documents(chinese, text_mb * 1_000_000, 7_000)
        for table, docs in corpora.items():
            conn.execute(f"CREATE TABLE {table} (body text) WITH (toast_tuple_target = 8160)")
            conn.execute(f"ALTER TABLE {table} ALTER body SET STORAGE EXTERNAL")  # no decompression cost
            with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                for doc in docs:
                    copy.write_row((doc,))
            conn.execute(f"VACUUM ANALYZE {table}")
        nbytes = conn.execute("SELECT sum(octet_length(body)) FROM bench_docs").fetchone()[0]
        conn.execute(
            "CREATE TABLE bench_hashes AS SELECT array_agg(hashtextextended(g::text, 0)) AS hashes"
            f" FROM generate_series(1, {n_hashes}) g GROUP BY g % {n_hashes // 100_000}"
        )
        conn.execute("ALTER TABLE bench_hashes ALTER hashes SET STORAGE EXTERNAL")
        conn.execute("VACUUM ANALYZE bench_hashes")

        rows = []
        for label, sql in [
            ("read text: sum(length(body))", "SELECT sum(length(body)) FROM bench_docs"),
            ("md5(body)", "SELECT count(md5(body)) FROM bench_docs"),
            ("simhash(body)  (3-shingles)", "SELECT count(simhash(body)) FROM bench_docs"),
            ("simhash(body, 1)", "SELECT count(simhash(body, 1)) FROM bench_docs"),
        ]:
            seconds, _ = best_of(3, lambda: conn.execute(sql).fetchall())
            rows.append((label, f"{nbytes / seconds / 1e6:8.1f} MB/s", seconds))
        read, _ = best_of(3, lambda: conn.execute("SELECT sum(cardinality(hashes)) FROM bench_hashes").fetchall())
        vote, _ = best_of(3, lambda: conn.execute("SELECT count(simhash(hashes)) FROM bench_hashes").fetchall())
        rows.append(("read arrays: sum(cardinality)", f"{n_hashes / read / 1e6:8.1f} M hashes/s", read))
        rows.append(("simhash(bigint[])", f"{n_hashes / vote / 1e6:8.1f} M hashes/s", vote))
        # (text, MB, clock, MB/s of version 1, of version 2 at each of SIMD_LEVELS, of version 3)
        versions = []
        clocks = {"wall": time.perf_counter}
        backend_cpu = cpu_clock(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        if backend_cpu is not None:
            clocks["backend CPU"] = backend_cpu
        for text, table in [("English", "bench_docs"), ("Chinese (manpages-zh)", "bench_zh_docs")]:
            if table not in corpora:
                versions.append((text, 0.0, "", None, [], None))
                continue
            size = conn.execute(f"SELECT sum(octet_length(body)) FROM {table}").fetchone()[0]
            for clock_name, clock in clocks.items():
                rates = []
                runs = [("simhash", "auto")] + [("simhash_v2", level) for level in SIMD_LEVELS] + [("simhash_v3", "auto")]
                for function, simd in runs:
                    conn.execute("SELECT set_config('simhash.debug_simd', %s, false)", (simd,))
                    sql = f"SELECT count({function}(body)) FROM {table}"
                    seconds, _ = best_of(3, lambda: conn.execute(sql).fetchall(), clock)
                    rates.append(size / seconds / 1e6)
                versions.append((text, size / 1e6, clock_name, rates[0], rates[1:-1], rates[-1]))
            conn.execute("RESET simhash.debug_simd")
        conn.execute("DROP TABLE IF EXISTS bench_docs, bench_zh_docs, bench_hashes")

    print(f"text: {nbytes / 1e6:.0f} MB of English in 20 kB documents; hashes: {n_hashes:,} in arrays of 100k")
    print(f"{'query':<32} {'throughput':>20} {'seconds':>9}")
    for label, rate, seconds in rows:
        print(f"{label:<32} {rate:>20} {seconds:9.3f}")
    print()
    print("text fingerprint by spec version, MB/s of UTF-8 (one backend); simhash_v2 by the most")
    print("vector code simhash.debug_simd allows it (a level this CPU lacks runs the best it has)")
    print("(version 3 runs version 2's vector code: its column is at the best level, beside version 2's and 1's)")
    heading = "".join(f" {'v2 ' + level:>11} {'/ v1':>5}" for level in SIMD_LEVELS)
    print(f"{'text':<22} {'MB':>4} {'clock':<12} {'simhash (v1)':>12}{heading} {'v3':>11} {'/ v2':>5} {'/ v1':>5}")
    for text, size, clock_name, v1, v2, v3 in versions:
        if v1 is None:
            print(f"{text:<22} {'-':>4}  missing: {CHINESE_MAN_PAGES} (Debian's manpages-zh)")
        else:
            columns = "".join(f" {rate:11.1f} {rate / v1:5.2f}" for rate in v2)
            columns += f" {v3:11.1f} {v3 / v2[0]:5.2f} {v3 / v1:5.2f}"
            print(f"{text:<22} {size:4.0f} {clock_name:<12} {v1:12.1f}{columns}")


if __name__ == "__main__":
    main()
