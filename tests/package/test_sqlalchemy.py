"""pysimhash_sql.sqlalchemy: the SimHash64 type, comparator, functions and index."""

from __future__ import annotations

import asyncio
import random

import pytest
from sqlalchemy import (
    BigInteger,
    Column,
    Integer,
    MetaData,
    Table,
    Text,
    create_engine,
    func,
    inspect,
    literal,
    select,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.schema import CreateIndex

from pysimhash_sql.sqlalchemy import GIN, MIH, SimHash64, index_method, simhash_index

EDGES = [0, 1, 2**63, 2**64 - 1]
PG = postgresql.dialect()


def popcount(x: int) -> int:
    return bin(x).count("1")


class Base(DeclarativeBase):
    pass


class Doc(Base):
    __tablename__ = "docs"
    __table_args__ = (simhash_index("docs_fp_idx", "fp", blocks=6, max_distance=3),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    fp: Mapped[int | None] = mapped_column(SimHash64)


def sql(clause) -> str:
    return str(clause.compile(dialect=PG))


@pytest.fixture(params=["adapters", "no adapters"])
def engine(request, simhash_engine, simhash_url):
    """The column must round-trip ints whether or not the driver adapters are on."""
    if request.param == "adapters":
        yield simhash_engine
        return
    bare = create_engine(simhash_url)
    yield bare
    bare.dispose()


@pytest.fixture
def docs_table(engine):
    Doc.__table__.create(engine)
    return engine


def test_orm_round_trip_of_extremes(docs_table) -> None:
    with Session(docs_table) as session:
        session.add_all([Doc(id=i, fp=v) for i, v in enumerate(EDGES)] + [Doc(id=99, fp=None)])
        session.commit()
    with Session(docs_table) as session:
        got = {d.id: d.fp for d in session.scalars(select(Doc))}
        assert got == {**dict(enumerate(EDGES)), 99: None}
        assert session.scalar(select(Doc.id).where(Doc.fp == 2**64 - 1)) == 3
        assert session.scalar(select(func.max(Doc.fp))) == 2**64 - 1


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_out_of_range_never_reaches_the_server(docs_table, bad: int) -> None:
    with Session(docs_table) as session:
        session.add(Doc(id=1, fp=bad))
        with pytest.raises(StatementError) as info:
            session.flush()
        assert isinstance(info.value.orig, ValueError)


def test_reflection_gives_simhash64(docs_table) -> None:
    reflected = Table("docs", MetaData(), autoload_with=docs_table)
    assert isinstance(reflected.c.fp.type, SimHash64)
    columns = {c["name"]: c["type"] for c in inspect(docs_table).get_columns("docs")}
    assert isinstance(columns["fp"], SimHash64)


def test_comparator_renders_operator_and_function() -> None:
    assert sql(Doc.fp.hamming_distance(5)) == "docs.fp <~> %(param_1)s"
    assert isinstance(Doc.fp.hamming_distance(5).type, Integer)
    assert sql(Doc.fp.within(5, 3)) == "hamming_within(docs.fp, %(param_1)s, %(hamming_within_1)s::INTEGER)"
    assert sql(Doc.fp.within(Doc.fp, 3)) == "hamming_within(docs.fp, docs.fp, %(hamming_within_1)s::INTEGER)"


def test_comparator_matches_brute_force(docs_table) -> None:
    rng = random.Random(5)
    values = [rng.getrandbits(64) for _ in range(300)]
    q = values[0] ^ 0b1011  # 3 bits from the first value
    with Session(docs_table) as session:
        session.add_all([Doc(id=i, fp=v) for i, v in enumerate(values)])
        session.commit()
        distances = dict(session.execute(select(Doc.id, Doc.fp.hamming_distance(q))).all())
        within = set(session.scalars(select(Doc.id).where(Doc.fp.within(q, 20))))
    assert distances == {i: popcount(v ^ q) for i, v in enumerate(values)}
    assert within == {i for i, v in enumerate(values) if popcount(v ^ q) <= 20}
    assert 0 in within


def test_typed_functions(simhash_engine) -> None:
    assert isinstance(func.simhash("a b c").type, SimHash64)
    assert isinstance(func.simhash_agg(literal(1)).type, SimHash64)
    assert isinstance(func.hamming_distance(1, 2).type, Integer)
    with simhash_engine.connect() as conn:
        fp = conn.scalar(select(func.simhash("The quick brown fox jumps over the lazy dog")))
        assert isinstance(fp, int) and 0 <= fp < 2**64
        hashes = select(func.unnest(literal([1, 2, 3], postgresql.ARRAY(BigInteger))).label("h")).subquery()
        assert conn.scalar(select(func.simhash_agg(hashes.c.h))) == 3  # bitwise vote of 1, 2, 3
        assert conn.scalar(select(func.simhash64_to_hex(literal(255, SimHash64())))) == "0x00000000000000ff"
        assert conn.scalar(select(func.simhash_tokens("Hello, World"))) == ["hello", "world"]


def test_literal_rendering() -> None:
    rendered = sql_literal(select(Doc.id).where(Doc.fp.within(2**64 - 1, 3)))
    assert "hamming_within(docs.fp, '18446744073709551615'::simhash64, 3)" in rendered


def test_index_ddl() -> None:
    (index,) = Doc.__table__.indexes
    assert sql(CreateIndex(index)) == (
        "CREATE INDEX docs_fp_idx ON docs USING gin (fp simhash64_ops (blocks = 6, max_distance = 3))"
        " WITH (fastupdate = off)"
    )
    other = Table("pages", MetaData(), Column("domain", Text()), Column("fp", SimHash64()))
    ddl = {
        "plain: simhash_mih": ({}, "CREATE INDEX ix ON pages USING simhash_mih (fp)"),
        "its runs": ({"runs": 4}, "CREATE INDEX ix ON pages USING simhash_mih (fp) WITH (runs = 4)"),
        "named": ({"method": "simhash_mih", "runs": 2}, "CREATE INDEX ix ON pages USING simhash_mih (fp) WITH (runs = 2)"),
        "GIN named": ({"method": "gin"}, "CREATE INDEX ix ON pages USING gin (fp simhash64_ops) WITH (fastupdate = off)"),
        # code written when GIN was the default: GIN's options, or a scope, keep making GIN
        "GIN's layout": ({"blocks": 4}, "CREATE INDEX ix ON pages USING gin (fp simhash64_ops (blocks = 4))"
                                        " WITH (fastupdate = off)"),
        "GIN's fastupdate": ({"fastupdate": False},
                             "CREATE INDEX ix ON pages USING gin (fp simhash64_ops) WITH (fastupdate = off)"),
        "scoped": ({"scope": [other.c.domain], "fastupdate": True},
                   "CREATE INDEX ix ON pages USING gin (domain, fp simhash64_ops) WITH (fastupdate = on)"),
        "scoped alone": ({"scope": [other.c.domain]},
                         "CREATE INDEX ix ON pages USING gin (domain, fp simhash64_ops) WITH (fastupdate = off)"),
    }
    for case, (options, expected) in ddl.items():
        assert sql(CreateIndex(simhash_index("ix", other.c.fp, **options))) == expected, case
    assert index_method(simhash_index("ix", "fp")) == MIH
    assert index_method(simhash_index("ix", "fp", scope=["domain"])) == GIN


@pytest.mark.parametrize("bad", [
    {"blocks": -1}, {"max_distance": "3); DROP TABLE x; --"}, {"blocks": True},
    {"method": "gin", "runs": 3}, {"method": "btree"}, {"method": "simhash_mih", "runs": "3) WITH (x = 1"},
    {"method": "simhash_mih", "blocks": 5}, {"method": "simhash_mih", "fastupdate": True},
    {"method": "simhash_mih", "scope": ["domain"]}, {"runs": 3, "scope": ["domain"]},
    {"runs": 3, "blocks": 5}, {"runs": 3, "fastupdate": False},
])
def test_index_parameters_are_validated(bad) -> None:
    with pytest.raises(ValueError):
        simhash_index("ix", "fp", **bad)


@pytest.mark.parametrize("method", ["the model's GIN", "the default"])
def test_within_uses_the_index(simhash_engine, method) -> None:
    with simhash_engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE docs AS SELECT g::bigint AS id, hashint8extended(g, 3)::simhash64 AS fp"
                " FROM generate_series(1, 100000) g"
            )
        )
        (index,) = Doc.__table__.indexes
        if method == "the default":
            index = simhash_index("docs_fp_idx", Table("docs", MetaData(), Column("fp", SimHash64())).c.fp)
        index.create(conn)
        kind = conn.scalar(text("SELECT amname FROM pg_class JOIN pg_am ON pg_am.oid = relam"
                                " WHERE relname = 'docs_fp_idx'"))
        conn.execute(text("ANALYZE docs"))
        query = select(Doc.id).where(Doc.fp.within(0x0123456789ABCDEF, 3))
        plan = "\n".join(conn.scalars(text("EXPLAIN " + sql_literal(query))))
    assert kind == (GIN if method == "the model's GIN" else MIH)
    assert "Bitmap Index Scan on docs_fp_idx" in plan, plan


def sql_literal(stmt) -> str:
    return str(stmt.compile(dialect=PG, compile_kwargs={"literal_binds": True}))


def test_async_engine_round_trip(simhash_async_engine) -> None:
    async def main():
        async with simhash_async_engine.begin() as conn:
            await conn.execute(text("CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64)"))
            await conn.execute(Doc.__table__.insert(), [{"id": i, "fp": v} for i, v in enumerate(EDGES)])
            rows = await conn.execute(select(Doc.fp, Doc.fp.hamming_distance(0)).order_by(Doc.id))
            raw = await conn.execute(text("SELECT '18446744073709551615'::simhash64"))
            return rows.all(), raw.scalar()

    rows, raw = asyncio.run(main())
    assert rows == [(v, bin(v).count("1")) for v in EDGES]
    assert raw == 2**64 - 1  # the adapters are registered on the async connections too
