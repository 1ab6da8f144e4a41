"""pytest fixtures for testing code that uses simhash (entry point ``pytest11``).

A throwaway PostgreSQL server (pytest-postgresql) whose template database has
``CREATE EXTENSION simhash`` done, so every test database cloned from it has
the extension; plus connections and SQLAlchemy engines with the simhash64
adapters registered.  Nothing starts unless a test asks for a fixture::

    def test_my_model(simhash_engine):
        Base.metadata.create_all(simhash_engine)
        ...

Fixtures: ``simhash_postgresql_proc`` (the server, session-wide),
``simhash_postgresql`` (a psycopg connection to a fresh database),
``simhash_db`` (the same in autocommit, adapters registered),
``simhash_url``, ``simhash_engine``, ``simhash_async_engine``.

The server is run by the ``pg_ctl`` that ``SIMHASH_PG_CTL`` names, else by
this checkout's ``scripts/pg_ctl`` when the package runs from its source tree
(it runs the server as an unprivileged user when tests run as root), else by
pytest-postgresql's own choice (``--postgresql-exec``, or ``pg_config --bindir``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import psycopg
import pytest
from pytest_postgresql import factories
from sqlalchemy import URL, create_engine
from sqlalchemy.pool import NullPool

from .psycopg import register_simhash as register_connection
from .sqlalchemy import register_simhash as register_engine

_CHECKOUT_PG_CTL = Path(__file__).resolve().parents[1] / "scripts" / "pg_ctl"


def _pg_ctl() -> str | None:
    if "SIMHASH_PG_CTL" in os.environ:
        return os.environ["SIMHASH_PG_CTL"]
    return str(_CHECKOUT_PG_CTL) if _CHECKOUT_PG_CTL.is_file() else None


def create_simhash_extension(
    host: str, port: int, user: str, dbname: str, password: str | None, **_: object
) -> None:
    """pytest-postgresql loader: create the extension in the template database."""
    with psycopg.connect(
        host=host, port=port, user=user, dbname=dbname, password=password, autocommit=True
    ) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")


simhash_postgresql_proc = factories.postgresql_proc(
    executable=_pg_ctl(), load=[create_simhash_extension]
)
simhash_postgresql = factories.postgresql("simhash_postgresql_proc")


@pytest.fixture
def simhash_db(simhash_postgresql: psycopg.Connection) -> psycopg.Connection:
    """An autocommit connection to a fresh database with simhash, adapters registered."""
    simhash_postgresql.autocommit = True
    register_connection(simhash_postgresql)
    return simhash_postgresql


def _url(conn: psycopg.Connection, driver: str = "psycopg") -> URL:
    info = conn.info
    return URL.create(
        f"postgresql+{driver}",
        username=info.user,
        password=info.password or None,
        host=info.host,
        port=info.port,
        database=info.dbname,
    )


@pytest.fixture
def simhash_url(simhash_postgresql: psycopg.Connection) -> URL:
    """The SQLAlchemy URL (psycopg driver) of the fresh database."""
    return _url(simhash_postgresql)


@pytest.fixture
def simhash_engine(simhash_url: URL):
    """A SQLAlchemy Engine on the fresh database, simhash64 adapters registered."""
    engine = create_engine(simhash_url)
    register_engine(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def simhash_async_engine(simhash_url: URL):
    """An AsyncEngine (psycopg async) on the fresh database, adapters registered.

    It pools nothing, so it may be used from any event loop (asyncio.run in a
    test, or an async test plugin's loop)."""
    from sqlalchemy.ext.asyncio import create_async_engine  # needs greenlet: only here

    engine = create_async_engine(simhash_url, poolclass=NullPool)
    register_engine(engine)
    yield engine
    asyncio.run(engine.dispose())
