"""simhash_mih as an ordering index (pg_ext/src/index/mih/mih_scan_order.c,
issue 50): `ORDER BY fp <~> q LIMIT n` returns the n nearest rows, exactly
(the distances are the n smallest, ties in any order), as a sequential scan
and its sort do, NULL distances last; across run sets and pending rows, with
scope columns (`WHERE domain = $1`), a ball bounding the growth
(`hamming_within(fp, q, 12)`), in a LATERAL subquery (rescans), from
near-duplicates found by probes to random rows found by reading everything;
exact while writers flush and merge; the planner takes it for a small LIMIT
on a large table and the sequential scan without one.  A bitmap scan of the
scope alone returns the rows the index does not hold (NULL fingerprints)."""

from __future__ import annotations

import random

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolbox import copy_rows, flip_random, module_database
from toolbox.data import clustered_rows, planted_fingerprints
from toolbox.mih_merges import mih_stats
from toolbox.plans import rows_by_plan
from toolbox.workers import run_together

NEAREST = "SELECT id, fp <~> %s::simhash64 FROM docs {where} ORDER BY fp <~> %s::simhash64 {limit}"


@pytest.fixture(scope="module")
def order_db(postgresql_proc):
    """A database of this module's own (hypothesis runs a test body many times)."""
    yield from module_database(postgresql_proc, "mih_order")


def expected_distances(rows: dict[int, int | None], q: int | None) -> list[int | None]:
    """Every row's distance from q, ascending, NULLs (a NULL fingerprint or q) last."""
    if q is None:
        return [None] * len(rows)
    values = np.array([fp for fp in rows.values() if fp is not None], dtype=np.uint64)
    near = sorted(np.bitwise_count(values ^ np.uint64(q)).tolist())
    return near + [None] * (len(rows) - len(near))


def assert_nearest(conn: psycopg.Connection, rows: dict[int, int | None], q: int | None, n: int | None,
                   where: str = "", params: tuple = ()) -> None:
    """The query's rows are n of `rows` (all of them without n) at the n smallest
    distances from q, in order, each at its own distance."""
    sql = NEAREST.format(where=where, limit="" if n is None else f"LIMIT {n}")
    q_text = None if q is None else str(q)
    found = conn.execute(sql, (q_text, *params, q_text)).fetchall()
    expected = expected_distances(rows, q)
    assert [d for _, d in found] == expected[:len(expected) if n is None else n], (q, n, where)
    assert len({i for i, _ in found}) == len(found)
    for i, d in found:
        fp = rows[i]
        assert d == (None if fp is None or q is None else (fp ^ q).bit_count())


def explain(conn: psycopg.Connection, sql: str, params: tuple = ()) -> str:
    return "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params))


def load(conn: psycopg.Connection, rows: dict[int, int | None], index: str = "simhash_mih (fp)",
         domains: dict[int, str | None] | None = None) -> None:
    conn.execute("DROP TABLE IF EXISTS docs")
    conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, domain text, fp simhash64)"
                 " WITH (autovacuum_enabled = off)")
    copy_rows(conn, "COPY docs FROM STDIN",
              ((i, None if domains is None else domains[i], fp) for i, fp in rows.items()))
    conn.execute(f"CREATE INDEX docs_fp ON docs USING {index}")
    conn.execute("ANALYZE docs")


def add_rows(conn: psycopg.Connection, rows: dict[int, int | None], more: dict[int, int | None],
             domains: dict[int, str | None] | None = None) -> None:
    """Inserts more rows a hundred at a time under a small pending limit and no
    workers: flushes into new run sets, merges, and rows left pending."""
    conn.execute("SET simhash.mih_background_merges = off")
    conn.execute("SET simhash.mih_pending_limit = 150")
    items = list(more.items())
    for start in range(0, len(items), 100):
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO docs VALUES (%s, %s, %s::simhash64)",
                            [(i, None if domains is None else domains[i], None if fp is None else str(fp))
                             for i, fp in items[start:start + 100]])
    rows.update(more)
    conn.execute("RESET simhash.mih_pending_limit")
    conn.execute("RESET simhash.mih_background_merges")


