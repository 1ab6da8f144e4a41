import os, random, threading, psycopg
dsn = os.environ["SIMHASH_DSN"]
rng = random.Random(9)
def clustered(n, rng):
    out = []
    while len(out) < n:
        c = rng.getrandbits(64); out.append(c)
        for _ in range(rng.randint(0, 4)):
            x = c
            for b in rng.sample(range(64), rng.randint(0, 10)): x ^= 1 << b
            out.append(x)
    return out[:n]
def check(conn, label):
    rows = dict(conn.execute("SELECT id, fp::text FROM t WHERE fp IS NOT NULL").fetchall())
    rows = {i: int(f) for i, f in rows.items()}
    vals = list(rows.values()); bad = 0
    for i in range(150):
        k = rng.choice(list(range(11)) + [16, 40, 64])
        q = rng.choice(vals) if i % 2 else rng.getrandbits(64)
        got = sorted(r[0] for r in conn.execute("SELECT id FROM t WHERE fp <@ hamming_ball(%s::numeric::simhash64, %s)", (q, k)))
        want = sorted(i for i, f in rows.items() if bin(f ^ q).count("1") <= k)
        bad += got != want
    print(f"{label}: {len(rows)} rows, 150 queries, {bad} mismatches", flush=True)
    return bad
with psycopg.connect(dsn, autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
    conn.execute("DROP TABLE IF EXISTS t; CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash64)")
    conn.execute("INSERT INTO t (fp) SELECT unnest(%s::numeric[])::simhash64", (clustered(20000, rng),))
    conn.execute("SET simhash.mih_tables = 3")
    conn.execute("CREATE INDEX t_mih ON t USING simhash_mih (fp)")
    conn.execute("SET enable_seqscan = off")
    check(conn, "after build")
    def writer(seed):
        r = random.Random(seed)
        with psycopg.connect(dsn) as c:
            vals = clustered(3000, r)
            for j in range(0, len(vals), 10):
                with c.transaction():
                    c.execute("INSERT INTO t (fp) SELECT unnest(%s::numeric[])::simhash64", (vals[j:j+10],))
    def reader():
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("SET enable_seqscan = off")
            for _ in range(300):
                c.execute("SELECT count(*) FROM t WHERE fp <@ hamming_ball(%s::numeric::simhash64, 5)", (random.getrandbits(64),)).fetchone()
    ts = [threading.Thread(target=writer, args=(s,)) for s in range(6)] + [threading.Thread(target=reader) for _ in range(2)]
    [t.start() for t in ts]; [t.join() for t in ts]
    check(conn, "after 6 concurrent writers")
    conn.execute("DELETE FROM t WHERE id % 3 = 0")
    conn.execute("VACUUM t")
    check(conn, "after delete + VACUUM")
    conn.execute("INSERT INTO t (fp) SELECT unnest(%s::numeric[])::simhash64", (clustered(8000, rng),))
    check(conn, "after reinserting into freed space")
    conn.execute("REINDEX INDEX t_mih")
    check(conn, "after REINDEX")
    print(conn.execute("SELECT pg_relation_size('t_mih')").fetchone())
