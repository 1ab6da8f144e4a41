"""simhash_mih's scope columns (pg_ext/src/index/mih/mih_scope.c):
USING simhash_mih (domain, fp) answers `domain = $1 AND hamming_within(fp,
$2, k)` exactly at every radius, through every kind of write and parallel
builds, with a scope of any type that has an operator class (text, integers,
uuid, varchar, an expression, several columns); a query of a page
syndicated on many sites reads its own site's copy, not the others'; an
index of the wrong shape is a clear error; queries the index cannot fold
(no scope, part of it) are still exact, and the planner keeps away from them.
"""

from __future__ import annotations

import os
import random
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysimhash_sql.throwaway import ThrowawayServer
from toolbox import MAX_FINGERPRINT as MAX, copy_rows, error_of, flip, flip_random, module_database
from toolbox.mih_builds import assert_exact, build, replay
from toolbox.mih_pages import META_NSCOPE, connect, edit_index, own_server

SCOPED = "SELECT id FROM docs WHERE domain = %s AND hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"


@pytest.fixture(scope="module")
def scope_db(postgresql_proc):
    """A database of this module's own (hypothesis runs a test body many times)."""
    yield from module_database(postgresql_proc, "mih_scope")


@st.composite
def histories(draw):
    """Rows (domain, fingerprint) where sites share near-identical pages, and
    what happens to them: (runs, pending limit, rows, operations, centres,
    domains, workers)."""
    centres = draw(st.lists(st.integers(0, MAX), min_size=1, max_size=3))
    domains = ["a.example", "b.example", "c.example", "d.example"]

    def row():
        domain = st.one_of(st.sampled_from(domains), st.none())
        fp = st.one_of(st.sampled_from(centres),
                       st.builds(lambda c, bits: flip(c, bits), st.sampled_from(centres),
                                 st.lists(st.integers(0, 63), max_size=6, unique=True)),
                       st.integers(0, MAX), st.none())
        return st.tuples(domain, fp)

    rows = draw(st.lists(row(), max_size=250))
    operations = draw(st.lists(st.one_of(
        st.tuples(st.just("insert"), st.lists(row(), min_size=1, max_size=80)),
        st.tuples(st.just("delete"), st.integers(2, 5), st.integers(0, 4)),
        st.tuples(st.just("update"), st.integers(2, 5), st.integers(0, 63)),
        st.tuples(st.just("move"), st.integers(2, 5), st.sampled_from(domains)),
        st.tuples(st.just("vacuum")),
        st.tuples(st.just("reindex concurrently")),
    ), max_size=6))
    return (draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([7, 50, 65536])), rows, operations, centres,
            domains, draw(st.sampled_from([0, 2])))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=histories())
def test_scoped_queries_exact_at_every_radius_through_every_kind_of_write(scope_db: psycopg.Connection,
                                                                          history) -> None:
    runs, pending_limit, initial, operations, centres, domains, workers = history
    conn = scope_db
    conn.execute("DROP TABLE IF EXISTS docs")
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, domain text, fp simhash64) WITH (autovacuum_enabled = off)")
    rows = dict(enumerate(initial))
    copy_rows(conn, "COPY docs FROM STDIN", ((i, d, fp) for i, (d, fp) in rows.items()))
    report = build(conn, f"CREATE INDEX docs_fp ON docs USING simhash_mih (domain, fp) WITH (runs = {runs})", workers)
    assert report.processes == workers + 1
    conn.execute(f"SET simhash.mih_pending_limit = {pending_limit}")
    rows = replay(conn, rows, operations, workers)
    conn.execute("RESET simhash.mih_pending_limit")
    rng = random.Random(len(rows))
    queries = [(d, c) for c in centres + [flip_random(c, 2, rng) for c in centres] for d in domains[:3]]
    queries.append(("nowhere.example", centres[0]))
    assert_exact(conn, {i: fp for i, (_, fp) in rows.items()}, [c for _, c in queries],
                 scopes={i: d for i, (d, _) in rows.items()}, scope_of_query=[d for d, _ in queries])
    conn.execute("SELECT simhash_mih_check('docs_fp')")


