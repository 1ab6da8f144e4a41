"""The GIN operator class simhash64_ops: index results equal a sequential scan.

Every comparison runs the same queries twice on a real server, once with the
sequential scan disabled (the plan is checked to use the index) and once with
index and bitmap scans disabled, and compares the matching ids row for row.
"""

from __future__ import annotations

import os
import random
import threading
import time

import numpy as np
import psycopg
import pytest

from pysimhash_sql.throwaway import ThrowawayServer
from toolbox import GIN, INDEX_KINDS, MIH, brute_force_within, copy_rows, flip_random
from toolbox.data import planted_fingerprints, random_queries
from toolbox.mih_builds import build
from toolbox.mih_merges import mih_stats, wait_for_merges
from toolbox.workers import run_together

N_RANDOM = 12_000

# One row per query: how many rows matched and a digest of their sorted ids.
BATCH_SQL = """
SELECT q.qid, count(d.id), md5(coalesce(string_agg(d.id::text, ',' ORDER BY d.id), ''))
FROM queries q LEFT JOIN LATERAL (
    SELECT id FROM docs WHERE {condition}
) d ON true
GROUP BY q.qid ORDER BY q.qid
"""
FUNCTION_FORM = "hamming_within(fp, q.center, q.k)"
OPERATOR_FORM = "fp <@ hamming_ball(q.center, q.k)"

INDEX_ONLY = "SET enable_seqscan = off; SET enable_indexscan = on; SET enable_bitmapscan = on"
SEQSCAN_ONLY = "SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off"


def load_docs(conn: psycopg.Connection, fps: list[int | None], index_options: str = "", kind: str = GIN) -> None:
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    copy_rows(conn, "COPY docs FROM STDIN", enumerate(fps))
    conn.execute(f"CREATE INDEX docs_fp ON docs USING {kind.format(options=index_options)}")
    conn.execute("ANALYZE docs")


def load_queries(conn: psycopg.Connection, queries: list[tuple[int, int]]) -> None:
    conn.execute("DROP TABLE IF EXISTS queries")
    conn.execute("CREATE TABLE queries (qid int PRIMARY KEY, center simhash64, k int)")
    copy_rows(conn, "COPY queries FROM STDIN", ((i, c, k) for i, (c, k) in enumerate(queries)))
    conn.execute("ANALYZE queries")


def batch(conn: psycopg.Connection, planner: str, condition: str = FUNCTION_FORM) -> list[tuple]:
    conn.execute(planner)
    sql = BATCH_SQL.format(condition=condition)
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql).fetchall())
    if planner == INDEX_ONLY:
        assert "Bitmap Index Scan on docs_fp" in plan, plan
    else:  # the brute-force side: no index at all
        assert "Seq Scan on docs" in plan and "Index" not in plan, plan
    # never prepared (psycopg prepares a query run 5 times): a prepared statement's plan
    # is kept whatever the planner settings say later, so both sides would run one plan
    rows = conn.execute(sql, prepare=False).fetchall()
    conn.execute("RESET ALL")
    return rows


def assert_index_matches_seqscan(conn: psycopg.Connection, condition: str = FUNCTION_FORM) -> None:
    expected = batch(conn, SEQSCAN_ONLY, condition)
    assert batch(conn, INDEX_ONLY, condition) == expected


@pytest.fixture(scope="module", params=list(INDEX_KINDS))
def planted(postgresql_proc, request):
    """A database with the planted data under each kind of index (its default
    options), and its queries."""
    rng = random.Random(20240603)
    fps = planted_fingerprints(rng, N_RANDOM)
    queries = random_queries(rng, fps, 2500)
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user)
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f"CREATE DATABASE index_planted_{request.param}")
    with psycopg.connect(dbname=f"index_planted_{request.param}", autocommit=True, **server) as conn:
        conn.execute("CREATE EXTENSION simhash")
        load_docs(conn, fps, kind=INDEX_KINDS[request.param])
        load_queries(conn, queries)
        yield conn, fps, queries, batch(conn, SEQSCAN_ONLY)


def test_thousands_of_queries_match_the_sequential_scan(planted) -> None:
    conn, _, queries, expected = planted
    assert len(expected) == len(queries)
    assert {k for _, k in queries} >= set(range(0, 25))  # inside and far beyond max_distance
    assert batch(conn, INDEX_ONLY) == expected
    assert sum(1 for _, count, _ in expected if count > 1) > 100  # the clusters are found


