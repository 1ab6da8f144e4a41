"""pysimhash_sql.queries against brute force, and the safety of the SQL text
handed to simhash_find_all / simhash_clusters."""

from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, create_engine, select, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, aliased

from pysimhash_sql import plain
from pysimhash_sql.backends import PLAIN
from pysimhash_sql.queries import (
    _stream_rows, clusters, find_all, has_near_duplicate, near_duplicate_matches, near_duplicates, nearest, query_sql,
    run_clusters, run_find_all,
)
from pysimhash_sql.sqlalchemy import SimHash64, register_simhash
from toolbox import brute_force_clusters, brute_force_pairs, distance, flip_random, near_copies
from toolbox.pages_model import Base, Page

HOSTILE = [
    "'; DROP TABLE pages; --",
    "back\\slash",
    "trailing\\",
    "\\'; DROP TABLE pages; --",
    "$$; DROP TABLE pages; $$",
    "$q$ x $q$",
    "100% %s %(x)s",
    "quote'quote''",
    'double"quote',
    "semi;colon\nnewline\ttab",
    "ünïcødé ✓",
]


@pytest.fixture
def pages(simhash_engine):
    Base.metadata.create_all(simhash_engine)
    values = near_copies(seed=7, groups=40, per_group=4, max_flip=3)
    rows = [Page(id=i, url=HOSTILE[i % len(HOSTILE)], fp=v) for i, v in enumerate(values)]
    rows.append(Page(id=len(values), url="null fingerprint", fp=None))
    with Session(simhash_engine) as session:
        session.add_all(rows)
        session.commit()
    return dict(enumerate(values))


def test_near_duplicates_equal_brute_force(simhash_engine, pages) -> None:
    q = pages[5] ^ 1
    with Session(simhash_engine) as session:
        got = [(page.id, d) for page, d in session.execute(near_duplicates(Page.fp, q, 4))]
    expected = sorted(((i, distance(v, q)) for i, v in pages.items() if distance(v, q) <= 4), key=lambda r: r[1])
    assert sorted(got) == sorted(expected)
    assert [d for _, d in got] == sorted(d for _, d in got)


def test_near_duplicates_compose_and_accept_core_columns(simhash_engine, pages) -> None:
    q = pages[0]
    stmt = near_duplicates(Page.__table__.c.fp, q, 64).where(Page.__table__.c.id < 10)
    with simhash_engine.connect() as conn:
        assert sorted(r.id for r in conn.execute(stmt)) == list(range(10))
    other = aliased(Page)
    with Session(simhash_engine) as session:
        assert {p.id for p, _ in session.execute(near_duplicates(other.fp, q, 0))} == {
            i for i, v in pages.items() if v == q
        }


def test_new_rows_against_stored_rows_equal_brute_force(simhash_engine, pages) -> None:
    """The batch check: odd rows are new, even ones stored (one table, so one
    side is aliased); the radius is a bound parameter."""
    new = aliased(Page)
    k = 3
    is_new, is_stored = new.id % 2 == 1, Page.id % 2 == 0
    expected = sorted((i, j, distance(a, b)) for i, a in pages.items() if i % 2
                      for j, b in pages.items() if j % 2 == 0 and distance(a, b) <= k)
    with Session(simhash_engine) as session:
        matches = session.execute(near_duplicate_matches(new.fp, Page.fp, k).where(is_new, is_stored)).all()
        seen = session.scalars(select(new.id).where(is_new, has_near_duplicate(new.fp, Page.fp, k).where(is_stored)))
        unseen = session.scalars(select(new.id).where(is_new, ~has_near_duplicate(new.fp, Page.fp, k).where(is_stored)))
        seen, unseen = set(seen), set(unseen)
    assert sorted((n.id, s.id, d) for n, s, d in matches) == expected
    assert expected, "the data has near-duplicates across the two sides"
    assert seen == {i for i, _, _ in expected}
    assert unseen == set(range(1, len(pages), 2)) - seen


def test_nearest_is_exact_top_n(simhash_engine, pages) -> None:
    q = random.Random(3).getrandbits(64)
    with Session(simhash_engine) as session:
        got = [d for _, d in session.execute(nearest(Page.fp, q, 7))]
    assert got == sorted(distance(v, q) for v in pages.values())[:7]


