import os, random, psycopg
rng = random.Random(5)
fps = [rng.getrandbits(64) for _ in range(60000)]
for _ in range(2000):
    c = rng.getrandbits(64); fps.append(c)
    for _ in range(rng.randint(1, 6)):
        x = c
        for b in rng.sample(range(64), rng.randint(0, 12)): x ^= 1 << b
        fps.append(x)
fps += [0, 2**64 - 1, 1, 1 << 63]
with psycopg.connect(os.environ["SIMHASH_DSN"], autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
    conn.execute("DROP TABLE IF EXISTS t; CREATE TABLE t (id serial, fp simhash64)")
    with conn.cursor().copy("COPY t (fp) FROM STDIN") as cp:
        cp.write("\n".join(map(str, fps)) + "\n\\N\n")
    conn.execute("SET enable_seqscan = off")
    for tables in (1, 2, 3, 4, 5):
        conn.execute(f"SET simhash.mih_tables = {tables}")
        conn.execute("DROP INDEX IF EXISTS t_mih; CREATE INDEX t_mih ON t USING simhash_mih (fp)")
        bad = 0; n = 0
        for i in range(300):
            k = rng.choice(list(range(13)) + [20, 32, 63, 64]) if i % 10 else rng.randint(0, 64)
            q = rng.choice(fps) if i % 2 else rng.getrandbits(64)
            if i % 3 == 0:
                for b in rng.sample(range(64), rng.randint(0, 6)): q ^= 1 << b
            got = sorted(r[0] for r in conn.execute("SELECT id FROM t WHERE fp <@ hamming_ball(%s::numeric::simhash64, %s)", (q, k)))
            want = [i + 1 for i, f in enumerate(fps) if bin(f ^ q).count("1") <= k]
            n += 1
            if got != want:
                bad += 1
                if bad < 3: print("MISMATCH", tables, k, len(got), len(want))
        plan = conn.execute("EXPLAIN SELECT id FROM t WHERE fp <@ hamming_ball(5::simhash64, 3)").fetchall()
        print(f"tables={tables}: {n} queries, {bad} mismatches; plan: {plan[-1][0].strip()}", flush=True)
