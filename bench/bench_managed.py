"""Benchmark of the plain back end (docs/managed.md): exact near-duplicate
search on a database without the extension, as on a managed PostgreSQL.

Needs a server ($SIMHASH_DSN; `make bench` starts one); the plain tables live
in a database of their own made from template0 (no extension), the
extension's find_all runs in $SIMHASH_DSN's database.  Prints, at --rows
(default 1M; --rows 10000000 for 10M):

1. the candidate structures for the blocks, side by side on the same table
   (4 blocks of 16 bits, k <= 3): the package's GIN index on the key array,
   one btree expression index per block, stored generated columns with a
   btree each: build time, size, p50/p99 at k = 0..3;
2. the package's queries (simhash_index's default layout, 4 blocks; blocks 7
   / max_distance 6 for k = 4..6; blocks 9 / max_distance 8 for k = 7, 8)
   against the bit_count scan at k = 0..8: p50, p99, the ratio of the p50s
   (where it drops below 1, the scan wins); every query's ids checked
   against brute force (numpy);
3. find_all at k = 3: run_find_all on the plain back end (rows to the
   client, numpy in threads; each stage timed too, the search also in one
   thread) and the SQL block self-join, against
   the extension's simhash_find_all on the same rows (best of 3 runs each);
4. insert_unless_near_duplicate with 8 writers on the plain back end: inserts
   per second and the near-duplicate pairs stored (must be 0);
5. scoped queries (site = s AND within k = 3) with few large and many small
   scopes: simhash_index(..., scope=["site"]) (GIN on the site and the key
   array, btree_gin) against the unscoped index with the site as a filter.

Options: --rows N, --queries N (per radius for the indexes, default 300),
--scan-queries N (per radius for the scan, default 30), --quick (100k rows),
--tables 3 (only the tables named, e.g. find_all alone).
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time

import numpy as np
import psycopg
from bench_index import fingerprints
from sqlalchemy import BigInteger, Column, MetaData, Table, Text, bindparam, create_engine, select
from sqlalchemy.orm import Session
from sqlalchemy.schema import CreateIndex

from pysimhash_sql import plain
from pysimhash_sql._find_all import extension_block_masks, id_pairs, popcount
from pysimhash_sql._cpus import usable_cpus
from pysimhash_sql.backends import PLAIN
from pysimhash_sql.dedupe import insert_unless_near_duplicate
from pysimhash_sql.queries import _stream_rows, run_find_all
from pysimhash_sql.sqlalchemy import SimHash64, register_simhash, simhash_index

DATABASE = "bench_managed"
SCAN = "SELECT id FROM docs WHERE bit_count((fp # %(q)s::bigint)::bit(64)) <= {k}"
LAYOUTS = ({}, {"blocks": 7, "max_distance": 6}, {"blocks": 9, "max_distance": 8})  # for k <= 3, 6, 8
RADII = range(9)
WRITERS, WRITES, CLUSTERS = 8, 150, 200
SELF_JOIN_TIMEOUT = "120s"
FIND_ALL_RUNS = 3
SCOPED_SITES = (10, 10_000)  # 100,000 and 100 rows a site at 1M rows


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--scan-queries", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", default="1,2,3,4,5", help="which tables to print, e.g. 3 for find_all alone")
    args, _ = parser.parse_known_args()
    args.rows = 100_000 if args.quick else int(args.rows.split(",")[0])
    args.tables = {int(table) for table in args.tables.split(",")}
    return args


def plain_database(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE} TEMPLATE template0")
    return psycopg.conninfo.make_conninfo(dsn, dbname=DATABASE)


def load(conn: psycopg.Connection, table: str, type_: str, values: list) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, fp {type_} NOT NULL)")
    with conn.cursor().copy(f"COPY {table} (id, fp) FROM STDIN") as copy:
        for start in range(0, len(values), 1_000_000):
            chunk = values[start:start + 1_000_000]
            copy.write("".join(f"{start + i}\t{v}\n" for i, v in enumerate(chunk)))
    conn.execute(f"VACUUM ANALYZE {table}")


def timed(conn: psycopg.Connection, sql: str) -> float:
    start = time.perf_counter()
    conn.execute(sql)
    return time.perf_counter() - start


def latencies(conn, sql: str, queries: list[int], k: int, fps: np.ndarray, params=None) -> list[float]:
    """Milliseconds of each query, its ids checked against brute force."""
    times = []
    for q in queries:
        start = time.perf_counter()
        ids = sorted(row[0] for row in conn.execute(sql, {**(params or {}), "q": plain.to_signed(q)}, prepare=True))
        times.append((time.perf_counter() - start) * 1000)
        expected = np.flatnonzero(popcount(fps ^ np.uint64(q)) <= k).tolist()
        assert ids == expected, f"k = {k}: {len(ids)} ids, brute force {len(expected)}"
    return times


def p(values: list[float], q: int) -> float:
    return float(np.percentile(values, q))


def package_sql(engine, index_options: dict, k: int) -> tuple[str, str, dict]:
    """The package's CREATE INDEX and radius query for the table docs, as the
    plain back end compiles them."""
    table = Table("docs", MetaData(), Column("id", BigInteger), Column("fp", SimHash64),
                  simhash_index("docs_fp_idx", "fp", **index_options))
    ddl = str(CreateIndex(list(table.indexes)[0]).compile(engine))
    query = select(table.c.id).where(table.c.fp.within(bindparam("q", type_=SimHash64()), k)).compile(engine)
    return ddl, str(query), {name: value for name, value in query.params.items() if name != "q"}


def block_sql(layout: plain.PlainLayout) -> list[tuple[str, int, int]]:
    """(expression, shift, mask) of each block: ((fp >> shift) & mask)."""
    blocks = []
    for mask in extension_block_masks(layout.blocks):
        shift = (mask & -mask).bit_length() - 1
        width = mask.bit_count()
        blocks.append((f"((fp >> {shift}) & {(1 << width) - 1})", shift, (1 << width) - 1))
    return blocks


def structures(conn, engine, fps, queries) -> None:
    """Table 1: the GIN key array, btree expression indexes, generated columns."""
    layout = plain.PlainLayout()
    blocks = block_sql(layout)
    rows = []
    ddl, gin_query, params = package_sql(engine, {}, 0)

    def measure(name: str, build: list[str], drop: list[str], query_for_k, index_names: list[str]) -> None:
        seconds = sum(timed(conn, sql) for sql in build)
        conn.execute("VACUUM ANALYZE docs")
        size = sum(conn.execute("SELECT pg_relation_size(%s)", (n,)).fetchone()[0] for n in index_names)
        table_size = conn.execute("SELECT pg_table_size('docs')").fetchone()[0]
        cells = [name, f"{seconds:7.1f}s", f"{size / 2**20:7.0f}MB", f"{table_size / 2**20:6.0f}MB"]
        for k in range(layout.max_distance + 1):
            sql, extra = query_for_k(k)
            times = latencies(conn, sql, queries, k, fps, extra)
            cells.append(f"{p(times, 50):6.3f}/{p(times, 99):6.3f}")
        rows.append(cells)
        for sql in drop:
            conn.execute(sql)

    def gin_for_k(k):
        _, sql, extra = package_sql(engine, {}, k)
        return sql, extra

    measure("GIN on the key array (package)", [ddl], ["DROP INDEX docs_fp_idx"], gin_for_k, ["docs_fp_idx"])

    def or_query(k, left):
        ors = " OR ".join(f"{left(i, e)} = ((%(q)s::bigint >> {s}) & {m})" for i, (e, s, m) in enumerate(blocks))
        return f"SELECT id FROM docs WHERE ({ors}) AND bit_count((fp # %(q)s::bigint)::bit(64)) <= {k}", {}

    measure("btree expression index per block",
            [f"CREATE INDEX docs_b{i} ON docs ({e})" for i, (e, _, _) in enumerate(blocks)],
            [f"DROP INDEX docs_b{i}" for i in range(len(blocks))],
            lambda k: or_query(k, lambda i, e: e), [f"docs_b{i}" for i in range(len(blocks))])
    add = ", ".join(f"ADD COLUMN b{i} integer GENERATED ALWAYS AS ({e}) STORED" for i, (e, _, _) in enumerate(blocks))
    measure("stored generated columns + btree",
            [f"ALTER TABLE docs {add}", *(f"CREATE INDEX docs_b{i} ON docs (b{i})" for i in range(len(blocks)))],
            [f"ALTER TABLE docs {', '.join(f'DROP COLUMN b{i}' for i in range(len(blocks)))}", "VACUUM FULL docs"],
            lambda k: or_query(k, lambda i, e: f"b{i}"), [f"docs_b{i}" for i in range(len(blocks))])
    print(f"Table 1: candidate structures, {len(fps):,} rows, 4 blocks of 16 bits; "
          f"p50/p99 ms of {len(queries)} queries per k (each checked against brute force)")
    head = ["structure", "build", "index", "table", *(f"k={k}" for k in range(layout.max_distance + 1))]
    print(" | ".join(head))
    for cells in rows:
        print(" | ".join(cells))
    print()


def against_scan(conn, engine, fps, queries, scan_queries) -> None:
    """Table 2: the package's queries against the bit_count scan, k = 0..8."""
    results = {}
    for options in LAYOUTS:
        ddl, _, _ = package_sql(engine, options, 0)
        conn.execute("DROP INDEX IF EXISTS docs_fp_idx")
        build = timed(conn, ddl)
        conn.execute("ANALYZE docs")
        layout = plain.PlainLayout.from_parameters(**options)
        size = conn.execute("SELECT pg_relation_size('docs_fp_idx')").fetchone()[0]
        print(f"  index blocks {layout.blocks}, max_distance {layout.max_distance}: "
              f"build {build:.1f}s, {size / 2**20:.0f} MB")
        for k in RADII:
            if layout.answers(k) and k not in results:
                _, sql, extra = package_sql(engine, options, k)
                results[k] = (f"{layout.blocks}/{layout.max_distance}", latencies(conn, sql, queries, k, fps, extra))
    conn.execute("DROP INDEX IF EXISTS docs_fp_idx")
    print(f"Table 2: the package's radius query against the bit_count scan, {len(fps):,} rows; "
          f"{len(queries)} indexed and {scan_queries} scan queries per k, all checked against brute force")
    print("k | index (blocks/k) | index p50 | index p99 | scan p50 | scan p99 | scan / index (p50)")
    for k in RADII:
        scan = latencies(conn, SCAN.format(k=k), queries[:scan_queries], k, fps)
        layout, index = results[k]
        print(f"{k} | {layout} | {p(index, 50):8.3f} | {p(index, 99):8.3f} | {p(scan, 50):8.1f} | "
              f"{p(scan, 99):8.1f} | {p(scan, 50) / p(index, 50):8.0f}x")
    print()