def test_nearest_is_an_ordering_index_scan(simhash_engine) -> None:
    """nearest() and order_by(Page.fp.hamming_distance(q)).limit(n) compile to
    ORDER BY fp <~> q (the operator, not the function call), which a
    simhash_mih index answers in order (EXPLAIN: Index Scan ... Order By);
    the distances are brute force's."""
    Base.metadata.create_all(simhash_engine)
    q = 0x0123456789ABCDEF
    with simhash_engine.begin() as conn:
        conn.execute(text("INSERT INTO pages SELECT g, '', hashint8extended(g, 5)::simhash64"
                          " FROM generate_series(1, 20000) g"))
        rng = random.Random(9)
        near = [flip_random(q, flips, rng) for flips in (0, 1, 2, 3, 5, 8)]
        conn.execute(Page.__table__.insert(), [{"id": -i - 1, "url": "near", "fp": v} for i, v in enumerate(near)])
        conn.execute(text("CREATE INDEX pages_fp_mih ON pages USING simhash_mih (fp)"))
        conn.execute(text("ANALYZE pages"))
        values = [v for v in conn.scalars(select(Page.fp)) if v is not None]
    expected = sorted(distance(v, q) for v in values)[:10]
    by_model = select(Page).order_by(Page.fp.hamming_distance(q)).limit(10)
    for stmt in (nearest(Page.fp, q, 10), by_model):
        sql = str(stmt.compile(simhash_engine, compile_kwargs={"literal_binds": True}))
        assert "<~>" in sql and "hamming_distance(" not in sql, sql
        with Session(simhash_engine) as session:
            plan = "\n".join(session.scalars(text("EXPLAIN " + sql)))
            assert "Index Scan using pages_fp_mih" in plan and "Order By" in plan, plan
            got = [distance(page.fp, q) for page in session.scalars(stmt)] if stmt is by_model else [
                d for _, d in session.execute(stmt)]
        assert got == expected


@pytest.mark.parametrize("conforming", ["on", "off"])
def test_query_text_keeps_hostile_values_as_data(simhash_engine, pages, conforming: str) -> None:
    """The inlined SQL selects exactly what the parameterised select does, under
    either string-literal syntax, and never executes anything it should not."""
    with simhash_engine.connect() as conn:
        conn.exec_driver_sql(f"SET standard_conforming_strings = {conforming}")
        for value in HOSTILE:
            for condition in (Page.url == value, Page.url.in_([value, "x"]), Page.url.like(value)):
                query = select(Page.id, Page.fp).where(condition).order_by(Page.id)
                sql = query_sql(query)
                assert outcome(conn, ids_run_by_server, sql) == outcome(conn, ids_run_by_driver, query), sql
        assert conn.scalar(text("SELECT count(*) FROM pages")) == len(pages) + 1


def ids_run_by_server(conn, sql: str) -> list[int]:
    """The ids the SQL text selects when the server runs it, as simhash_find_all
    does (query_to_xml runs SQL text handed to it as a parameter)."""
    found = conn.scalar(
        text("SELECT xpath('//id/text()', query_to_xml(:sql, true, false, ''))::text[]"), {"sql": sql}
    )
    return [int(i) for i in found]


def ids_run_by_driver(conn, query) -> list[int]:
    return [row.id for row in conn.execute(query)]


def outcome(conn, run, statement) -> list[int] | str:
    """The ids, or the SQLSTATE of the error (a LIKE pattern may be invalid)."""
    try:
        with conn.begin_nested():
            return run(conn, statement)
    except DBAPIError as error:
        return error.orig.sqlstate


def test_query_text_is_sent_as_a_parameter() -> None:
    stmt = find_all(select(Page.id, Page.fp).where(Page.url == HOSTILE[0]), max_distance=2)
    compiled = stmt.compile(dialect=postgresql.dialect())
    assert "DROP" not in str(compiled)
    assert any("DROP TABLE pages" in str(v) for v in compiled.params.values())


def test_query_must_select_id_and_fingerprint() -> None:
    with pytest.raises(ValueError, match="exactly two columns"):
        find_all(select(Page))


def test_find_all_equals_brute_force(simhash_engine, pages) -> None:
    selected = {i: v for i, v in pages.items() if i % len(HOSTILE) != 3}
    query = select(Page.id, Page.fp).where(Page.url != HOSTILE[3])
    with Session(simhash_engine) as session:
        for k, blocks in [(3, None), (3, 5), (0, None), (6, 8)]:
            got = set(map(tuple, session.execute(find_all(query, max_distance=k, blocks=blocks))))
            assert got == set(brute_force_pairs(selected.items(), k))


def test_find_all_and_clusters_with_parallel_workers(simhash_engine, pages) -> None:
    """workers is passed to the server (which launches them on any input here)
    and changes nothing in the result; a negative count never reaches it."""
    query = select(Page.id, Page.fp)
    with Session(simhash_engine) as session:
        session.execute(text("SET simhash.find_all_parallel_min_rows = 0"))
        for workers in (0, 2):
            got = set(map(tuple, session.execute(find_all(query, 3, workers=workers))))
            assert got == set(brute_force_pairs(pages.items(), 3))
            members = dict(map(tuple, session.execute(clusters(query, 3, workers=workers))))
            assert members == brute_force_clusters(pages, 3)
    with pytest.raises(ValueError, match="workers must be 0 or more"):
        find_all(query, 3, workers=-1)
    assert "simhash_find_all(CAST(" in str(find_all(query, 3).compile(dialect=postgresql.dialect()))


