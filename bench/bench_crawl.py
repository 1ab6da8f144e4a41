"""Benchmark of the crawl loop: many workers, each page "lock, check for a
near-duplicate in its domain, insert if new", on a table growing from
SIMHASH_BENCH_CRAWL_ROWS rows (default 1M).

Needs a server with the extension ($SIMHASH_DSN; `make bench` starts one).
Each worker is its own process with its own connection; 30 % of the pages it
sees are near-duplicates (1 to 3 bits) of stored pages, the rest new.  A page
is one transaction, sent in one round trip (psycopg pipeline mode):

    BEGIN; SELECT simhash_lock_near(fp, 3, domain);
    WITH existing AS (near-duplicate in the domain, LIMIT 1), inserted AS (INSERT ... WHERE none)
    SELECT ...; COMMIT

Printed, for W = 1, 2, 4, 8 workers: pages/s and per-page latency p50/p99,
for the recommended setup (GIN with fastupdate = off, the lock) side by side
with the same loop without the lock, with GIN's default fastupdate = on, with
synchronous_commit = on, and with the `bit_count` scan users run today; then
how the scoped query (domain = $1 AND hamming_within) does on a plain GIN
index on the fingerprint against a two-column GIN index (btree_gin).  With
pysimhash_sql.html importable, also the rate with HTML extraction in the loop.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import statistics
import time

import psycopg
from benchlib import quick_run

QUICK = quick_run(__doc__)
ROWS = int(os.environ.get("SIMHASH_BENCH_CRAWL_ROWS", 100_000 if QUICK else 1_000_000))
SECONDS = 2.0 if QUICK else 6.0
WORKERS = (1, 2, 4, 8)
DOMAINS = 2000
NEAR_SHARE = 0.3
K = 3

SCHEMA = """
DROP TABLE IF EXISTS crawl;
CREATE TABLE crawl (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    domain text NOT NULL, fingerprint simhash64 NOT NULL);
"""
LOCK = "SELECT simhash_lock_near(%(fp)s::text::simhash64, %(k)s, %(domain)s)"
CHECK_AND_INSERT = """
WITH existing AS (
    SELECT id FROM crawl WHERE domain = %(domain)s AND {near} LIMIT 1
), inserted AS (
    INSERT INTO crawl (domain, fingerprint)
    SELECT %(domain)s, %(fp)s::text::simhash64 WHERE NOT EXISTS (SELECT FROM existing)
    RETURNING id
)
SELECT id, false FROM existing UNION ALL SELECT id, true FROM inserted
"""
INDEXED = "hamming_within(fingerprint, %(fp)s::text::simhash64, %(k)s)"
BIT_COUNT = "bit_count((fingerprint::bigint # %(fp)s::text::simhash64::bigint)::bit(64)) <= %(k)s"


def domain_of(rng: random.Random) -> str:
    """Domains of very different sizes, as in a crawl (a few large sites)."""
    return f"site{min(int(rng.paretovariate(0.8)), DOMAINS)}.example"


def load(conn: psycopg.Connection, rows: int) -> list[tuple[str, int]]:
    """The starting table; returns a sample of stored (domain, fingerprint)."""
    rng = random.Random(7)
    conn.execute(SCHEMA)
    stored = [(domain_of(rng), rng.getrandbits(64)) for _ in range(rows)]
    with conn.cursor().copy("COPY crawl (domain, fingerprint) FROM STDIN") as copy:
        for domain, fp in stored:
            copy.write_row((domain, str(fp)))
    conn.execute("VACUUM ANALYZE crawl")
    return rng.sample(stored, 20_000)


def pages(seed: int, stored: list[tuple[str, int]]):
    """An endless stream of (domain, fingerprint): 30 % near-duplicates of stored pages."""
    rng = random.Random(seed)
    while True:
        if rng.random() < NEAR_SHARE:
            domain, fp = rng.choice(stored)
            for bit in rng.sample(range(64), rng.randint(1, K)):
                fp ^= 1 << bit
        else:
            domain, fp = domain_of(rng), rng.getrandbits(64)
        yield domain, fp


def worker(args) -> tuple[int, list[float], int]:
    dsn, seed, stored, lock, near, settings, extract, deadline = args
    latencies, inserted = [], 0
    check = CHECK_AND_INSERT.format(near=near)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for setting in settings:
            conn.execute(setting)
        for domain, fp in pages(seed, stored):
            if time.time() > deadline:
                break
            start = time.perf_counter()
            if extract is not None:
                fp = extract(fp)
            params = {"fp": str(fp), "domain": domain, "k": K}
            with conn.pipeline():
                conn.execute("BEGIN")
                if lock:
                    conn.execute(LOCK, params, prepare=True)
                cur = conn.execute(check, params, prepare=True)
                conn.execute("COMMIT")
            inserted += cur.fetchone()[1]
            latencies.append(time.perf_counter() - start)
    return len(latencies), latencies, inserted


def run(dsn: str, stored, workers: int, lock: bool = True, near: str = INDEXED, settings=(),
        seconds: float = SECONDS, extract=None) -> tuple[float, float, float]:
    """(pages/s, p50 ms, p99 ms) of `workers` processes for `seconds`."""
    deadline = time.time() + seconds
    jobs = [(dsn, 1000 * workers + i, stored, lock, near, settings, extract, deadline) for i in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        results = pool.map(worker, jobs)
    latencies = sorted(t for _, ts, _ in results for t in ts)
    count = sum(n for n, _, _ in results)
    p50 = statistics.median(latencies) * 1e3
    p99 = latencies[int(len(latencies) * 0.99)] * 1e3
    return count / seconds, p50, p99


def reset(conn: psycopg.Connection, rows: int) -> None:
    """Back to the starting rows, so that every setup starts from the same table."""
    conn.execute("DELETE FROM crawl WHERE id > %s", (rows,))
    conn.execute("VACUUM crawl")


def crawl_table(dsn: str, conn: psycopg.Connection, stored) -> None:
    setups = [
        ("GIN fastupdate=off, lock", "fastupdate = off", {}),
        ("GIN fastupdate=off, no lock", "fastupdate = off", {"lock": False}),
        ("GIN fastupdate=on, lock", "fastupdate = on", {}),
        ("GIN off, lock, sync commit", "fastupdate = off", {"settings": ["SET synchronous_commit = on"]}),
    ]
    print(f"crawl loop at {ROWS:,} rows, {int(NEAR_SHARE * 100)} % near-duplicates, k = {K}, "
          f"{SECONDS:.0f} s per cell (pages/s, p50 ms, p99 ms)")
    print(f"{'setup':30}" + "".join(f"{f'W = {w}':>24}" for w in WORKERS))
    for label, options, kwargs in setups:
        conn.execute("DROP INDEX IF EXISTS crawl_fp")
        conn.execute(f"CREATE INDEX crawl_fp ON crawl USING gin (fingerprint) WITH ({options})")
        cells = []
        for workers in WORKERS:
            rate, p50, p99 = run(dsn, stored, workers, **kwargs)
            cells.append(f"{rate:8,.0f} {p50:6.2f} {p99:6.2f}")
            reset(conn, ROWS)
        print(f"{label:30}" + "".join(f"{c:>24}" for c in cells))
    rate, p50, p99 = run(dsn, stored, 2, near=BIT_COUNT, seconds=min(SECONDS, 4.0))
    print(f"{'bit_count scan, lock':30}{f'{rate:8,.1f} {p50:6.1f} {p99:6.1f}':>48}  (W = 2)")
    reset(conn, ROWS)


def scoped_queries(conn: psycopg.Connection, stored) -> None:
    """domain = $1 AND hamming_within(...): one GIN index on the fingerprint
    (the domain checked on the few candidate rows) against a two-column GIN
    index (btree_gin), with light and with heavy cross-domain syndication."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    rng = random.Random(11)
    queries = [(d, fp ^ (1 << rng.randrange(64))) for d, fp in rng.sample(stored, 300)]
    sql = "SELECT id FROM crawl WHERE domain = %s AND hamming_within(fingerprint, %s::text::simhash64, 3) LIMIT 1"

    def latency(index: str) -> tuple[float, float]:
        conn.execute("DROP INDEX IF EXISTS crawl_fp")
        conn.execute(f"CREATE INDEX crawl_fp ON crawl USING gin ({index}) WITH (fastupdate = off)")
        times = []
        for domain, fp in queries:
            start = time.perf_counter()
            conn.execute(sql, (domain, str(fp)), prepare=True).fetchall()
            times.append(time.perf_counter() - start)
        times.sort()
        return statistics.median(times) * 1e3, times[int(len(times) * 0.99)] * 1e3

    print()
    print("scoped query, domain = $1 AND hamming_within(fp, $2, 3) (p50 / p99 ms)")
    print(f"{'data':34}{'GIN (fingerprint)':>20}{'GIN (domain, fingerprint)':>28}")
    for label, copies in (("crawl as loaded", 0), ("+ 200 articles on 500 domains", 500)):
        if copies:
            with conn.cursor().copy("COPY crawl (domain, fingerprint) FROM STDIN") as copy:
                for article in range(200):
                    fp = random.Random(article).getrandbits(64)
                    for copy_no in range(copies):
                        copy.write_row((f"site{copy_no}.example", str(fp ^ (1 << (copy_no % 64)))))
                        if copy_no == 0:
                            queries[article] = ("site1.example", fp)
            conn.execute("ANALYZE crawl")
        plain, two_column = latency("fingerprint"), latency("domain, fingerprint")
        print(f"{label:34}{f'{plain[0]:.3f} / {plain[1]:.3f}':>20}{f'{two_column[0]:.3f} / {two_column[1]:.3f}':>28}")
    reset(conn, ROWS)


