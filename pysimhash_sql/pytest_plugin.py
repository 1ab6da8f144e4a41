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
``simhash_url``, ``simhash_engine``, ``simhash_async_engine``.

The plugin is installed with the package, so it loads in every pytest run of
the environment: loading imports nothing but pytest.  The fixtures import
what they need (pytest-postgresql, psycopg, SQLAlchemy) when a test uses
them, and fail with the extra to install if it is missing.

The server is run by the ``pg_ctl`` that ``SIMHASH_PG_CTL`` names, else
pytest-postgresql's ``--postgresql-exec`` (if that is a file), else the one
``pg_config --bindir`` names, else the one on ``PATH``; the rest of
pytest-postgresql's settings (host, port, user, ...) apply too.  PostgreSQL
refuses to run as root: when the tests run as root the server runs as the
user named by ``--simhash-pg-user``, the ``simhash_pg_user`` ini option or
``SIMHASH_PG_USER`` (default ``nobody``), its data directory under the
temporary directory (``TMPDIR``) owned by that user.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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


def _require(module: str, fixture: str) -> ModuleType:
    """``module``, or a clean failure of the fixture naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    pytest.fail(f"the {fixture} fixture needs {module.split('.')[0]}: pip install '{EXTRA}'", pytrace=False)


def _server_user(config: pytest.Config) -> str | None:
    """Who runs the server: None (the current user) unless the tests run as root."""
    if os.geteuid() != 0:
        return None
    return (config.getoption(USER_OPTION) or config.getini(USER_OPTION)
            or os.environ.get("SIMHASH_PG_USER") or DEFAULT_USER)


def _pg_ctl(configured: str | None) -> str:
    """SIMHASH_PG_CTL, else pytest-postgresql's postgresql_exec if it exists,
    else pg_config's bindir, else PATH."""
    if "SIMHASH_PG_CTL" in os.environ:
        return os.environ["SIMHASH_PG_CTL"]
    if configured and os.access(configured, os.X_OK):
        return configured
    try:
        bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if os.access(os.path.join(bindir, "pg_ctl"), os.X_OK):
            return os.path.join(bindir, "pg_ctl")
    except (OSError, subprocess.CalledProcessError):
        pass
    found = shutil.which("pg_ctl")
    if found is None:
        pytest.fail("no pg_ctl found: set SIMHASH_PG_CTL or --postgresql-exec, or put pg_config on PATH", pytrace=False)
    return found


@contextmanager
def _server_directory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                      pg_ctl: str) -> Iterator[tuple[Path, str]]:
    """(a directory for the data and the log, the pg_ctl to run).  As root:
    a directory of the server user's under TMPDIR, and a pg_ctl that runs
    the real one as that user (kept in a directory of root's own)."""
    user = _server_user(request.config)
    if user is None:
        yield tmp_path_factory.mktemp("simhash-postgresql"), pg_ctl
        return
    from .server_user import give, pg_ctl_as

    try:
        wrapper = pg_ctl_as(user, pg_ctl, tmp_path_factory.mktemp("simhash-pg-ctl"))
    except ValueError as e:
        pytest.fail(str(e), pytrace=False)
    directory = Path(tempfile.mkdtemp(prefix="pysimhash-sql-postgresql-"))
    try:
        give(directory, user)
        yield directory, str(wrapper)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _connect(psycopg: ModuleType, server, dbname: str):
    return psycopg.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                           dbname=dbname, autocommit=True)


def create_simhash_extension(host: str, port: int, user: str, dbname: str, password: str | None, **_: object) -> None:
    """pytest-postgresql loader: create the extension in a (template) database."""
    import psycopg

    with psycopg.connect(host=host, port=port, user=user, dbname=dbname, password=password, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS simhash")


def _template_name(server) -> str:
    return f"{server.dbname}_simhash_template"


@pytest.fixture(scope="session")
def simhash_postgresql_proc(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The server (a pytest-postgresql PostgreSQLExecutor), with a template
    database that has the extension."""
    fixture = "simhash_postgresql_proc"
    executors = _require("pytest_postgresql.executors", fixture)
    config = _require("pytest_postgresql.config", fixture).get_config(request)
    port_for = _require("port_for", fixture)
    psycopg = _require("psycopg", fixture)
    with _server_directory(request, tmp_path_factory, _pg_ctl(config.exec)) as (directory, pg_ctl):
        server = executors.PostgreSQLExecutor(
            executable=pg_ctl, host=config.host, port=port_for.get_port(config.port), user=config.user,
            password=config.password, dbname=config.dbname, options=config.options,
            datadir=str(directory / "data"), unixsocketdir=config.unixsocketdir,
            logfile=str(directory / "postgresql.log"), startparams=config.startparams,
            postgres_options=config.postgres_options,
        )
        server.start()
        try:
            server.wait_for_postgres()
            with _connect(psycopg, server, "postgres") as admin:
                admin.execute(f'CREATE DATABASE "{_template_name(server)}"')
            create_simhash_extension(server.host, server.port, server.user, _template_name(server), server.password)
            yield server
        finally:
            server.stop()


@pytest.fixture
def simhash_postgresql(simhash_postgresql_proc):
    """A psycopg connection to a fresh database (``dbname``, pytest-postgresql's
    setting) cloned from the template: the extension is there."""
    psycopg = _require("psycopg", "simhash_postgresql")
    server = simhash_postgresql_proc
    with _connect(psycopg, server, "postgres") as admin:
        admin.execute(f'CREATE DATABASE "{server.dbname}" TEMPLATE "{_template_name(server)}"')
    try:
        with psycopg.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                             dbname=server.dbname, options=server.options) as conn:
            yield conn
    finally:
        with _connect(psycopg, server, "postgres") as admin:
            admin.execute(f'DROP DATABASE "{server.dbname}" WITH (FORCE)')


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
