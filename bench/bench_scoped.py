"""Benchmark of scoped near-duplicate queries, `domain = $1 AND
hamming_within(fp, $2, k)`, where many sites share near-identical pages
(syndicated articles): the shapes an index can take today, side by side.

Needs a server with the extension available ($SIMHASH_DSN; `make bench` starts
one).  SIMHASH_BENCH_SCOPED_ROWS rows (default 1M; --quick 100k) in
SIMHASH_BENCH_DOMAINS domains; half of the rows are copies (0 to 2 bits apart)
of syndicated articles, each on SIMHASH_BENCH_SYNDICATION domains (default
200), the rest unique pages.  For k = 3 and 5: p50/p99 latency and the heap
rows each query visits, for a query whose fingerprint is a syndicated
article's (the hard case) and a unique page's, with each index shape:

- simhash_mih on the fingerprint (alone, and with a btree on the domain beside it),
- simhash_mih (domain, fingerprint): the domain as its scope column, folded
  into the runs' keys (docs/index.md, "Scope columns"),
- GIN simhash64_ops on the fingerprint,
- GIN (domain, fingerprint) with btree_gin (what `simhash_index(scope=...)` makes),

with each index's size, and the unscoped query through simhash_mih (fp) for
comparison (the issue's goal: the scoped query as fast as the unscoped one of
a page without copies elsewhere).  Each shape is built alone on the table, in
turn; a final round measures the two simhash_mih shapes again, side by side,
their queries interleaved one by one (both indexes present, each query
forced to its index), so that both see the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import psycopg

from bench_index import flips

SHAPES = {
    "simhash_mih (fp)": ["CREATE INDEX pages_fp ON pages USING simhash_mih (fp)"],
    "simhash_mih (fp) + btree (domain)": ["CREATE INDEX pages_fp ON pages USING simhash_mih (fp)",
                                          "CREATE INDEX pages_domain ON pages (domain)"],
    "simhash_mih (domain, fp)": ["CREATE INDEX pages_fp ON pages USING simhash_mih (domain, fp)"],
    "gin (fp)": ["CREATE INDEX pages_fp ON pages USING gin (fp) WITH (fastupdate = off)"],
    "gin (domain, fp)": ["CREATE EXTENSION IF NOT EXISTS btree_gin",
                         "CREATE INDEX pages_fp ON pages USING gin (domain, fp) WITH (fastupdate = off)"],
}
SCOPED = "SELECT id FROM pages WHERE domain = %s AND hamming_within(fp, %s::bigint::simhash64, {k})"
UNSCOPED = "SELECT id FROM pages WHERE hamming_within(fp, %s::bigint::simhash64, {k})"
RADII = (3, 5)
QUERIES = 200


def make_pages(rng: np.random.Generator, rows: int, domains: int, syndication: int) -> tuple[np.ndarray, np.ndarray]:
    """(domain, fingerprint) arrays: half syndicated copies, half unique pages."""
    copies = rows // 2
    articles = max(copies // syndication, 1)
    article = rng.integers(0, articles, size=copies)
    centres = rng.integers(0, 2**64, size=articles, dtype=np.uint64)
    bits = rng.integers(0, 3, size=copies)
    fps = centres[article].copy()
    for b in (1, 2):
        fps[bits == b] ^= flips(rng, int((bits == b).sum()), b)
    unique = rng.integers(0, 2**64, size=rows - copies, dtype=np.uint64)
    return (np.concatenate([rng.integers(0, domains, size=copies), rng.integers(0, domains, size=rows - copies)]),
            np.concatenate([fps, unique]))


def load(conn: psycopg.Connection, domain: np.ndarray, fps: np.ndarray) -> None:
    conn.execute("DROP TABLE IF EXISTS pages")
    conn.execute("CREATE TABLE pages (id serial PRIMARY KEY, domain text NOT NULL, fp simhash64 NOT NULL)")
    with conn.cursor().copy("COPY pages (domain, fp) FROM STDIN") as copy:
        for d, fp in zip(domain.tolist(), fps.tolist()):
            copy.write_row((f"site{d}.example", str(fp)))
    conn.execute("VACUUM ANALYZE pages")


def measure(conn: psycopg.Connection, sql: str, params: list[tuple]) -> tuple[float, float, float]:
    """(p50 ms, p99 ms, heap rows per query) of sql over params."""
    return measure_interleaved(conn, [(sql, params)])[0]


def measure_interleaved(conn: psycopg.Connection, cases: list[tuple[str, list[tuple]]]) -> list[tuple[float, float, float]]:
    """(p50 ms, p99 ms, heap rows per query) of each (sql, params) case, the
    cases' queries run in turn (query i of every case, then query i + 1), so
    that every case sees the same load."""
    for sql, params in cases:
        for p in params[:5]:
            conn.execute(sql, p, prepare=True).fetchall()
    times: list[list[float]] = [[] for _ in cases]
    for i in range(max(len(params) for _, params in cases)):
        for case, (sql, params) in enumerate(cases):
            start = time.perf_counter()
            conn.execute(sql, params[i % len(params)], prepare=True).fetchall()
            times[case].append((time.perf_counter() - start) * 1000)
    results = []
    for (sql, params), case_times in zip(cases, times):
        visited = [heap_rows(conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, p).fetchone()[0][0]["Plan"])
                   for p in params[:20]]
        case_times.sort()
        results.append((statistics.median(case_times), case_times[int(len(case_times) * 0.99) - 1],
                        statistics.mean(visited)))
    return results


def heap_rows(plan: dict) -> float:
    """Rows the heap scan node fetched (before its filter), summed over the plan."""
    own = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0) \
        if plan["Node Type"] in ("Bitmap Heap Scan", "Index Scan", "Seq Scan") else 0
    return own + sum(heap_rows(child) for child in plan.get("Plans", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k rows")
    args, _ = parser.parse_known_args()
    rows = int(os.environ.get("SIMHASH_BENCH_SCOPED_ROWS", 100_000 if args.quick else 1_000_000))
    domains = int(os.environ.get("SIMHASH_BENCH_DOMAINS", max(rows // 100, 10)))
    syndication = int(os.environ.get("SIMHASH_BENCH_SYNDICATION", 200))
    rng = np.random.default_rng(5)
    domain, fps = make_pages(rng, rows, domains, syndication)
    pick = rng.integers(0, rows // 2, size=QUERIES)
    unique_pick = rng.integers(rows // 2, rows, size=QUERIES)
    syndicated = [(f"site{domain[i]}.example", int(fps[i] ^ np.uint64(1)) - (1 << 64) * (int(fps[i] ^ np.uint64(1)) >= 1 << 63))
                  for i in pick]
    unique = [(f"site{domain[i]}.example", int(fps[i]) - (1 << 64) * (int(fps[i]) >= 1 << 63)) for i in unique_pick]
    with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        load(conn, domain, fps)
        print(f"{rows:,} rows, {domains:,} domains, syndicated articles on {syndication} domains each;"
              " p50 / p99 ms (heap rows per query)")
        print(f"{'index':<36} {'k':>2} {'syndicated page':>28} {'unique page':>28}   size")
        for shape, statements in SHAPES.items():
            conn.execute("DROP INDEX IF EXISTS pages_fp, pages_domain")
            for statement in statements:
                conn.execute(statement)
            conn.execute("ANALYZE pages")
            size = conn.execute("SELECT pg_relation_size('pages_fp')").fetchone()[0]
            print(f"{shape:<36} size {size / 2**20:.1f} MB, {size / rows:.1f} bytes/row")
            for k in RADII:
                cells = [measure(conn, SCOPED.format(k=k), params) for params in (syndicated, unique)]
                print(f"{shape:<36} {k:>2} " + " ".join(f"{a:>8.3f} / {b:>7.3f} ({c:>7.1f})" for a, b, c in cells))
            if shape == "simhash_mih (fp)":
                for k in RADII:
                    cells = [measure(conn, UNSCOPED.format(k=k), [(fp,) for _, fp in params])
                             for params in (syndicated, unique)]
                    print(f"{'  unscoped, same index':<36} {k:>2} "
                          + " ".join(f"{a:>8.3f} / {b:>7.3f} ({c:>7.1f})" for a, b, c in cells))
        side_by_side(conn, syndicated, unique)
        conn.execute("DROP TABLE pages, pages_scoped")


def side_by_side(conn: psycopg.Connection, syndicated: list[tuple], unique: list[tuple]) -> None:
    """simhash_mih (fp) on pages and simhash_mih (domain, fp) on a copy of it,
    their queries interleaved: the unscoped query and the scoped one through
    the plain index, the scoped one through the scoped index."""
    conn.execute("DROP INDEX IF EXISTS pages_fp, pages_domain")
    conn.execute("CREATE INDEX pages_fp ON pages USING simhash_mih (fp)")
    conn.execute("DROP TABLE IF EXISTS pages_scoped")
    conn.execute("CREATE TABLE pages_scoped AS TABLE pages")
    conn.execute("CREATE INDEX pages_scoped_fp ON pages_scoped USING simhash_mih (domain, fp)")
    conn.execute("VACUUM ANALYZE pages_scoped")
    print("\nSide by side, queries interleaved: p50 / p99 ms (heap rows per query)")
    print(f"{'query, index':<36} {'k':>2} {'syndicated page':>28} {'unique page':>28}")
    for k in RADII:
        cases = {
            "unscoped, simhash_mih (fp)": (UNSCOPED.format(k=k), True),
            "scoped, simhash_mih (fp)": (SCOPED.format(k=k), False),
            "scoped, simhash_mih (domain, fp)": (SCOPED.format(k=k).replace("FROM pages", "FROM pages_scoped"), False),
        }
        runs = [(sql, [(fp,) for _, fp in params] if unscoped else params)
                for sql, unscoped in cases.values() for params in (syndicated, unique)]
        measured = measure_interleaved(conn, runs)
        for i, name in enumerate(cases):
            print(f"{name:<36} {k:>2} " + " ".join(f"{a:>8.3f} / {b:>7.3f} ({c:>7.1f})"
                                                    for a, b, c in measured[2 * i:2 * i + 2]))


if __name__ == "__main__":
    main()