def test_operator_form_matches_the_sequential_scan(planted) -> None:
    conn, _, _, expected = planted
    assert batch(conn, INDEX_ONLY, OPERATOR_FORM) == expected


def test_index_results_equal_brute_force_within(planted) -> None:
    conn, fps, queries, _ = planted
    conn.execute(INDEX_ONLY)
    for centre, k in queries[:150]:
        got = conn.execute(
            "SELECT id FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s) ORDER BY id",
            (str(centre), k),
        ).fetchall()
        assert [r[0] for r in got] == brute_force_within(fps, centre, k), (centre, k)
    conn.execute("RESET ALL")


def test_generic_plan_with_the_radius_as_a_parameter_is_exact(planted) -> None:
    """A prepared statement's generic plan uses the index for every k, including
    k beyond max_distance (a whole-index scan), and stays exact."""
    conn, fps, queries, _ = planted
    conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.execute(
        "PREPARE within(simhash64, int) AS"
        " SELECT id FROM docs WHERE hamming_within(fp, $1, $2) ORDER BY id"
    )
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN EXECUTE within('0', 3)").fetchall())
    assert "Bitmap Index Scan on docs_fp" in plan and "$2" in plan, plan
    for centre, k in queries[:150]:
        got = conn.execute(f"EXECUTE within('{centre}', {k})").fetchall()  # ints: safe literals
        assert [r[0] for r in got] == brute_force_within(fps, centre, k), (centre, k)
    conn.execute("DEALLOCATE within")
    conn.execute("RESET ALL")


# One bit in each of the 5 blocks of the default layout (13/13/13/13/12 bits,
# whichever blocks are the wider ones).
BIT_PER_BLOCK = (5, 18, 31, 44, 58)


def test_index_drops_rows_agreeing_on_too_few_blocks(db: psycopg.Connection) -> None:
    """Around q = 0, rows differing in d blocks (one bit each, d = 0..5) and rows
    with two bits flipped in one block: for radius k the index hands the heap
    exactly the rows differing in at most k blocks, and the recheck keeps the
    rows within k bits."""
    rows = [sum(1 << b for b in BIT_PER_BLOCK[:d]) for d in range(6) for _ in range(3)]
    two_in_one_block = [(1 << 5) | (1 << 6)] * 4
    db.execute("CREATE TABLE docs (id serial PRIMARY KEY, fp simhash64)")
    copy_rows(db, "COPY docs (fp) FROM STDIN", [(fp,) for fp in rows + two_in_one_block])
    db.execute("CREATE INDEX docs_fp ON docs USING gin (fp)")
    db.execute("SET enable_seqscan = off")
    for k in range(5):
        plan = db.execute(
            f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM docs WHERE hamming_within(fp, '0', {k})"
        ).fetchone()[0][0]["Plan"]
        differing_blocks = 3 * (k + 1) + (4 if k >= 1 else 0)
        within = 3 * (k + 1) + (4 if k >= 2 else 0)
        assert plan["Plans"][0]["Node Type"] == "Bitmap Index Scan", plan
        assert (plan["Plans"][0]["Actual Rows"], plan["Actual Rows"]) == (differing_blocks, within), k
    db.execute("RESET ALL")


def test_nearest_is_exact(planted) -> None:
    conn, fps, queries, _ = planted
    for centre, _ in queries[:60]:
        for n in (1, 5, 20):
            got = conn.execute(
                "SELECT fp <~> %s::text::simhash64 FROM hamming_nearest(NULL::docs, 'fp', %s::text::simhash64, %s)",
                (str(centre), str(centre), n),
            ).fetchall()
            values = np.array([fp for fp in fps if fp is not None], dtype=np.uint64)
            nearest = sorted(np.bitwise_count(values ^ np.uint64(centre)).tolist())[:n]
            assert sorted(r[0] for r in got) == nearest


@pytest.mark.parametrize(
    "options", ["(blocks = 1, max_distance = 0)", "(blocks = 2, max_distance = 1)",
                "(blocks = 3, max_distance = 2)", "(blocks = 4, max_distance = 3)",
                "(blocks = 6, max_distance = 3)", "(blocks = 6, max_distance = 5)",
                "(blocks = 8, max_distance = 7)", "(blocks = 10, max_distance = 4)",
                "(blocks = 16, max_distance = 15)"]
)
def test_other_layouts_match_the_sequential_scan(db: psycopg.Connection, options: str) -> None:
    rng = random.Random(options)
    fps = planted_fingerprints(rng, 3000)
    load_docs(db, fps, options)
    load_queries(db, random_queries(rng, fps, 400))
    assert_index_matches_seqscan(db)