# (column type, how a test value of scope i is written in SQL)
SCOPE_TYPES = {
    "integer": lambda i: str(i),
    "bigint": lambda i: str(i * 10_000_000_000),
    "smallint": lambda i: str(i),
    "uuid": lambda i: str(uuid.UUID(int=i * 7919)),
    "varchar(20)": lambda i: f"site{i}",
    "text COLLATE \"C\"": lambda i: f"site{i}",
}


@pytest.mark.parametrize("type_", list(SCOPE_TYPES))
def test_every_scope_type_with_an_operator_class(db: psycopg.Connection, type_: str) -> None:
    value = SCOPE_TYPES[type_]
    rng = random.Random(type_)
    articles = [rng.getrandbits(64) for _ in range(30)]
    db.execute(f"CREATE TABLE docs (id int PRIMARY KEY, domain {type_}, fp simhash64)")
    rows = {i: (value(rng.randrange(20)), flip_random(rng.choice(articles), rng.randint(0, 2), rng))
            for i in range(3000)}
    copy_rows(db, "COPY docs FROM STDIN", ((i, d, fp) for i, (d, fp) in rows.items()))
    build(db, "CREATE INDEX docs_fp ON docs USING simhash_mih (domain, fp)", 2)
    queries = [(value(rng.randrange(20)), flip_random(rng.choice(articles), 1, rng)) for _ in range(12)]
    assert_exact(db, {i: fp for i, (_, fp) in rows.items()}, [c for _, c in queries],
                 scopes={i: d for i, (d, _) in rows.items()}, scope_of_query=[d for d, _ in queries])
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_several_scope_columns_and_an_expression(db: psycopg.Connection) -> None:
    rng = random.Random(2)
    article = rng.getrandbits(64)
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, tenant int, domain text, fp simhash64)")
    copy_rows(db, "COPY docs FROM STDIN",
              ((i, i % 3, f"Site{i % 5}.example", flip_random(article, i % 3, rng)) for i in range(600)))
    db.execute("CREATE INDEX docs_scoped ON docs USING simhash_mih (tenant, lower(domain), fp)")
    db.execute("SET enable_seqscan = off")
    sql = ("SELECT id FROM docs WHERE tenant = %s AND lower(domain) = %s"
           " AND hamming_within(fp, %s::text::simhash64, 2) ORDER BY id")
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, (1, "site2.example", str(article))))
    assert "Bitmap Index Scan on docs_scoped" in plan, plan
    got = [r[0] for r in db.execute(sql, (1, "site2.example", str(article)))]
    assert got == [i for i in range(600) if i % 3 == 1 and i % 5 == 2]
    db.execute("SELECT simhash_mih_check('docs_scoped')")


def test_a_syndicated_page_reads_its_own_site_only(db: psycopg.Connection) -> None:
    """An article copied (0 to 2 bits apart) on 300 sites: a scoped query
    finds its site's copy, and the index hands the heap that row alone
    (an index without scope hands it every copy, to drop at the heap)."""
    rng = random.Random(8)
    article = rng.getrandbits(64)
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, domain text, fp simhash64)")
    copy_rows(db, "COPY docs FROM STDIN",
              [(i, f"site{i}.example", flip_random(article, rng.randint(0, 2), rng)) for i in range(300)]
              + [(300 + i, f"site{i % 300}.example", rng.getrandbits(64)) for i in range(30_000)])
    db.execute("ANALYZE docs")

    def index_rows(index: str) -> int:
        plan = db.execute("EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM docs WHERE domain = 'site7.example'"
                          " AND hamming_within(fp, %s::text::simhash64, 3)", (str(article),)).fetchone()[0][0]["Plan"]
        node = plan["Plans"][0]
        assert node["Index Name"] == index, plan
        assert plan["Actual Rows"] == 1, plan
        return node["Actual Rows"]

    db.execute("CREATE INDEX docs_plain ON docs USING simhash_mih (fp)")
    assert index_rows("docs_plain") == 300
    db.execute("DROP INDEX docs_plain")
    db.execute("CREATE INDEX docs_scoped ON docs USING simhash_mih (domain, fp)")
    assert index_rows("docs_scoped") == 1
    # with both indexes, the planner takes the scoped one for a scoped query
    db.execute("CREATE INDEX docs_plain ON docs USING simhash_mih (fp)")
    db.execute("ANALYZE docs")
    assert index_rows("docs_scoped") == 1