def best_of(runs: int, work) -> tuple[float, object]:
    """The fastest of ``runs`` calls of work() (seconds) and its result."""
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def find_all_side_by_side(plain_conn, engine, dsn, fps) -> None:
    """Table 3: find_all at k = 3, plain (numpy; SQL self-join) and the
    extension's, each the best of FIND_ALL_RUNS; the plain run's two stages."""
    with psycopg.connect(dsn, autocommit=True) as ext:
        ext.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        load(ext, "docs_ext", "simhash64", fps.tolist())
        ext_seconds, ext_pairs = best_of(FIND_ALL_RUNS, lambda: ext.execute(
            "SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs_ext', 3)").fetchone()[0])
        ext.execute("DROP TABLE docs_ext")
    table = Table("docs", MetaData(), Column("id", BigInteger), Column("fp", SimHash64))
    rows = select(table.c.id, table.c.fp)
    with Session(engine) as session:
        plain_seconds, pairs = best_of(FIND_ALL_RUNS, lambda: run_find_all(session, rows, 3))
        stream_seconds, (ids, values) = best_of(FIND_ALL_RUNS, lambda: _stream_rows(session, rows))
    search_seconds, searched = best_of(FIND_ALL_RUNS, lambda: id_pairs(ids, values, 3))
    one_thread_seconds, one_thread = best_of(FIND_ALL_RUNS, lambda: id_pairs(ids, values, 3, threads=1))
    assert len(pairs) == len(searched) == len(one_thread) == ext_pairs, (len(pairs), ext_pairs)
    joins = " UNION ".join(
        f"SELECT a.id, b.id FROM docs a JOIN docs b ON {e.replace('fp', 'a.fp')} = {e.replace('fp', 'b.fp')} "
        f"AND a.id < b.id AND bit_count((a.fp # b.fp)::bit(64)) <= 3" for e, _, _ in block_sql(plain.PlainLayout()))
    plain_conn.execute(f"SET statement_timeout = '{SELF_JOIN_TIMEOUT}'")
    try:
        start = time.perf_counter()
        joined = plain_conn.execute(f"SELECT count(*) FROM ({joins}) pairs").fetchone()[0]
        join_cell = f"{time.perf_counter() - start:.2f}s ({joined:,} pairs)"
        assert joined == ext_pairs
    except psycopg.errors.QueryCanceled:
        join_cell = f"> {SELF_JOIN_TIMEOUT}"
    plain_conn.execute("RESET statement_timeout")
    print(f"Table 3: find_all k = 3, {len(fps):,} rows ({ext_pairs:,} pairs)")
    print(f"(best of {FIND_ALL_RUNS} runs each)")
    print("extension simhash_find_all | plain run_find_all | of which rows to the client | of which numpy search "
          f"({usable_cpus()} threads) | the search in 1 thread | plain SQL block self-join | plain / ext")
    print(f"{ext_seconds:.2f}s | {plain_seconds:.2f}s | {stream_seconds:.2f}s | {search_seconds:.2f}s | "
          f"{one_thread_seconds:.2f}s | {join_cell} | {plain_seconds / ext_seconds:.1f}x")
    print()