def test_clusters_equal_brute_force(simhash_engine, pages) -> None:
    query = select(Page.id, Page.fp)
    values = {i: v for i, v in pages.items()}
    with Session(simhash_engine) as session:
        got = dict(map(tuple, session.execute(clusters(query, max_distance=3))))
        with_singletons = dict(map(tuple, session.execute(clusters(query, 3, include_singletons=True))))
    expected = brute_force_clusters(values, 3)
    assert got == expected
    assert with_singletons == {i: expected.get(i, i) for i in values}


def test_queries_through_async_session(simhash_async_engine, pages) -> None:
    q = pages[9]

    async def main() -> list[tuple[int, int]]:
        async with AsyncSession(simhash_async_engine) as session:
            result = await session.execute(near_duplicates(Page.fp, q, 3))
            return [(page.id, d) for page, d in result]

    got = asyncio.run(main())
    assert sorted(got) == sorted((i, distance(v, q)) for i, v in pages.items() if distance(v, q) <= 3)


@pytest.fixture(params=["extension", "plain"])
def pages_on_each_backend(request, pages, simhash_engine):
    """The pages, with duplicates (same fingerprint, several ids) and negative
    ids, on the extension's database or on a database without it."""
    values = dict(pages)
    values.update({-5: values[3], 1000: values[3], 1001: 2**64 - 1, 1002: 2**64 - 2, 1003: 2**63})
    engine = simhash_engine if request.param == "extension" else request.getfixturevalue("plain_engine")
    if request.param == "plain":
        Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.execute(Page.__table__.delete())
        session.add_all([Page(id=i, url="", fp=v) for i, v in values.items()] + [Page(id=2000, url="", fp=None)])
        session.commit()
    return engine, values


def test_run_find_all_and_clusters_equal_brute_force_on_each_backend(pages_on_each_backend) -> None:
    engine, values = pages_on_each_backend
    query = select(Page.id, Page.fp)
    with Session(engine) as session:
        for k, blocks in [(0, None), (3, None), (3, 5), (6, None), (8, 12)]:
            assert sorted(run_find_all(session, query, k, blocks)) == brute_force_pairs(values.items(), k)
        expected = brute_force_clusters(values, 3)
        assert dict(run_clusters(session, query, 3)) == expected
        assert dict(run_clusters(session, query, 3, include_singletons=True)) == {i: expected.get(i, i) for i in values}
        some = {i: v for i, v in values.items() if i % 3}
        assert sorted(run_find_all(session, query.where(Page.id % 3 != 0), 2)) == brute_force_pairs(some.items(), 2)
        with pytest.raises(ValueError, match="exactly two columns"):
            run_find_all(session, select(Page.id), 3)


@pytest.fixture(params=["psycopg", "psycopg2"])
def plain_engine_of_driver(request, plain_url):
    """An engine on the plain back end through psycopg 3 (the rows come in
    binary format) or psycopg2 (in text format, through SQLAlchemy)."""
    engine = create_engine(plain_url.set(drivername=f"postgresql+{request.param}"))
    register_simhash(engine, backend=PLAIN)
    yield engine
    engine.dispose()