def test_queries_the_index_cannot_fold_are_exact_and_left_to_other_plans(db: psycopg.Connection) -> None:
    """A scoped index answers only a query giving every scope column by
    equality and a radius.  Without the radius, or with part of the scope,
    it would read every row: the planner takes another plan (and, forced,
    the answers are still right); a NULL or contradictory scope finds
    nothing; without any scope column the index cannot be used."""
    rng = random.Random(4)
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, tenant int, domain text, fp simhash64)")
    copy_rows(db, "COPY docs FROM STDIN",
              ((i, i % 4, f"site{i % 7}", rng.getrandbits(64) if i % 10 else 42) for i in range(20_000)))
    db.execute("CREATE INDEX docs_scoped ON docs USING simhash_mih (tenant, domain, fp)")
    db.execute("ANALYZE docs")
    fortytwo = [i for i in range(0, 20_000, 10)]
    # condition: (the rows it finds, whether the planner takes the index for it)
    cases = {
        "tenant = 1 AND domain = 'site3'": ([i for i in range(20_000) if i % 4 == 1 and i % 7 == 3], False),
        "tenant = 1 AND hamming_within(fp, '42', 0)": ([i for i in fortytwo if i % 4 == 1], False),
        "tenant = 2 AND domain = 'site1' AND hamming_within(fp, '42', 0)":
            ([i for i in fortytwo if i % 4 == 2 and i % 7 == 1], True),
        "tenant = 2 AND domain = 'site1' AND hamming_within(fp, '42', 0) AND hamming_within(fp, '43', 1)":
            ([i for i in fortytwo if i % 4 == 2 and i % 7 == 1], True),
    }
    for condition, (expected, uses_index) in cases.items():
        sql = f"SELECT id FROM docs WHERE {condition} ORDER BY id"
        plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql))
        assert ("docs_scoped" in plan) == uses_index, (condition, plan)
        assert [r[0] for r in db.execute(sql)] == expected, condition
        db.execute("SET enable_seqscan = off")
        assert [r[0] for r in db.execute(sql)] == expected, condition
        db.execute("RESET enable_seqscan")
    # values the planner cannot see (a generic plan): a NULL scope, or two for one column, find nothing
    db.execute("SET plan_cache_mode = force_generic_plan")
    db.execute("SET enable_seqscan = off")
    sql = "SELECT count(*) FROM docs WHERE tenant = %s AND domain = %s AND domain = %s AND hamming_within(fp, '42', 0)"
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, (2, "site1", "site1"), prepare=True))
    assert "docs_scoped" in plan, plan
    found = len([i for i in fortytwo if i % 4 == 2 and i % 7 == 1])
    for params, count in (((2, None, None), 0), ((2, "site1", "site2"), 0), ((2, "site1", "site1"), found)):
        assert db.execute(sql, params, prepare=True).fetchone()[0] == count, params
    db.execute("RESET plan_cache_mode")
    db.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN SELECT id FROM docs WHERE hamming_within(fp, '42', 0)"))
    assert "docs_scoped" not in plan, plan