def dedupe(engine, fps) -> None:
    """Table 4: 8 writers of near copies of shared clusters, on the 1M-row table."""
    table = Table("docs", MetaData(), Column("id", BigInteger, primary_key=True), Column("fp", SimHash64),
                  simhash_index("docs_fp_idx", "fp"))
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP INDEX IF EXISTS docs_fp_idx")
        list(table.indexes)[0].create(conn)
        conn.exec_driver_sql("CREATE SEQUENCE IF NOT EXISTS docs_new START 100000000000")
        conn.exec_driver_sql("ALTER TABLE docs ALTER id SET DEFAULT nextval('docs_new')")
    centres = [random.Random(c).getrandbits(64) for c in range(CLUSTERS)]
    inserted = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(WRITES):
            fp = rng.choice(centres) ^ (1 << rng.randrange(64))
            with Session(engine) as session, session.begin():
                if insert_unless_near_duplicate(session, table, {"fp": fp}, fingerprint="fp").inserted:
                    inserted.append(fp)

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(WRITERS)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    new = np.array(inserted, np.uint64)
    pairs = sum(int((popcount(new ^ value) <= 3).sum()) - 1 for value in new)
    pairs += sum(int((popcount(fps ^ value) <= 3).sum()) for value in new)
    print(f"Table 4: insert_unless_near_duplicate, {WRITERS} writers x {WRITES} near copies of {CLUSTERS} "
          f"clusters into {len(fps):,} rows (plain back end, k = 3)")
    print("calls/s | rows inserted | near-duplicate pairs stored")
    print(f"{WRITERS * WRITES / seconds:.0f} | {len(inserted)} | {pairs}")
    assert pairs == 0 and len(inserted) <= CLUSTERS