class HtmlFingerprint:
    """The page fingerprint of a crawled HTML page (one of the corpus, picked
    by the given fingerprint), as the workers compute it; a module-level
    callable, so the worker processes can receive it."""

    def __init__(self, corpus: list[str]) -> None:
        self.corpus = corpus

    def __call__(self, fp: int) -> int:
        from pysimhash_sql.html import simhash_html

        return simhash_html(self.corpus[fp % len(self.corpus)]) or fp


def with_extraction(dsn: str, conn: psycopg.Connection, stored) -> None:
    try:
        from refetch_noise import fetches, load_pages  # the noisy crawl of bench_html.py
        import pysimhash_sql.html  # noqa: F401 - the [html] extra is installed
    except ImportError as exc:
        print(f"\n(no crawl loop with HTML extraction: {exc}; `make bench` installs what it needs)")
        return
    corpus = [fetch.html for fetch in fetches(load_pages(limit=200), refetches=2)]
    if not corpus:
        print("\n(no crawl loop with HTML extraction: no HTML pages found for the noisy crawl)")
        return
    conn.execute("DROP INDEX IF EXISTS crawl_fp")
    conn.execute("CREATE INDEX crawl_fp ON crawl USING gin (fingerprint) WITH (fastupdate = off)")

    print()
    print("crawl loop with HTML extraction (simhash_html) in the loop (pages/s, p50 ms, p99 ms)")
    for workers in (1, 2, 4):
        rate, p50, p99 = run(dsn, stored, workers, extract=HtmlFingerprint(corpus))
        print(f"W = {workers}: {rate:8,.0f} {p50:6.2f} {p99:6.2f}")
        reset(conn, ROWS)


def main() -> None:
    dsn = os.environ["SIMHASH_DSN"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        stored = load(conn, ROWS)
        crawl_table(dsn, conn, stored)
        scoped_queries(conn, stored)
        with_extraction(dsn, conn, stored)
        conn.execute("DROP TABLE crawl")


if __name__ == "__main__":
    main()