def test_plain_rows_reach_the_client_exactly_through_each_driver(plain_engine_of_driver) -> None:
    # ids of every integer type at their limits, fingerprints at the edges of
    # the signed reading, NULL fingerprints skipped; more rows than chunks.
    engine = plain_engine_of_driver
    rng = random.Random(31)
    rows = {-(2**63): 2**63, 2**63 - 1: 2**63 - 1, -1: 2**64 - 1, 0: 0, 1: 1, 2: 2**64 - 2}
    for i in range(200):
        rows[rng.randrange(-(2**63), 2**63)] = rng.choice(list(rows.values())) ^ (1 << rng.randrange(64))
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE rows8 (id bigint, fp bigint)")
        conn.exec_driver_sql("CREATE TABLE rows4 (id integer, fp bigint)")
        conn.exec_driver_sql("CREATE TABLE rows2 (id smallint, fp bigint)")
        conn.execute(text("INSERT INTO rows8 VALUES (:id, :fp)"),
                     [{"id": i, "fp": plain.to_signed(v)} for i, v in rows.items()] + [{"id": 5, "fp": None}])
        conn.exec_driver_sql("INSERT INTO rows4 SELECT id::integer, fp FROM rows8 "
                             "WHERE id BETWEEN -2147483648 AND 2147483647 UNION ALL "
                             "SELECT -2147483648, 99 UNION ALL SELECT 2147483647, 98")
        conn.exec_driver_sql("INSERT INTO rows2 SELECT id::smallint, fp FROM rows4 "
                             "WHERE id BETWEEN -32768 AND 32767 UNION ALL SELECT -32768, 3 UNION ALL SELECT 32767, 7")
        stored = {name: [(i, None if fp is None else plain.to_unsigned(fp)) for i, fp in
                         conn.execute(text(f"SELECT id, fp FROM {name}"))] for name in ("rows8", "rows4", "rows2")}
    for name, values in stored.items():
        table = Table(name, MetaData(), Column("id", BigInteger), Column("fp", SimHash64))
        with Session(engine) as session:
            ids, fps = _stream_rows(session, select(table.c.id, table.c.fp))
            assert sorted(zip(ids.tolist(), fps.tolist())) == sorted((i, v) for i, v in values if v is not None)
            for k in (0, 3, 12):
                assert sorted(run_find_all(session, select(table.c.id, table.c.fp), k)) == brute_force_pairs(values, k)
            none = select(table.c.id, table.c.fp).where(table.c.id > 2**63 - 1)
            assert [a.size for a in _stream_rows(session, none)] == [0, 0]
            assert run_find_all(session, none, 3) == run_clusters(session, none, 3, include_singletons=True) == []


def test_plain_find_all_refuses_null_and_repeated_ids_through_each_driver(plain_engine_of_driver) -> None:
    engine = plain_engine_of_driver
    table = Table("ids", MetaData(), Column("id", BigInteger), Column("fp", SimHash64))
    query = select(table.c.id, table.c.fp)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE ids (id bigint, fp bigint)")
        conn.exec_driver_sql("INSERT INTO ids SELECT i, i / 2 * 7919 FROM generate_series(1, 100) AS i")
    expected = brute_force_pairs(((i, i // 2 * 7919) for i in range(1, 101)), 3)
    with Session(engine) as session:
        assert sorted(run_find_all(session, query, 3)) == expected
        session.execute(text("INSERT INTO ids VALUES (NULL, NULL)"))  # no fingerprint: skipped
        assert sorted(run_find_all(session, query, 3)) == expected
        session.execute(text("INSERT INTO ids VALUES (NULL, 5)"))
        with pytest.raises(ValueError, match="NULL id"):
            run_find_all(session, query, 3)
        session.rollback()
        session.execute(text("INSERT INTO ids VALUES (57, 1)"))  # 57 again
        with pytest.raises(ValueError, match="unique ids"):
            run_clusters(session, query, 3)


def test_plain_rows_in_one_chunk_or_many_through_each_driver(plain_engine_of_driver) -> None:
    # Both forms of the rows' SQL on the server, in binary format through
    # psycopg 3 alone; the planner's estimate chooses between them.
    rows_sql = "SELECT i, i * 7919 FROM generate_series(-40, 40) AS i"
    expected = [(i, plain.to_unsigned(i * 7919)) for i in range(-40, 41)]
    with plain_engine_of_driver.connect() as conn:
        execute = plain.binary_execute(conn.connection.dbapi_connection)
        assert (execute is None) == (plain_engine_of_driver.dialect.driver != "psycopg")
        execute = execute or (lambda sql: conn.execute(text(sql)))
        for chunks in (1, plain.STREAM_CHUNKS):
            ids, fps = plain.rows_of_chunks(execute(plain.rows_in_chunks_sql(rows_sql, chunks=chunks)))
            assert sorted(zip(ids.tolist(), fps.tolist())) == expected
            assert [a.size for a in plain.rows_of_chunks(execute(plain.rows_in_chunks_sql(
                rows_sql + " WHERE false", chunks=chunks)))] == [0, 0]
            for bad, error in [("SELECT NULL::bigint, 5", "NULL id"), ("SELECT 1, 2 UNION ALL SELECT NULL, 3", "NULL id"),
                               ("SELECT 7, 2 UNION ALL SELECT 7, 3", "unique ids")]:
                with pytest.raises(ValueError, match=error):
                    plain.rows_of_chunks(execute(plain.rows_in_chunks_sql(bad, chunks=chunks)))
        assert sorted(zip(*(a.tolist() for a in plain.stream_rows(execute, rows_sql)))) == expected
        assert plain.chunks_for(81) == 1
        assert plain.chunks_for(plain.ONE_CHUNK_ROWS + 1) == plain.STREAM_CHUNKS