@pytest.mark.parametrize(("columns", "message"), [
    ("fp, domain", 'column "fp" of simhash_mih index "docs_bad" is a fingerprint, but not its last column'),
    ("domain", 'the last column of simhash_mih index "docs_bad", "domain", is not a simhash64 fingerprint'),
    ("fp, fp2", 'column "fp" of simhash_mih index "docs_bad" is a fingerprint, but not its last column'),
    ("tenant, domain", 'the last column of simhash_mih index "docs_bad", "domain", is not a simhash64 fingerprint'),
    ("amount, fp", 'data type numeric has no default operator class for access method "simhash_mih"'),
    ("domain, fp) INCLUDE (tenant", 'access method "simhash_mih" does not support included columns'),
])
def test_an_index_of_the_wrong_shape_is_a_clear_error(db: psycopg.Connection, columns: str, message: str) -> None:
    db.execute("CREATE TABLE docs (id int, tenant int, domain text, amount numeric, fp simhash64, fp2 simhash64)")
    db.execute("INSERT INTO docs VALUES (1, 1, 'a', 1.5, '1', '2')")
    error = error_of(db, f"CREATE INDEX docs_bad ON docs USING simhash_mih ({columns})")
    assert message in str(error), str(error)
    if "fingerprint" in message:
        assert error.sqlstate == "42P17" and "USING simhash_mih (domain, fingerprint)" in error.diag.message_hint


def test_the_checker_knows_the_scope(tmp_path_factory) -> None:
    """A metapage whose scope column count is not the index's is corruption."""
    with own_server(tmp_path_factory.mktemp("mih-scope-check")) as server:
        with connect(server) as conn:
            conn.execute("CREATE EXTENSION simhash")
            conn.execute("CREATE TABLE docs (id int, domain text, fp simhash64)")
            conn.execute("INSERT INTO docs SELECT i, 'd' || i % 9, hashint8extended(i, 0)::simhash64"
                         " FROM generate_series(1, 5000) i")
            conn.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (domain, fp)")
            conn.execute("SELECT simhash_mih_check('docs_fp')")
        file = edit_index(server, lambda f: f.put_u32(0, META_NSCOPE, 0))
        assert file.u32(0, META_NSCOPE) == 0 and int.from_bytes(file.original[24 + META_NSCOPE:][:4], "little") == 1
        with connect(server) as conn:
            for statement in ("SELECT simhash_mih_check('docs_fp')",
                              "SELECT count(*) FROM docs WHERE domain = 'd1' AND hamming_within(fp, '1', 3)"):
                conn.execute("SET enable_seqscan = off")
                error = error_of(conn, statement)
                assert error.sqlstate == "XX002", str(error)
                assert "the metapage says 0 scope columns, the index has 1" in str(error), str(error)


def test_an_unlogged_scoped_index_after_a_crash(tmp_path_factory) -> None:
    """An unlogged table's scoped index comes back empty from its init fork
    after a crash, and answers again (its metapage knows the scope)."""
    server = ThrowawayServer(os.environ["SIMHASH_PG_BINDIR"], tmp_path_factory.mktemp("unlogged"))
    server.initdb().start()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION simhash")
            conn.execute("CREATE UNLOGGED TABLE docs (id int, domain text, fp simhash64)")
            conn.execute("INSERT INTO docs SELECT i, 'd' || i % 9, hashint8extended(i, 0)::simhash64"
                         " FROM generate_series(1, 5000) i")
            conn.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (domain, fp)")
        server.stop("immediate")
        server.start()
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM docs").fetchone()[0] == 0
            conn.execute("INSERT INTO docs VALUES (1, 'd1', '12345'), (2, 'd2', '12345')")
            conn.execute("SET enable_seqscan = off")
            assert [r[0] for r in conn.execute(SCOPED, ("d2", "12344", 1))] == [2]
            conn.execute("SELECT simhash_mih_check('docs_fp')")
    finally:
        server.stop("immediate")