def scoped(conn, engine, fps, queries) -> None:
    """Table 5: scoped radius queries, the scoped plain index against the
    unscoped one with the site as a filter, each checked against brute force."""
    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {plain.SCOPE_EXTENSION}")
    conn.execute("DROP INDEX IF EXISTS docs_fp_idx")
    rows = []
    for sites in SCOPED_SITES:
        conn.execute("ALTER TABLE docs DROP COLUMN IF EXISTS site, ADD COLUMN site text")
        conn.execute(f"UPDATE docs SET site = 's' || (hashint8(id) & 2147483647) % {sites}")
        conn.execute("VACUUM FULL docs")
        site_of = np.array([int(h) % sites for (h,) in conn.execute(
            "SELECT hashint8(id) & 2147483647 FROM docs ORDER BY id")], np.int64)
        cells = [f"{sites:,} sites"]
        for scope in ([], ["site"]):
            table = Table("docs", MetaData(), Column("id", BigInteger), Column("site", Text), Column("fp", SimHash64),
                          simhash_index("docs_fp_idx", "fp", scope=scope))
            ddl = str(CreateIndex(list(table.indexes)[0]).compile(engine))
            build = timed(conn, ddl)
            conn.execute("VACUUM ANALYZE docs")
            size = conn.execute("SELECT pg_relation_size('docs_fp_idx')").fetchone()[0]
            query = select(table.c.id).where(table.c.site == bindparam("site"),
                                             table.c.fp.within(bindparam("q", type_=SimHash64()), 3)).compile(engine)
            sql = str(query).replace("%(site)s", "%(site)s::text")
            extra = {name: value for name, value in query.params.items() if name not in ("q", "site")}
            times = []
            for n, q in enumerate(queries):
                site = n % sites
                start = time.perf_counter()
                ids = sorted(r[0] for r in conn.execute(sql, {**extra, "q": plain.to_signed(q), "site": f"s{site}"}))
                times.append((time.perf_counter() - start) * 1000)
                expected = np.flatnonzero((popcount(fps ^ np.uint64(q)) <= 3) & (site_of == site)).tolist()
                assert ids == expected, (sites, scope, len(ids), len(expected))
            cells.append(f"{build:.1f}s, {size / 2**20:.0f} MB, {p(times, 50):.3f}/{p(times, 99):.3f} ms")
            conn.execute("DROP INDEX docs_fp_idx")
        rows.append(cells)
    conn.execute("ALTER TABLE docs DROP COLUMN site")
    print(f"Table 5: scoped radius queries (site = s AND within k = 3), {len(fps):,} rows, {len(queries)} queries; "
          "build, index size, p50/p99")
    print("scopes | unscoped index, site as a filter | simhash_index(..., scope=['site']): GIN (site, keys)")
    for cells in rows:
        print(" | ".join(cells))
    print()


def main() -> None:
    args = arguments()
    dsn = os.environ["SIMHASH_DSN"]
    plain_dsn = plain_database(dsn)
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(plain_dsn), pool_size=WRITERS + 2)
    register_simhash(engine, backend=PLAIN)
    rng = np.random.default_rng(31)
    fps = fingerprints(rng, args.rows)
    queries_rng = random.Random(31)
    stored = fps.tolist()
    queries = [queries_rng.choice(stored) ^ (1 << queries_rng.randrange(64)) if i % 2 else queries_rng.getrandbits(64)
               for i in range(args.queries)]
    with psycopg.connect(plain_dsn, autocommit=True) as conn:
        load(conn, "docs", "bigint", fps.view(np.int64).tolist())
        if 1 in args.tables:
            structures(conn, engine, fps, queries)
        if 2 in args.tables:
            against_scan(conn, engine, fps, queries, args.scan_queries)
        if 3 in args.tables:
            find_all_side_by_side(conn, engine, dsn, fps)
        if 5 in args.tables:
            scoped(conn, engine, fps, queries)
    if 4 in args.tables:
        dedupe(engine, fps)
    engine.dispose()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
