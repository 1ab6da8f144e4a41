"""pytest fixtures for testing code that uses simhash (entry point ``pytest11``).

A throwaway PostgreSQL server whose template database has ``CREATE EXTENSION
simhash`` done, so every test database cloned from it has the extension; plus
connections and SQLAlchemy engines with the simhash64 adapters registered.
Nothing starts unless a test asks for a fixture::

    def test_my_model(simhash_engine):
        Base.metadata.create_all(simhash_engine)
        ...

Fixtures: ``simhash_postgresql_proc`` (the server, session-wide),
``simhash_postgresql`` (a psycopg connection to a fresh database),
``simhash_db`` (the same in autocommit, adapters registered),
``simhash_url``, ``simhash_engine``, ``simhash_async_engine``; under
pytest-django, ``simhash_django_db_settings`` (Django's test databases on the
server, cloned from the template)::

    @pytest.fixture(scope="session")              # conftest.py
    def django_db_modify_db_settings(simhash_django_db_settings):
        pass

The plugin is installed with the package, so it loads in every pytest run of
the environment: loading imports nothing but pytest.  The fixtures import
what they need (psycopg, SQLAlchemy) when a test uses them, and fail with
the extra to install if it is missing.

The server is a ``pysimhash_sql.throwaway.ThrowawayServer`` (the one way the
project starts servers) of the PostgreSQL in ``SIMHASH_PG_BINDIR``, else the
one ``pg_config --bindir`` names, else the one whose pg_ctl is on ``PATH``.
PostgreSQL refuses to run as root: when the tests run as root the server runs
as the user named by ``--simhash-pg-user``, the ``simhash_pg_user`` ini option
or ``SIMHASH_PG_USER`` (default ``nobody``), its data directory under the
temporary directory (``TMPDIR``) owned by that user.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from .server_user import DEFAULT_USER

EXTRA = "pysimhash-sql[pytest]"
USER_OPTION = "simhash_pg_user"


def pytest_addoption(parser: pytest.Parser) -> None:
    help = f"when tests run as root, the user the simhash server runs as (default: $SIMHASH_PG_USER, else {DEFAULT_USER})"
    parser.addoption("--simhash-pg-user", dest=USER_OPTION, help=help)
    parser.addini(USER_OPTION, help=help)


def _require(module: str, fixture: str, extra: str = EXTRA) -> ModuleType:
    """``module``, or a clean failure of the fixture naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    pytest.fail(f"the {fixture} fixture needs {module.split('.')[0]}: pip install '{extra}'", pytrace=False)


def _server_user(config: pytest.Config) -> str | None:
    """Who runs the server: None (the current user) unless the tests run as root."""
    if os.geteuid() != 0:
        return None
    return (config.getoption(USER_OPTION) or config.getini(USER_OPTION)
            or os.environ.get("SIMHASH_PG_USER") or DEFAULT_USER)


def _bindir() -> Path:
    """SIMHASH_PG_BINDIR, else pg_config's bindir, else where pg_ctl is on PATH."""
    if "SIMHASH_PG_BINDIR" in os.environ:
        return Path(os.environ["SIMHASH_PG_BINDIR"])
    try:
        bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if os.access(os.path.join(bindir, "pg_ctl"), os.X_OK):
            return Path(bindir)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = shutil.which("pg_ctl")
    if found is None:
        pytest.fail("no PostgreSQL found: set SIMHASH_PG_BINDIR, or put pg_config on PATH", pytrace=False)
    return Path(found).parent


TEMPLATE = "simhash_template"
TEST_DATABASE = "tests"