@pytest.fixture(scope="module")
def large_db(postgresql_proc):
    yield from module_database(postgresql_proc, "mih_order_large")


@pytest.fixture(scope="module")
def large(large_db):
    """100k rows (random, planted clusters, NULLs) in a built run set, then 1000
    inserted: several run sets and pending rows."""
    rng = random.Random(50)
    fps = planted_fingerprints(rng, 98_000)
    rows = dict(enumerate(fps))
    load(large_db, rows)
    more = {len(rows) + j: rng.choice([None, rng.getrandbits(64), flip_random(rng.choice(fps[:100]) or 0, 2, rng)])
            for j in range(1000)}
    add_rows(large_db, rows, more)
    stats = mih_stats(large_db, "docs_fp")
    assert stats["run_sets"] >= 2 and stats["pending_rows"] > 0, stats
    return rows


def queries(rng: random.Random, rows: dict[int, int | None], count: int) -> list[int]:
    """Centres: stored fingerprints, near copies of them, random ones."""
    stored = [fp for fp in rows.values() if fp is not None]
    return [rng.choice([rng.choice(stored), flip_random(rng.choice(stored), rng.randint(1, 6), rng),
                        rng.getrandbits(64)]) for _ in range(count)]


def test_nearest_first_exactly_across_run_sets_and_pending_rows(large_db, large) -> None:
    """n = 1..1000 against brute force, near-duplicates (probes at growing
    radii) and random centres (read whole); the plan is the ordering scan,
    for a small LIMIT without any setting."""
    rng = random.Random(1)
    sql = NEAREST.format(where="", limit="LIMIT 10")
    plan = explain(large_db, sql, ("1", "1"))
    assert "Index Scan using docs_fp on docs" in plan and "Order By: (fp <~> " in plan, plan
    for q in queries(rng, large, 8):
        for n in (1, 2, 10, rng.randint(3, 999), 1000):
            assert_nearest(large_db, large, q, n)


def test_the_planner_keeps_the_sequential_scan_for_large_limits(large_db, large) -> None:
    for limit in ("", "LIMIT 100000"):
        plan = explain(large_db, NEAREST.format(where="", limit=limit), ("1", "1"))
        assert "docs_fp" not in plan and "Seq Scan on docs" in plan, (limit, plan)


def test_every_row_in_order_nulls_last(large_db, large) -> None:
    """Without a LIMIT, forced: every row, NULL fingerprints last, as the
    sequential scan gives them; a NULL q: every row, every distance NULL."""
    large_db.execute("SET enable_seqscan = off")
    large_db.execute("SET enable_sort = off")
    try:
        assert "Index Scan using docs_fp" in explain(large_db, NEAREST.format(where="", limit=""), ("1", "1"))
        assert_nearest(large_db, large, random.Random(2).getrandbits(64), None)
        assert_nearest(large_db, large, None, 20)
        assert_nearest(large_db, large, None, None)
    finally:
        large_db.execute("RESET enable_seqscan")
        large_db.execute("RESET enable_sort")


RADIUS_MEMORY = """SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
                   WHERE name = 'simhash_mih ordering radius'"""


def test_within_a_small_work_mem(large_db, large) -> None:
    """The rows a radius keeps stay within work_mem (64kB: about 4,700 rows
    at 7 bytes, the sorted copy beside them): past it the scan returns the
    nearest band and reads the index again for the rows beyond, still
    exactly in order, every row without a LIMIT, a NULL q too."""
    large_db.execute("SET work_mem = '64kB'")
    large_db.execute("SET enable_seqscan = off")
    large_db.execute("SET enable_sort = off")
    rng = random.Random(4)
    try:
        for q in queries(rng, large, 3):
            for n in (10, 3000, None):
                assert_nearest(large_db, large, q, n)
        assert_nearest(large_db, large, None, None)
        with large_db.transaction():
            large_db.execute("DECLARE far CURSOR FOR " + NEAREST.format(where="", limit=""), ("7", "7"))
            assert len(large_db.execute("FETCH 20000 FROM far").fetchall()) == 20000
            assert 0 < large_db.execute(RADIUS_MEMORY).fetchone()[0] <= 160 * 1024
            large_db.execute("CLOSE far")
    finally:
        for setting in ("work_mem", "enable_seqscan", "enable_sort"):
            large_db.execute(f"RESET {setting}")


