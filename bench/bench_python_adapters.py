"""What the Python adapters cost: reading and writing simhash64 through
psycopg (text and binary), psycopg2, asyncpg and SQLAlchemy, next to plain
bigint in the same run.

Prints rows/s per path; the ratio column is bigint's time over simhash64's on
the same path (1.00 = no overhead).
"""

from __future__ import annotations

import asyncio
import os

import asyncpg
import psycopg
import psycopg2
from sqlalchemy import BigInteger, Column, MetaData, Table, create_engine, insert, select
from sqlalchemy.pool import NullPool

from benchlib import best_of, quick_run

from pysimhash_sql import asyncpg as simhash_asyncpg
from pysimhash_sql import psycopg2 as simhash_psycopg2
from pysimhash_sql.psycopg import Fingerprint, register_simhash
from pysimhash_sql.sqlalchemy import SimHash64


def psycopg_read(dsn: str, column: str, binary: bool) -> float:
    with psycopg.connect(dsn) as conn:
        register_simhash(conn)
        return best_of(3, lambda: conn.cursor(binary=binary).execute(f"SELECT {column} FROM bench_values").fetchall())[0]


def psycopg2_read(dsn: str, column: str) -> float:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        simhash_psycopg2.register_simhash(conn)

        def run() -> None:
            cur.execute(f"SELECT {column} FROM bench_values")
            cur.fetchall()

        return best_of(3, run)[0]


def asyncpg_read(dsn: str, column: str) -> float:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    with asyncio.Runner() as runner:
        conn = runner.run(asyncpg.connect(host=params["host"], port=int(params.get("port", 5432)),
                                          user=params.get("user"), database=params["dbname"]))
        runner.run(simhash_asyncpg.register_simhash(conn))
        try:
            return best_of(3, lambda: runner.run(conn.fetch(f"SELECT {column} FROM bench_values")))[0]
        finally:
            runner.run(conn.close())


def sqlalchemy_url(dsn: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    host = params.get("host", "")
    return f"postgresql+psycopg://{params.get('user', '')}@/{params['dbname']}?host={host}&port={params.get('port', 5432)}"


def main() -> None:
    quick = quick_run(__doc__)
    n_read = 200_000 if quick else 1_000_000
    n_write = 20_000 if quick else 100_000
    dsn = os.environ["SIMHASH_DSN"]

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        conn.execute("DROP TABLE IF EXISTS bench_values, bench_writes")
        conn.execute(
            "CREATE TABLE bench_values AS SELECT hashint8extended(g, 0) AS b,"
            f" hashint8extended(g, 0)::simhash64 AS s FROM generate_series(1, {n_read}) g"
        )

    rows = []
    for binary in (False, True):
        fmt = "binary" if binary else "text"
        rows.append((f"psycopg read ({fmt})", n_read, psycopg_read(dsn, "b", binary), psycopg_read(dsn, "s", binary)))
    rows.append(("psycopg2 read", n_read, psycopg2_read(dsn, "b"), psycopg2_read(dsn, "s")))
    rows.append(("asyncpg read (binary)", n_read, asyncpg_read(dsn, "b"), asyncpg_read(dsn, "s")))

    engine = create_engine(sqlalchemy_url(dsn), poolclass=NullPool)
    table = Table("bench_values", MetaData(), Column("b", BigInteger), Column("s", SimHash64))
    with engine.connect() as conn:
        rows.append((
            "SQLAlchemy read",
            n_read,
            best_of(3, lambda: conn.execute(select(table.c.b)).all())[0],
            best_of(3, lambda: conn.execute(select(table.c.s)).all())[0],
        ))

    writes = Table("bench_writes", MetaData(), Column("b", BigInteger), Column("s", SimHash64))
    values = [2**63 + i * 7919 for i in range(n_write)]
    with engine.begin() as conn:
        writes.create(conn)

    def write(column: str, convert) -> float:
        def run() -> None:
            with engine.begin() as conn:
                conn.execute(writes.delete())
                conn.execute(insert(writes), [{column: convert(v)} for v in values])

        return best_of(3, run)[0]

    rows.append(("SQLAlchemy insert", n_write, write("b", lambda v: v - 2**64), write("s", int)))
    with psycopg.connect(dsn) as conn:
        register_simhash(conn)

        def copy(column: str, convert) -> float:
            def run() -> None:
                conn.execute("TRUNCATE bench_writes")
                with conn.cursor().copy(f"COPY bench_writes ({column}) FROM STDIN (FORMAT binary)") as cp:
                    cp.set_types(["int8" if column == "b" else "simhash64"])
                    for v in values:
                        cp.write_row((convert(v),))
                conn.commit()

            return best_of(3, run)[0]

        rows.append(("psycopg COPY binary", n_write, copy("b", lambda v: v - 2**64), copy("s", Fingerprint)))
    engine.dispose()

    print(f"{'path':<24}{'rows':>10}{'bigint rows/s':>16}{'simhash64 rows/s':>18}{'ratio':>8}")
    for name, n, t_bigint, t_simhash in rows:
        print(f"{name:<24}{n:>10}{n / t_bigint:>16,.0f}{n / t_simhash:>18,.0f}{t_bigint / t_simhash:>8.2f}")


if __name__ == "__main__":
    main()