@pytest.fixture(scope="session")
def simhash_postgresql_proc(request: pytest.FixtureRequest):
    """The server (a pysimhash_sql.throwaway.ThrowawayServer: ``host``,
    ``port``, ``user``, ``dsn(dbname)``, ...), with a template database that
    has the extension."""
    psycopg = _require("psycopg", "simhash_postgresql_proc")
    from .throwaway import ThrowawayServer

    user = _server_user(request.config)
    # A short private directory of its own, not one below pytest's temporary
    # root: the server user (as root) cannot enter that root, and the Unix
    # socket's path there (runpytest-0/.../.s.PGSQL.port) can outgrow the
    # 107 bytes a socket path may have.
    directory = Path(tempfile.mkdtemp(prefix="pysimhash-sql-postgresql-"))
    try:
        with ThrowawayServer(_bindir(), directory, user=user) as server:
            with psycopg.connect(server.dsn(), autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{TEMPLATE}"')
            with psycopg.connect(server.dsn(TEMPLATE), autocommit=True) as template:
                template.execute("CREATE EXTENSION IF NOT EXISTS simhash")
            yield server
    except ValueError as error:  # an unknown server user
        pytest.fail(str(error), pytrace=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def simhash_postgresql(simhash_postgresql_proc):
    """A psycopg connection to a fresh database (``tests``) cloned from the
    template: the extension is there."""
    psycopg = _require("psycopg", "simhash_postgresql")
    server = simhash_postgresql_proc
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{TEST_DATABASE}" TEMPLATE "{TEMPLATE}"')
    try:
        with psycopg.connect(server.dsn(TEST_DATABASE, tcp=True)) as conn:
            yield conn
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{TEST_DATABASE}" WITH (FORCE)')


@pytest.fixture
def simhash_db(simhash_postgresql):
    """An autocommit connection to a fresh database with simhash, adapters registered."""
    register = _require("pysimhash_sql.psycopg", "simhash_db").register_simhash
    simhash_postgresql.autocommit = True
    register(simhash_postgresql)
    return simhash_postgresql


def _url(conn, fixture: str):
    sqlalchemy = _require("sqlalchemy", fixture)
    info = conn.info
    return sqlalchemy.URL.create(
        "postgresql+psycopg", username=info.user, password=info.password or None,
        host=info.host, port=info.port, database=info.dbname,
    )


@pytest.fixture
def simhash_url(simhash_postgresql):
    """The SQLAlchemy URL (psycopg driver) of the fresh database."""
    return _url(simhash_postgresql, "simhash_url")


@pytest.fixture
def simhash_engine(simhash_url):
    """A SQLAlchemy Engine on the fresh database, simhash64 adapters registered."""
    sqlalchemy = _require("sqlalchemy", "simhash_engine")
    register = _require("pysimhash_sql.sqlalchemy", "simhash_engine").register_simhash
    engine = sqlalchemy.create_engine(simhash_url)
    register(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def simhash_async_engine(simhash_url):
    """An AsyncEngine (psycopg async) on the fresh database, adapters registered.

    It pools nothing, so it may be used from any event loop (asyncio.run in a
    test, or an async test plugin's loop)."""
    fixture = "simhash_async_engine"
    create_async_engine = _require("sqlalchemy.ext.asyncio", fixture).create_async_engine
    _require("greenlet", fixture)  # SQLAlchemy's asyncio extra
    null_pool = _require("sqlalchemy.pool", fixture).NullPool
    register = _require("pysimhash_sql.sqlalchemy", fixture).register_simhash
    engine = create_async_engine(simhash_url, poolclass=null_pool)
    register(engine)
    yield engine
    asyncio.run(engine.dispose())


@pytest.fixture(scope="session")
def simhash_django_db_settings(simhash_postgresql_proc):
    """Points every PostgreSQL database of Django's settings at the server, its
    test database made from the template (``TEST["TEMPLATE"]``), so it has the
    extension before migrations run.  For pytest-django, whose databases are
    set up after its ``django_db_modify_db_settings`` fixture: override that
    with this one in conftest.py (the module docstring shows how)."""
    settings = _require("django.conf", "simhash_django_db_settings", "pysimhash-sql[django]").settings
    server = simhash_postgresql_proc
    for database in settings.DATABASES.values():
        if database.get("ENGINE") == "django.db.backends.postgresql":
            database.update(HOST=server.host, PORT=str(server.port), USER=server.user, PASSWORD="")
            database.setdefault("TEST", {})["TEMPLATE"] = TEMPLATE
    return settings.DATABASES
