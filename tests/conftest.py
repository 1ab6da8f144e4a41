"""Test fixtures: a real PostgreSQL server with the simhash extension.

The server is started by pytest-postgresql through scripts/pg_ctl, which runs
it as an unprivileged user when the tests run as root, from the private
installation `make test` builds (SIMHASH_PG_BINDIR), or else from the
PostgreSQL that ``pg_config --bindir`` names (after ``make install``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import psycopg
import pytest
from pytest_postgresql import factories

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Give each checkout its own temporary root: sessions running at once in
    several checkouts would otherwise share /tmp/pytest-of-USER, and each
    prunes the others' directories (servers then die mid-test)."""
    if config.option.basetemp is None:
        checkout = hashlib.md5(str(ROOT).encode()).hexdigest()[:12]
        config.option.basetemp = Path(tempfile.gettempdir()) / f"pysimhash-sql-pytest-{checkout}"


def _create_extension(
    host: str, port: int, user: str, dbname: str, password: str | None, **_: object
) -> None:
    with psycopg.connect(
        host=host, port=port, user=user, dbname=dbname, password=password, autocommit=True
    ) as conn:
        conn.execute("CREATE EXTENSION simhash")


postgresql_proc = factories.postgresql_proc(
    executable=os.environ.get("SIMHASH_PG_CTL", str(ROOT / "scripts" / "pg_ctl")),
    load=[_create_extension],
)
postgresql = factories.postgresql("postgresql_proc")


@pytest.fixture
def db(postgresql: psycopg.Connection) -> psycopg.Connection:
    """A connection in autocommit mode to a fresh database with simhash created."""
    postgresql.autocommit = True
    return postgresql


@pytest.fixture(scope="session")
def shared_db(postgresql_proc) -> psycopg.Connection:
    """One database for read-only queries, shared by property tests (hypothesis
    runs a test body many times, so it cannot use a per-test database)."""
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user)
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute("CREATE DATABASE shared_readonly")
    conn = psycopg.connect(dbname="shared_readonly", autocommit=True, **server)
    conn.execute("CREATE EXTENSION simhash")
    yield conn
    conn.close()
