import os, sys, time, statistics
sys.path.insert(0, "/work/main/bench")
import numpy as np, psycopg
import bench_index as b
SIZES = [int(n) for n in os.environ.get("SIZES", "1000000").split(",")]
RADII = range(9)
Q = "/* {tag} */ SELECT id FROM docs WHERE fp <@ hamming_ball(%s::bigint::simhash64, {k})"

def build(conn, using, tables=None):
    conn.execute("DROP INDEX IF EXISTS docs_fp")
    if tables: conn.execute(f"SET simhash.mih_tables = {tables}")
    t0 = time.perf_counter()
    conn.execute(f"CREATE INDEX docs_fp ON docs USING {using} (fp)")
    secs = time.perf_counter() - t0
    conn.execute("ANALYZE docs"); b.prewarm(conn)
    size = conn.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    return secs, size / conn.execute("SELECT count(*) FROM docs").fetchone()[0]

def heap(conn, sql, centres):
    c = []
    for q in centres:
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, (q,)).fetchone()[0][0]["Plan"]
        c.append(plan["Plans"][0]["Actual Rows"] if plan["Node Type"] == "Bitmap Heap Scan" else float("nan"))
    return statistics.mean(c)

rng = np.random.default_rng(20240603)
with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
    conn.execute("SET enable_seqscan = off")
    for rows in SIZES:
        fps = b.fingerprints(rng, rows); b.load(conn, fps); centres = b.queries(rng, fps, 300)
        for using, tables in (("gin", None), ("simhash_mih", 2), ("simhash_mih", 3), ("simhash_mih", 4)):
            secs, per_row = build(conn, using, tables)
            tag = f"{using}{tables or ''}"
            print(f"{rows:,} rows {tag}: build {secs:.1f}s {per_row:.1f} B/row", flush=True)
            for k in RADII:
                sql = Q.format(tag=tag, k=k)
                t = b.latencies_ms(conn, sql, centres)
                print(f"  k={k} p50 {b.p(t,50):.3f} p99 {b.p(t,99):.3f} heap {heap(conn, sql, centres[:40]):.1f}", flush=True)
