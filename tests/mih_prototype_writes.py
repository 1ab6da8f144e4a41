import os, random, threading, psycopg
dsn = os.environ["SIMHASH_DSN"]
rng = random.Random(11)
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
    rows = {i: int(f) for i, f in conn.execute("SELECT id, fp::text FROM t WHERE fp IS NOT NULL").fetchall()}
    vals = list(rows.values()); bad = 0
    for i in range(120):
        k = rng.choice(list(range(11)) + [16, 40, 64])
        q = rng.choice(vals) if i % 2 else rng.getrandbits(64)
        got = sorted(r[0] for r in conn.execute("SELECT id FROM t WHERE fp <@ hamming_ball(%s::numeric::simhash64, %s)", (q, k)))
        want = sorted(i for i, f in rows.items() if bin(f ^ q).count("1") <= k)
        bad += got != want
    size = conn.execute("SELECT pg_relation_size('t_mih') / 8192").fetchone()[0]
    print(f"{label}: {len(rows)} rows, 120 queries, {bad} mismatches, {size} pages", flush=True)
    assert bad == 0
with psycopg.connect(dsn, autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
    conn.execute("DROP TABLE IF EXISTS t; CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash64)")
    conn.execute("INSERT INTO t (fp) SELECT unnest(%s::numeric[])::simhash64", (clustered(20000, rng),))
    conn.execute("SET simhash.mih_tables = 3")
    conn.execute("CREATE INDEX t_mih ON t USING simhash_mih (fp)")
    conn.execute("SET enable_seqscan = off")
    check(conn, "after build")
    for cycle in range(4):
        stop = threading.Event()
        def writer(seed):
            r = random.Random(seed)
            with psycopg.connect(dsn) as c:
                c.execute("SET simhash.mih_pending_limit = 700")
                vals = clustered(2500, r)
                for j in range(0, len(vals), 10):
                    with c.transaction():
                        c.execute("INSERT INTO t (fp) SELECT unnest(%s::numeric[])::simhash64", (vals[j:j+10],))
                        if j % 200 == 0:
                            c.execute("DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY random() LIMIT 5)")
        def reader():
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SET enable_seqscan = off")
                while not stop.is_set():
                    c.execute("SELECT count(*) FROM t WHERE fp <@ hamming_ball(%s::numeric::simhash64, 6)", (random.getrandbits(64),)).fetchone()
        def vacuumer():
            with psycopg.connect(dsn, autocommit=True) as c:
                while not stop.is_set():
                    c.execute("VACUUM t")
        ws = [threading.Thread(target=writer, args=(cycle * 10 + s,)) for s in range(4)]
        others = [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=vacuumer)]
        [t.start() for t in ws + others]; [t.join() for t in ws]; stop.set(); [t.join() for t in others]
        check(conn, f"cycle {cycle}: 4 writers (flush every 700), 2 readers, VACUUM looping")
        conn.execute("DELETE FROM t WHERE id % 4 = 0"); conn.execute("VACUUM t"); conn.execute("VACUUM t")
        check(conn, f"cycle {cycle}: after delete + 2 VACUUMs")
    conn.execute("REINDEX INDEX t_mih")
    check(conn, "after REINDEX")
