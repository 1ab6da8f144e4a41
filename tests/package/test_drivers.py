"""Every driver the package supports, through the same tests: fingerprints on
both sides of 2**63 as plain int parameters (round trip, ``%s::simhash64``,
``hamming_within``, ``=``, ``= ANY``), with and without the driver's adapters
registered, against the real server.  SQLAlchemy runs over each of its
drivers, Core ``text()`` and ORM alike; pandas reads and writes uint64."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from types import SimpleNamespace

import asyncpg
import pandas as pd
import psycopg
import psycopg2
import pytest
from sqlalchemy import BigInteger, create_engine, select, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.pool import NullPool

from pysimhash_sql import asyncpg as simhash_asyncpg
from pysimhash_sql import psycopg as simhash_psycopg
from pysimhash_sql import psycopg2 as simhash_psycopg2
from pysimhash_sql.sqlalchemy import SimHash64, register_simhash

HALF = 2**63
# Each integer type a driver may choose (smallint ... numeric), both sides of 2**63.
VALUES = [0, 1, 5, 2**15, 2**31, HALF - 1, HALF, HALF + 1, 13893055204574190055, 2**64 - 1]


def clustered(seed: int, n: int = 400) -> list[int]:
    """Fingerprints in tight groups around centres on both sides of 2**63."""
    rng = random.Random(seed)
    centres = [rng.getrandbits(63), HALF | rng.getrandbits(63), 0, 2**64 - 1, HALF, HALF - 1]
    return [c ^ sum(1 << b for b in rng.sample(range(64), rng.randint(0, 5))) for c in rng.choices(centres, k=n)]


class Client:
    """Runs a query with named parameters, ``{name}`` in the text, through one
    driver; returns the rows.  ``typed``: simhash64 results come back as int."""

    def __init__(self, run: Callable[[str, dict], list[tuple]], typed: bool, close: Callable[[], None]) -> None:
        self.run, self.typed, self.close = run, typed, close

    def rows(self, sql: str, **params) -> list[tuple]:
        return self.run(sql, params)

    def fingerprints(self, sql: str, **params) -> list[int]:
        """The first column, simhash64 values, checked for their Python type."""
        column = [row[0] for row in self.rows(sql, **params)]
        assert all(isinstance(v, int if self.typed else str) for v in column), column
        return [int(v) for v in column]


def named(sql: str, style: str, params: dict) -> tuple[str, object]:
    """sql with {name} placeholders in a driver's parameter style."""
    if style == "pyformat":
        return sql.format(**{k: f"%({k})s" for k in params}), params
    if style == "named":  # in parentheses: SQLAlchemy's text() reads ":v::simhash64" as no parameter
        return sql.format(**{k: f"(:{k})" for k in params}), params
    order = list(params)
    return sql.format(**{k: f"${order.index(k) + 1}" for k in params}), [params[k] for k in order]


def dbapi_client(conn, register: Callable, registered: bool) -> Client:
    """A client on a DB-API connection (psycopg 3 or psycopg2) in autocommit mode."""
    if registered:
        register(conn)

    def run(sql, params):
        with conn.cursor() as cur:
            cur.execute(*named(sql, "pyformat", params))
            return cur.fetchall() if cur.description else []

    return Client(run, registered, conn.close)


def psycopg_client(info, registered: bool) -> Client:
    return dbapi_client(psycopg.connect(**info, autocommit=True), simhash_psycopg.register_simhash, registered)


def psycopg2_client(info, registered: bool) -> Client:
    conn = psycopg2.connect(**info)
    conn.autocommit = True
    return dbapi_client(conn, simhash_psycopg2.register_simhash, registered)


def asyncpg_params(info: dict) -> dict:
    return {("database" if k == "dbname" else k): v for k, v in info.items()}


def asyncpg_client(info, registered: bool) -> Client:
    runner = asyncio.Runner()
    conn = runner.run(asyncpg.connect(**asyncpg_params(info)))
    if registered:
        runner.run(simhash_asyncpg.register_simhash(conn))

    def run(sql, params):
        query, args = named(sql, "numeric", params)
        return [tuple(r) for r in runner.run(conn.fetch(query, *args))]

    def close():
        runner.run(conn.close())
        runner.close()

    return Client(run, registered, close)


ASYNC_DRIVERS = {"asyncpg", "psycopg_async"}


