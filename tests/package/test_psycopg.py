"""pysimhash_sql.psycopg: simhash64 adapters for psycopg 3, against a real server."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg.adapt import PyFormat

from pysimhash_sql.psycopg import (
    Fingerprint,
    SimhashNotInstalled,
    register_simhash,
    register_simhash_async,
)

EDGES = [0, 1, 2**63 - 1, 2**63, 0xDEADBEEFCAFEBABE, 2**64 - 1]


@pytest.fixture
def conn(db: psycopg.Connection) -> psycopg.Connection:
    register_simhash(db)
    return db


def server_params(postgresql_proc, dbname: str) -> dict:
    return dict(
        host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user, dbname=dbname
    )


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_values_round_trip_as_unsigned_ints(conn: psycopg.Connection, binary: bool) -> None:
    for value in EDGES:
        cur = conn.cursor(binary=binary)
        row = cur.execute(
            "SELECT %s, pg_typeof(%s)::text, %s::text::simhash64", (Fingerprint(value),) * 2 + (str(value),)
        ).fetchone()
        assert row == (value, "simhash64", value)
        assert type(row[0]) is int


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_arrays_round_trip(conn: psycopg.Connection, binary: bool) -> None:
    fingerprints = [Fingerprint(v) for v in EDGES]
    cur = conn.cursor(binary=binary)
    got, typ = cur.execute("SELECT %s, pg_typeof(%s)::text", (fingerprints, fingerprints)).fetchone()
    assert (got, typ) == (EDGES, "simhash64[]")
    literal = "{" + ",".join(map(str, EDGES)) + "}"
    assert cur.execute("SELECT %s::simhash64[]", (literal,)).fetchone()[0] == EDGES


def test_binary_copy_reads_ints(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE t (fp simhash64)")
    with conn.cursor().copy("COPY t FROM STDIN") as copy:
        for value in EDGES:
            copy.write_row((str(value),))
    with conn.cursor(binary=True) as cur:
        assert [r[0] for r in cur.execute("SELECT fp FROM t ORDER BY fp")] == EDGES


@pytest.mark.parametrize("bad", [-1, 2**64, -(2**70)])
def test_out_of_range_rejected_in_python(bad: int) -> None:
    with pytest.raises(ValueError, match=r"out of range 0 \.\. 2\*\*64-1"):
        Fingerprint(bad)


@pytest.mark.parametrize("bad", [True, 1.0, "1"])
def test_non_ints_rejected(bad) -> None:
    with pytest.raises(TypeError):
        Fingerprint(bad)


def test_plain_ints_keep_their_usual_types(conn: psycopg.Connection) -> None:
    assert conn.execute("SELECT pg_typeof(%s)::text, 1 LIMIT %s", (5, 1)).fetchone() == ("smallint", 1)


def test_missing_extension_says_what_to_do(db: psycopg.Connection, postgresql_proc) -> None:
    db.execute("CREATE DATABASE no_simhash TEMPLATE template0")
    with psycopg.connect(**server_params(postgresql_proc, "no_simhash")) as bare:
        with pytest.raises(SimhashNotInstalled, match="CREATE EXTENSION simhash"):
            register_simhash(bare)


def test_dumper_classes_are_cached_per_oid(db: psycopg.Connection, postgresql_proc) -> None:
    register_simhash(db)
    dumper = db.adapters.get_dumper(Fingerprint, PyFormat.TEXT)
    dbname = db.info.dbname
    for _ in range(3):
        with psycopg.connect(**server_params(postgresql_proc, dbname)) as other:
            register_simhash(other)
            assert other.adapters.get_dumper(Fingerprint, PyFormat.TEXT) is dumper
            assert other.adapters.get_dumper(int, PyFormat.TEXT) is not dumper


def test_async_registration_round_trips(db: psycopg.Connection, postgresql_proc) -> None:
    async def main() -> list[tuple]:
        params = server_params(postgresql_proc, db.info.dbname)
        async with await psycopg.AsyncConnection.connect(**params) as aconn:
            await register_simhash_async(aconn)
            results = []
            for binary in (False, True):
                cur = aconn.cursor(binary=binary)
                await cur.execute("SELECT %s, %s::simhash64[]", (Fingerprint(2**64 - 1), "{0,7}"))
                results.append(await cur.fetchone())
            return results

    assert asyncio.run(main()) == [(2**64 - 1, [0, 7])] * 2