def clustered_around_queries(rng: random.Random, n_random: int, n_queries: int) -> tuple[list[int], list[tuple[int, int]]]:
    """Random rows plus, around each query centre, rows at every distance 0..12
    (bits flipped anywhere, so some blocks differ in several bits); queries at
    k = 0..12."""
    fps = [rng.getrandbits(64) for _ in range(n_random)]
    queries = []
    for _ in range(n_queries):
        centre = rng.getrandbits(64)
        fps += [flip_random(centre, d, rng) for d in range(13) for _ in range(2)]
        queries.append((centre, rng.randint(0, 12)))
    rng.shuffle(fps)
    return fps, queries


@pytest.mark.parametrize("max_probes", [1, 5, 40, 512, 8192])
@pytest.mark.parametrize("blocks", [2, 3, 4, 5, 6, 8])
def test_probes_at_every_radius_equal_brute_force_within(db: psycopg.Connection, blocks: int, max_probes: int) -> None:
    """Single-block layouts answer every radius by probing near values of each
    block (as many probes as simhash.index_max_probes allows, else a whole-index
    scan): the index returns exactly the brute-force matches."""
    rng = random.Random(blocks * 10_000 + max_probes)
    fps, queries = clustered_around_queries(rng, 2000, 60)
    load_docs(db, fps, f"(blocks = {blocks}, max_distance = {blocks - 1})")
    load_queries(db, queries)
    db.execute(f"SET simhash.index_max_probes = {max_probes}")
    rows = batch(db, INDEX_ONLY)
    db.execute("RESET ALL")
    for (qid, count, _), (centre, k) in zip(rows, queries):
        expected = brute_force_within(fps, centre, k)
        got = [r[0] for r in db.execute(
            "SELECT id FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s) ORDER BY id",
            (str(centre), k))]
        assert got == expected and count == len(expected), (qid, centre, k)


@pytest.mark.parametrize("runs", [1, 2, 3, 4, 5, 8])
def test_mih_runs_at_every_radius_equal_brute_force_within(db: psycopg.Connection, runs: int) -> None:
    """simhash_mih with 1 to 8 runs answers every radius by probes (or, past
    the probe limit, by reading a run whole): exactly the brute-force matches."""
    rng = random.Random(runs)
    fps, queries = clustered_around_queries(rng, 2000, 60)
    queries += [(centre, k) for (centre, _), k in zip(queries[:20], [13, 16, 20, 24, 32, 40, 48, 56, 63, 64] * 2)]
    load_docs(db, fps, f"WITH (runs = {runs})", MIH)
    load_queries(db, queries)
    rows = batch(db, INDEX_ONLY)
    for (qid, count, _), (centre, k) in zip(rows, queries):
        assert count == len(brute_force_within(fps, centre, k)), (qid, centre, k)
    assert_index_matches_seqscan(db)


def test_default_index_is_offered_for_radii_its_probes_reach(db: psycopg.Connection) -> None:
    """The planner offers the default index for k = 0..8 (probes), not when
    simhash.index_max_probes leaves only the blocks themselves (k > 4: a
    whole-index scan, so a sequential scan instead)."""
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    db.execute("CREATE INDEX docs_fp ON docs USING gin (fp)")
    db.execute("SET enable_seqscan = off")

    def uses_index(k: int) -> bool:
        plan = db.execute(f"EXPLAIN SELECT id FROM docs WHERE hamming_within(fp, '0', {k})").fetchall()
        return any("Bitmap Index Scan on docs_fp" in r[0] for r in plan)

    assert all(uses_index(k) for k in range(9))
    db.execute("SET simhash.index_max_probes = 5")
    assert [uses_index(k) for k in range(9)] == [True] * 5 + [False] * 4
    db.execute("RESET ALL")