def sqlalchemy_engine(url, driver: str, registered: bool):
    """An Engine, or an AsyncEngine for the async drivers."""
    if driver in ASYNC_DRIVERS:
        engine = create_async_engine(url.set(drivername=f"postgresql+{driver.removesuffix('_async')}"),
                                     poolclass=NullPool)
    else:
        engine = create_engine(url.set(drivername=f"postgresql+{driver}"), poolclass=NullPool)
    if registered:
        register_simhash(engine)
    return engine


def run_sync(engine, body: Callable):
    """body(sync Connection) in a committed transaction, for any engine."""
    if not hasattr(engine, "sync_engine"):
        with engine.begin() as conn:
            return body(conn)

    async def main():
        async with engine.begin() as conn:
            result = await conn.run_sync(body)
        await engine.dispose()
        return result

    return asyncio.run(main())


def sqlalchemy_client(url, driver: str, registered: bool) -> Client:
    engine = sqlalchemy_engine(url, driver, registered)

    def run(sql, params):
        def body(conn):
            result = conn.execute(text(named(sql, "named", params)[0]), params)
            return [tuple(r) for r in result] if result.returns_rows else []

        return run_sync(engine, body)

    close = (lambda: None) if driver in ASYNC_DRIVERS else engine.dispose
    return Client(run, registered, close)


# (client, registered): asyncpg without its codec refuses int parameters (as
# documented: register_simhash), so it is tested registered only.
CLIENTS = {
    "psycopg": lambda info, url: psycopg_client(info, False),
    "psycopg-registered": lambda info, url: psycopg_client(info, True),
    "psycopg2": lambda info, url: psycopg2_client(info, False),
    "psycopg2-registered": lambda info, url: psycopg2_client(info, True),
    "asyncpg-registered": lambda info, url: asyncpg_client(info, True),
    "sqlalchemy-psycopg": lambda info, url: sqlalchemy_client(url, "psycopg", False),
    "sqlalchemy-psycopg-registered": lambda info, url: sqlalchemy_client(url, "psycopg", True),
    "sqlalchemy-psycopg2": lambda info, url: sqlalchemy_client(url, "psycopg2", False),
    "sqlalchemy-psycopg2-registered": lambda info, url: sqlalchemy_client(url, "psycopg2", True),
    "sqlalchemy-asyncpg-registered": lambda info, url: sqlalchemy_client(url, "asyncpg", True),
    "sqlalchemy-psycopg_async-registered": lambda info, url: sqlalchemy_client(url, "psycopg_async", True),
}


def connection_info(conn: psycopg.Connection) -> dict:
    info = conn.info
    return {"host": info.host, "port": info.port, "user": info.user, "dbname": info.dbname}


@pytest.fixture(params=sorted(CLIENTS))
def client(request, db, simhash_url):
    made = CLIENTS[request.param](connection_info(db), simhash_url)
    yield made
    made.close()