def test_one_distance_beyond_work_mem(db) -> None:
    """20,000 copies of one fingerprint (one distance from any q) cannot be
    split into bands: they are kept together, past work_mem, and come first."""
    rows = {i: (5 if i < 20_000 else random.Random(i).getrandbits(64)) for i in range(22_000)}
    load(db, rows)
    db.execute("SET work_mem = '64kB'")
    db.execute("SET enable_seqscan = off")
    db.execute("SET enable_sort = off")
    for q in (5, 4, 2**64 - 1):
        for n in (10, 20_001, None):
            assert_nearest(db, rows, q, n)


# The scan's own context (the TIDs returned), and the hash that kept them before.
SCAN_MEMORY = """SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
                 WHERE name IN ('simhash_mih ordering scan', 'simhash_mih rows returned')"""


def test_ties_across_run_sets_and_pending_rows_each_once(db) -> None:
    """Thousands of rows at each of a few distances, built, flushed into run
    sets and left pending, bands narrowed by a small work_mem: every LIMIT
    gives the nearest rows exactly, each once (the rows of a distance are told
    apart by TID, those of the distances done by the packed TIDs kept: 8
    bytes a row returned)."""
    rng = random.Random(62)
    q = rng.getrandbits(64)
    near = [q, flip_random(q, 1, rng), flip_random(q, 2, rng)]
    def row(i: int) -> int | None:
        return near[i % 3] if i % 5 else rng.choice([None, rng.getrandbits(64)])
    rows = {i: row(i) for i in range(12_000)}
    load(db, rows)
    add_rows(db, rows, {i: row(i) for i in range(12_000, 13_000)})
    stats = mih_stats(db, "docs_fp")
    assert stats["run_sets"] >= 2 and stats["pending_rows"] > 0, stats
    db.execute("SET work_mem = '64kB'")
    db.execute("SET enable_seqscan = off")
    db.execute("SET enable_sort = off")
    try:
        for n in (1, 3000, 3467, 3468, 7000, 10_399, 10_400, 10_401, 12_000, None):
            assert_nearest(db, rows, q, n)
        with db.transaction():
            db.execute("DECLARE far CURSOR FOR " + NEAREST.format(where="", limit=""), (str(q), str(q)))
            assert len(db.execute("FETCH 12000 FROM far").fetchall()) == 12_000
            assert 0 < db.execute(SCAN_MEMORY).fetchone()[0] <= 12_000 * 16 + 64 * 1024
            db.execute("CLOSE far")
    finally:
        for setting in ("work_mem", "enable_seqscan", "enable_sort"):
            db.execute(f"RESET {setting}")


def test_a_ball_bounds_the_growth(large_db, large) -> None:
    """`AND hamming_within(fp, c, k)`: the rows in the ball, nearest q first,
    the ball's centre q itself or another.  The bitmap scan is off: for a
    ball estimated to hold a few rows (the pairs' statistics), the planner
    may as well take the keys' radius query and sort its rows, which is no
    slower (the ordering scan reads the radii up to the ball's anyway)."""
    rng = random.Random(3)
    stored = [fp for fp in large.values() if fp is not None]
    large_db.execute("SET enable_bitmapscan = off")
    try:
        for _ in range(6):
            q = rng.choice(stored)
            centre = rng.choice([q, flip_random(q, rng.randint(1, 8), rng)])
            k = rng.choice([3, 12, 20])
            inside = {i: fp for i, fp in large.items() if fp is not None and (fp ^ centre).bit_count() <= k}
            where = "WHERE hamming_within(fp, %s::simhash64, %s)"
            plan = explain(large_db, NEAREST.format(where=where, limit="LIMIT 5"), (str(q), str(centre), k, str(q)))
            assert "Index Scan using docs_fp" in plan and "Order By" in plan, plan
            for n in (1, 5, None):
                assert_nearest(large_db, inside, q, n, where, (str(centre), k))
    finally:
        large_db.execute("RESET enable_bitmapscan")


