"""Fingerprint throughput inside PostgreSQL (one backend, no parallel workers).

Prints MB/s of simhash(text) on English text and feature hashes/s of
simhash(bigint[]), next to md5(text) and sum(length(text)) in the same run as
yardsticks for this machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from benchlib import best_of, quick_run

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"


def english_documents(total_bytes: int, doc_bytes: int = 20_000) -> list[str]:
    """Slices of the license texts in examples/corpus (real English prose)."""
    text = " ".join(p.read_text(errors="replace") for p in sorted(CORPUS.glob("*.license.txt")))
    docs, offset = [], 0
    while sum(map(len, docs)) < total_bytes:
        start = offset % (len(text) - doc_bytes)
        docs.append(text[start : start + doc_bytes])
        offset += 7919
    return docs


def main() -> None:
    quick = quick_run(__doc__)
    text_mb = 20 if quick else 100
    n_hashes = 5_000_000 if quick else 20_000_000

    with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("DROP TABLE IF EXISTS bench_docs, bench_hashes")
        conn.execute("CREATE TABLE bench_docs (body text) WITH (toast_tuple_target = 8160)")
        conn.execute("ALTER TABLE bench_docs ALTER body SET STORAGE EXTERNAL")  # no decompression cost
        with conn.cursor().copy("COPY bench_docs FROM STDIN") as copy:
            for doc in english_documents(text_mb * 1_000_000):
                copy.write_row((doc,))
        conn.execute("VACUUM ANALYZE bench_docs")
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
        conn.execute("DROP TABLE bench_docs, bench_hashes")

    print(f"text: {nbytes / 1e6:.0f} MB of English in 20 kB documents; hashes: {n_hashes:,} in arrays of 100k")
    print(f"{'query':<32} {'throughput':>20} {'seconds':>9}")
    for label, rate, seconds in rows:
        print(f"{label:<32} {rate:>20} {seconds:9.3f}")


if __name__ == "__main__":
    main()
