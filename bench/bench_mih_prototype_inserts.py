import os, sys, time
sys.path.insert(0, "/work/main/bench")
import numpy as np, psycopg
import bench_index as b
rng = np.random.default_rng(7)
ROWS = int(os.environ.get("ROWS", "1000000")); NEW = 20000
Q = "/* {tag} */ SELECT id FROM docs WHERE fp <@ hamming_ball(%s::bigint::simhash64, {k})"
with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
    fps = b.fingerprints(rng, ROWS); new = b.signed(rng.integers(0, 2**64, size=NEW, dtype=np.uint64))
    centres = b.queries(rng, fps, 200)
    for tag, ddl in (("gin", "USING gin (fp) WITH (fastupdate = off)"), ("mih3", "USING simhash_mih (fp)")):
        b.load(conn, fps)
        conn.execute("SET simhash.mih_tables = 3; SET enable_seqscan = off")
        conn.execute(f"CREATE INDEX docs_fp ON docs {ddl}"); b.prewarm(conn)
        t0 = time.perf_counter()
        for v in new:
            conn.execute("INSERT INTO docs (fp) VALUES (%s::bigint::simhash64)", (v,), prepare=True)
        ins = NEW / (time.perf_counter() - t0)
        lat = []
        for k in (3, 5, 8):
            t = b.latencies_ms(conn, Q.format(tag=tag, k=k), centres)
            lat.append(f"k={k} p50 {b.p(t,50):.3f} p99 {b.p(t,99):.3f}")
        size = conn.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0] / (ROWS + NEW)
        print(f"{tag}: {ins:,.0f} single-row inserts/s; with {NEW:,} new rows: " + "; ".join(lat) + f"; {size:.1f} B/row", flush=True)