def test_hamming_nearest_is_the_ordering_scan(large_db, large) -> None:
    """hamming_nearest(NULL::docs, 'fp', q, n): exact (NULL fingerprints never
    returned), and each of its statements (within max_radius, then beyond)
    is `ORDER BY fp <~> q LIMIT n` through the simhash_mih index: its nested
    plans (auto_explain) are the ordering scan."""
    rng = random.Random(6)
    plans: list[str] = []
    large_db.add_notice_handler(lambda diagnostic: plans.append(diagnostic.message_primary or ""))
    large_db.execute("LOAD 'auto_explain'")
    for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
        large_db.execute(f"SET auto_explain.{setting}")
    try:
        for q in queries(rng, large, 6):
            for n, max_radius in ((1, 3), (10, 3), (100, 0), (10, 64)):
                plans.clear()
                got = large_db.execute("SELECT fp <~> %s::simhash64 FROM hamming_nearest(NULL::docs, 'fp',"
                                       " %s::simhash64, %s, %s)", (str(q), str(q), n, max_radius)).fetchall()
                assert sorted(d for (d,) in got) == expected_distances(large, q)[:n], (q, n, max_radius)
                nested = [plan for plan in plans if "FROM docs t" in plan]
                assert nested and all("Index Scan using docs_fp" in plan and "Order By" in plan
                                      for plan in nested), plans
    finally:
        large_db.execute("SET auto_explain.log_min_duration = -1")


def test_lateral_rescans(large_db, large) -> None:
    """The 3 nearest of each of several centres: one ordering scan rescanned."""
    centres = queries(random.Random(4), large, 8)
    sql = ("SELECT c.q, n.d FROM unnest(%s::text[]) WITH ORDINALITY c(q, o),"
           " LATERAL (SELECT fp <~> c.q::simhash64 AS d FROM docs ORDER BY fp <~> c.q::simhash64 LIMIT 3) n"
           " ORDER BY c.o, n.d")
    params = ([str(q) for q in centres],)
    plan = explain(large_db, sql, params)
    assert "Nested Loop" in plan and "Index Scan using docs_fp" in plan, plan
    got: dict[str, list[int]] = {}
    for q, d in large_db.execute(sql, params):
        got.setdefault(q, []).append(d)
    assert got == {str(q): expected_distances(large, q)[:3] for q in centres}