def random_writes(conninfo: str, seed: int, n_ops: int) -> None:
    """Inserts, updates and deletes in small transactions, some rolled back."""
    rng = random.Random(seed)
    with psycopg.connect(conninfo) as conn:
        for i in range(n_ops):
            with conn.transaction(force_rollback=rng.random() < 0.1):
                op = rng.random()
                target = rng.randrange(3000)
                fp = str(rng.getrandbits(64))
                if op < 0.5:
                    conn.execute("INSERT INTO docs VALUES (%s, %s::text::simhash64)", (100_000 * (seed + 1) + i, fp))
                elif op < 0.8:
                    conn.execute("UPDATE docs SET fp = %s::text::simhash64 WHERE id = %s", (fp, target))
                else:
                    conn.execute("DELETE FROM docs WHERE id = %s", (target,))


def concurrent_queries(conninfo: str, stop: threading.Event) -> None:
    rng = random.Random(7)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(INDEX_ONLY)
        while not stop.is_set():
            conn.execute(
                "SELECT count(*) FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s)",
                (str(rng.getrandbits(64)), rng.randint(0, 5)),
            ).fetchone()


# (kind, index settings, what each writer's session sets): GIN with and without
# its pending list; simhash_mih sorting its pending rows into a new run set
# every 40 rows, so writers flush while others read and VACUUM merges.
WRITE_SETUPS = {
    "gin fastupdate on": (GIN, "ALTER INDEX docs_fp SET (fastupdate = on)", ""),
    "gin fastupdate off": (GIN, "ALTER INDEX docs_fp SET (fastupdate = off)", ""),
    "simhash_mih": (MIH, "SELECT 1", "options='-c simhash.mih_pending_limit=40'"),
}


def vacuum_until_stopped(conninfo: str, stop: threading.Event) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while not stop.is_set():
            conn.execute("VACUUM docs")
            time.sleep(0.05)


@pytest.mark.parametrize("setup", list(WRITE_SETUPS))
def test_exact_after_concurrent_writes_vacuum_and_reindex(db: psycopg.Connection, setup: str) -> None:
    kind, settings, session = WRITE_SETUPS[setup]
    rng = random.Random(setup)
    fps = planted_fingerprints(rng, 3000)
    load_docs(db, fps, kind=kind)
    db.execute(settings)
    load_queries(db, random_queries(rng, fps, 400))
    info = db.info
    conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname} {session}"

    writers = [lambda seed=seed: random_writes(conninfo, seed, 300) for seed in range(4)]
    background = [lambda stop: concurrent_queries(conninfo, stop), lambda stop: vacuum_until_stopped(conninfo, stop)]
    errors = run_together(writers, background)
    assert not errors
    db.execute("ANALYZE docs")
    assert_index_matches_seqscan(db)

    for maintenance in ("VACUUM docs", "REINDEX INDEX docs_fp", "REINDEX INDEX CONCURRENTLY docs_fp"):
        db.execute("DELETE FROM docs WHERE id % 7 = 0")
        db.execute(maintenance)
        assert_index_matches_seqscan(db)


def test_planner_chooses_the_index_by_itself_on_100k_rows(db: psycopg.Connection) -> None:
    db.execute(
        "CREATE TABLE docs AS SELECT g AS id, hashint8extended(g, 3)::simhash64 AS fp"
        " FROM generate_series(1, 100000) g"
    )
    db.execute("CREATE INDEX docs_fp ON docs USING gin (fp)")
    db.execute("ANALYZE docs")
    for sql in (
        "SELECT id FROM docs WHERE hamming_within(fp, '0x0123456789abcdef', 3)",
        "SELECT id FROM docs WHERE fp <@ hamming_ball('0x0123456789abcdef', 3)",
    ):
        plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql).fetchall())
        assert "Bitmap Index Scan on docs_fp" in plan, plan
    # a radius the index cannot answer by lookup is left to the sequential scan
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN SELECT id FROM docs WHERE hamming_within(fp, '0', 30)"))
    assert "Seq Scan on docs" in plan and "Index" not in plan, plan


def insert_until_killed(conninfo: str, seed: int, acknowledged: list) -> None:
    rng = random.Random(seed)
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            for i in range(1_000_000):
                row_id, fp = seed * 1_000_000 + i, rng.getrandbits(64)
                conn.execute("INSERT INTO docs VALUES (%s, %s::text::simhash64)", (row_id, str(fp)))
                acknowledged.append((row_id, fp))
    except psycopg.Error:
        return  # the server went away