def test_plain_int_parameters_round_trip(client: Client) -> None:
    client.rows("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    for i, value in enumerate(VALUES):
        client.rows("INSERT INTO docs VALUES ({id}, {fp})", id=i, fp=value)
    assert client.fingerprints("SELECT fp FROM docs ORDER BY id") == VALUES
    for value in VALUES:
        assert client.fingerprints("SELECT {v}::simhash64", v=value) == [value]
        assert client.fingerprints("SELECT fp FROM docs WHERE fp = {v}", v=value) == [value]


def test_values_that_carry_their_text_spec_are_ints_to_every_driver(client: Client) -> None:
    """hashing's fingerprints (text_spec.TextFingerprint) go wherever an int goes."""
    from pysimhash_sql import hashing

    texts = [f"near-duplicate {i} 近似重复 {i}" for i in range(20)]
    values = [hashing.simhash(t) for t in texts] + [hashing.simhash_v2(t) for t in texts]
    assert any(v >= 2**63 for v in values) and any(v < 2**63 for v in values)
    for value in values:
        assert client.fingerprints("SELECT {v}::simhash64", v=value) == [value]


def test_within_matches_brute_force(client: Client, db: psycopg.Connection) -> None:
    stored = clustered(seed=11)
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    db.execute("INSERT INTO docs SELECT i, fp::simhash64 FROM unnest(%s::text[]) WITH ORDINALITY u(fp, i)",
               ([str(v) for v in stored],))
    db.execute("CREATE INDEX ON docs USING gin (fp)")
    queries = stored[:20] + [v ^ 0b101 for v in stored[20:40]] + VALUES
    assert any(q >= HALF for q in queries) and any(q < HALF for q in queries)
    for q in queries:
        got = {row[0] for row in client.rows("SELECT id FROM docs WHERE hamming_within(fp, {q}, 3)", q=q)}
        assert got == {i for i, v in enumerate(stored, 1) if (v ^ q).bit_count() <= 3}, q
        distances = dict(client.rows("SELECT id, fp <~> {q} FROM docs", q=q))
        assert distances == {i: (v ^ q).bit_count() for i, v in enumerate(stored, 1)}


def test_any_of_a_list(client: Client, db: psycopg.Connection) -> None:
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    db.execute("INSERT INTO docs SELECT i, fp::simhash64 FROM unnest(%s::text[]) WITH ORDINALITY u(fp, i)",
               ([str(v) for v in VALUES],))
    for wanted in ([0, 5], [HALF, 2**64 - 1], [1, 13893055204574190055]):
        rows = client.rows("SELECT id FROM docs WHERE fp = ANY({qs}) ORDER BY id", qs=wanted)
        assert [VALUES[i - 1] for (i,) in rows] == sorted(wanted)


class Base(DeclarativeBase):
    pass


class Doc(Base):
    __tablename__ = "orm_docs"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    fp: Mapped[int] = mapped_column(SimHash64)


@pytest.mark.parametrize("registered", [False, True], ids=["plain", "registered"])
@pytest.mark.parametrize("driver", ["psycopg", "psycopg2", "asyncpg", "psycopg_async"])
def test_orm_round_trip_and_within(simhash_url, driver: str, registered: bool) -> None:
    engine = sqlalchemy_engine(simhash_url, driver, registered)
    stored = clustered(seed=3, n=200) + VALUES
    q = 13893055204574190055

    def body(conn):
        Base.metadata.create_all(conn)
        with Session(bind=conn) as session:
            session.add_all(Doc(id=i, fp=v) for i, v in enumerate(stored))
            session.flush()
            read = dict(session.execute(select(Doc.id, Doc.fp)).all())
            within = set(session.scalars(select(Doc.id).where(Doc.fp.within(q, 20))))
            distances = dict(session.execute(select(Doc.id, Doc.fp.hamming_distance(HALF))).all())
        Base.metadata.drop_all(conn)
        return read, within, distances

    read, within, distances = run_sync(engine, body)
    assert read == dict(enumerate(stored))
    assert within == {i for i, v in enumerate(stored) if (v ^ q).bit_count() <= 20}
    assert distances == {i: (v ^ HALF).bit_count() for i, v in enumerate(stored)}


def test_unsupported_driver_is_refused_up_front(simhash_url) -> None:
    engine = create_engine(simhash_url.set(drivername="postgresql+pg8000"), module=SimpleNamespace(paramstyle="format"))
    with pytest.raises(ValueError, match="supports the asyncpg, psycopg, psycopg2 drivers, not pg8000"):
        register_simhash(engine)


def test_raw_asyncpg_pool_with_the_codec(db: psycopg.Connection) -> None:
    """asyncpg pools register the codec on each connection they open (init=)."""
    info = asyncpg_params(connection_info(db))

    async def main():
        async with asyncpg.create_pool(**info, min_size=2, max_size=2, init=simhash_asyncpg.register_simhash) as pool:
            return await asyncio.gather(*(pool.fetchval("SELECT $1::simhash64", v) for v in VALUES))

    assert asyncio.run(main()) == VALUES


@pytest.mark.parametrize("module", [simhash_psycopg, simhash_psycopg2, simhash_asyncpg], ids=lambda m: m.__name__)
def test_missing_extension_says_what_to_do(db: psycopg.Connection, module) -> None:
    db.execute("DROP EXTENSION simhash")
    info = connection_info(db)
    with pytest.raises(module.SimhashNotInstalled, match="CREATE EXTENSION simhash"):
        if module is simhash_asyncpg:
            asyncpg_client(info, registered=True)
        elif module is simhash_psycopg2:
            psycopg2_client(info, registered=True)
        else:
            psycopg_client(info, registered=True)


def test_pandas_reads_and_writes_uint64(simhash_engine) -> None:
    frame = pd.DataFrame({"id": range(len(VALUES)), "fp": pd.Series(VALUES, dtype="uint64")})
    frame.to_sql("pandas_docs", simhash_engine, index=False, dtype={"fp": SimHash64()})
    read = pd.read_sql(text("SELECT id, fp FROM pandas_docs ORDER BY id"), simhash_engine, dtype={"fp": "uint64"})
    assert read["fp"].dtype == "uint64"
    assert read["fp"].tolist() == VALUES