def test_scope_columns(db) -> None:
    """USING simhash_mih (domain, fp): `WHERE domain = $1 ORDER BY fp <~> q`,
    the domain's rows only (its NULL fingerprints last), across run sets and
    pending rows; a page syndicated on every site is each site's nearest."""
    rng = random.Random(5)
    sites = [f"site{i}.example" for i in range(5)]
    shared = rng.getrandbits(64)
    rows: dict[int, int | None] = {}
    domains: dict[int, str | None] = {}
    for i in range(6000):
        rows[i] = rng.choice([None, rng.getrandbits(64), flip_random(shared, rng.randint(0, 4), rng)])
        domains[i] = rng.choice(sites + [None])
    load(db, rows, "simhash_mih (domain, fp)", domains)
    more = {6000 + j: flip_random(shared, rng.randint(0, 9), rng) for j in range(400)}
    more_domains = {i: rng.choice(sites) for i in more}
    domains.update(more_domains)
    add_rows(db, rows, more, domains)
    where = "WHERE domain = %s"
    plan = explain(db, NEAREST.format(where=where, limit="LIMIT 10"), ("1", sites[0], "1"))
    assert "Index Scan using docs_fp" in plan and "Order By" in plan, plan
    db.execute("SET enable_seqscan = off")
    try:
        for site in sites[:3]:
            mine = {i: fp for i, fp in rows.items() if domains[i] == site}
            for q in (shared, flip_random(shared, 3, rng), rng.getrandbits(64)):
                for n in (1, 7, 300, None):
                    assert_nearest(db, mine, q, n, where, (site,))
        # a scope the planner cannot fold (none given) never orders through the index
        plan = explain(db, NEAREST.format(where="", limit="LIMIT 10"), ("1", "1"))
        assert "docs_fp" not in plan, plan
        # the scope alone, no radius (a bitmap scan, forced): the site's NULL fingerprints too
        db.execute("SET enable_indexscan = off")
        sql = "SELECT id FROM docs WHERE domain = %s ORDER BY id"
        assert "Bitmap Index Scan on docs_fp" in explain(db, sql, (sites[0],))
        assert [r[0] for r in db.execute(sql, (sites[0],))] == sorted(i for i in rows if domains[i] == sites[0])
    finally:
        db.execute("RESET enable_seqscan")
        db.execute("RESET enable_indexscan")


def test_exact_while_writers_flush_and_merge(db, postgresql_proc) -> None:
    """Two writers insert near copies (a flush every 64 rows, merges in the
    workers) while two readers compare the ordering scan's nearest rows with
    the sequential scan's, each pair in one snapshot."""
    rng = random.Random(6)
    fps = planted_fingerprints(rng, 3000)
    stored = [fp for fp in fps if fp is not None]
    load(db, dict(enumerate(fps)))
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user,
                  dbname=db.info.dbname, autocommit=True)

    def write(seed: int) -> None:
        wrng = random.Random(seed)
        with psycopg.connect(**server) as conn:
            conn.execute("SET simhash.mih_pending_limit = 64")
            for i in range(500):
                conn.execute("INSERT INTO docs VALUES (%s, NULL, %s::simhash64)",
                             (100_000 * (seed + 1) + i, str(flip_random(wrng.choice(stored), wrng.randint(0, 5), wrng))))

    compared: list[str] = []

    def read(stop) -> None:
        rrng = random.Random(len(compared))
        sql = NEAREST.format(where="", limit="LIMIT 15")
        with psycopg.connect(**server) as conn:
            while not stop.is_set():
                q = str(flip_random(rrng.choice(stored), rrng.randint(0, 4), rrng))
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    by_index = [d for _, d in rows_by_plan(conn, sql, (q, q), table="docs", index="docs_fp",
                                                           ordering=True)]
                    assert by_index == [d for _, d in rows_by_plan(conn, sql, (q, q), table="docs", index=None)], q
                compared.append(q)

    errors = run_together([lambda seed=seed: write(seed) for seed in range(2)], [read, read])
    assert not errors, errors
    assert len(compared) > 20, len(compared)
    assert mih_stats(db, "docs_fp")["flushes"] >= 10


@given(clustered_rows(max_k=5), st.integers(0, 2**64 - 1), st.integers(1, 70), st.booleans())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_small_tables_against_brute_force(order_db, example, q, n, pending) -> None:
    """Hypothesis's clustered rows (exact duplicates: ties), the centre one of
    them or any value, some rows inserted after the build."""
    rows_list, _, _ = example
    rows = dict(rows_list)
    if rows:
        q = random.Random(q).choice([q, *[fp for fp in rows.values() if fp is not None]])
    built = dict(list(rows.items())[:len(rows) // 2]) if pending else rows
    load(order_db, built)
    if pending:
        add_rows(order_db, built, {i: fp for i, fp in rows.items() if i not in built})
    order_db.execute("SET enable_seqscan = off")
    try:
        assert_nearest(order_db, rows, q, n)
    finally:
        order_db.execute("RESET enable_seqscan")