def delete_and_vacuum_until_killed(conninfo: str) -> None:
    """Deletes rows of the initial load (ids below 2000) and VACUUMs, so the
    kill may land in the middle of a VACUUM (simhash_mih: after the first run
    lost a row, before the later runs did)."""
    rng = random.Random(13)
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            while True:
                conn.execute("DELETE FROM docs WHERE id = ANY(%s)", ([rng.randrange(2000) for _ in range(40)],))
                conn.execute("VACUUM docs")
    except psycopg.Error:
        return  # the server went away


# A scoped simhash_mih index's queries: the scope of each query (qid) and of each row (id).
SCOPED_FORM = "domain = 'site' || q.qid % 3 AND " + FUNCTION_FORM
DOMAIN = "ALTER TABLE docs ADD COLUMN domain text GENERATED ALWAYS AS ('site' || id % 3) STORED"


@pytest.mark.parametrize("kind", [*INDEX_KINDS, "simhash_mih scoped"])
def test_exact_after_immediate_shutdown_and_wal_replay(tmp_path_factory, kind: str) -> None:
    # a server of its own, so that it can be killed without harming the others;
    # simhash_mih flushes its pending rows into run sets every 100 rows
    # meanwhile, from an index built in parallel (its pages logged at the build's end)
    server = ThrowawayServer(os.environ["SIMHASH_PG_BINDIR"], tmp_path_factory.mktemp("crash"),
                             postgres_options="-c simhash.mih_pending_limit=100").initdb().start()
    scoped = kind == "simhash_mih scoped"
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION simhash")
            fps = planted_fingerprints(random.Random(5), 2000)
            load_docs(conn, fps, kind=INDEX_KINDS.get(kind, MIH))
            if scoped:
                conn.execute(DOMAIN)
                conn.execute("DROP INDEX docs_fp")
                build(conn, "CREATE INDEX docs_fp ON docs USING simhash_mih (domain, fp)", 2)
            elif kind == "simhash_mih":
                build(conn, "REINDEX INDEX docs_fp", 2)
            conn.execute("CHECKPOINT")
        acknowledged: list = []
        inserters = [
            threading.Thread(target=insert_until_killed, args=(server.dsn(), s, acknowledged)) for s in (1, 2, 3)
        ] + [threading.Thread(target=delete_and_vacuum_until_killed, args=(server.dsn(),))]
        for t in inserters:
            t.start()
        time.sleep(2)
        server.stop("immediate")
        for t in inserters:
            t.join()
        assert len(acknowledged) > 50
        server.start()
        assert "automatic recovery in progress" in (server.directory / "server.log").read_text()

        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            present = {r[0] for r in conn.execute("SELECT id FROM docs").fetchall()}
            assert {row_id for row_id, _ in acknowledged} <= present
            rng = random.Random(9)
            sample = rng.sample(acknowledged, 50)
            queries = [(fp, rng.randint(0, 4)) for _, fp in sample]
            load_queries(conn, queries + random_queries(rng, fps, 300))
            assert_index_matches_seqscan(conn, SCOPED_FORM if scoped else FUNCTION_FORM)
            if kind.startswith("simhash_mih"):
                conn.execute("SELECT simhash_mih_check('docs_fp')")
                # merges ran before the kill, maybe one midway (its claims left in the metapage): the
                # next flush's merges drop those claims and bring the sets back to the cap (two rows:
                # a list sealed before the kill waits for a flusher until the pending list holds
                # twice the limit, then the insert takes it over)
                assert mih_stats(conn, "docs_fp")["merges"] > 0
                conn.execute("SET simhash.mih_pending_limit = 1")
                conn.execute("INSERT INTO docs (id, fp) VALUES (-1, '7'::simhash64), (-2, '8'::simhash64)")
                wait_for_merges(conn, "docs_fp")
                conn.execute("SELECT simhash_mih_check('docs_fp')")
                conn.execute("DELETE FROM docs WHERE id IN (-1, -2)")
            for (row_id, _), (centre, k) in zip(sample, queries):  # each acknowledged row found through the index
                conn.execute(INDEX_ONLY)
                scope = f"domain = 'site{row_id % 3}' AND " if scoped else ""
                found = conn.execute(
                    f"SELECT count(*) FROM docs WHERE {scope}hamming_within(fp, %s::text::simhash64, %s)",
                    (str(centre), k)).fetchone()[0]
                assert found >= 1
    finally:
        server.stop("fast")
