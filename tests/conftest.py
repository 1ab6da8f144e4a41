"""Test fixtures: a real PostgreSQL server with the simhash extension.

The server is the plugin's (pysimhash_sql.pytest_plugin), which runs it as an
unprivileged user when the tests run as root; scripts/pytest.sh points it at
the private installation `make test` builds (SIMHASH_PG_BINDIR) and at the
harness's server user (SIMHASH_PG_USER).  Without them it runs the PostgreSQL
that ``pg_config --bindir`` names (after ``make install``) as ``nobody``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
from toolbox import ROOT

# The temporary root pytest_configure made for this session (to remove at its end).
OWN_BASETEMP = pytest.StashKey[Path]()

# What these tests do not depend on the PostgreSQL major: Python-only code
# (the package's hashing and its compiled core, text specs 2 and 3, corpus
# dedupe, HTML text, simhash-py's API, the benchmarks' corpus and copies), the
# pytest plugin's own logic (which server user, which extra a fixture needs,
# what it imports: on every major the suite's own server is the plugin's,
# postgresql_proc below) and the distributions (sdist, wheel, Docker context,
# README).  Marked ``major_independent`` (as test files may mark themselves,
# pytestmark): `make test-all` runs them on the newest major only
# (SIMHASH_SKIP_MAJOR_INDEPENDENT, scripts/test.sh), `make test` on any major
# runs them.  Paths relative to tests/.
MAJOR_INDEPENDENT = (
    "package/test_core.py",
    "package/test_corpus_dedupe.py",
    "package/test_hashing.py",
    "package/test_html.py",
    "package/test_pytest_plugin.py",
    "package/test_simhash_py_compat.py",
    "package/test_text_v2.py",
    "package/test_text_v3.py",
    "package/test_unicode_tables.py",
    "bench/test_fingerprint_corpus.py",
    "bench/test_fingerprint_quality.py",
    "packaging/test_docker.py",
    "packaging/test_core_portable.py",
    "packaging/test_layers.py",
    "packaging/test_packaging.py",
    "packaging/test_private_paths.py",
    "packaging/test_readme.py",
)
# And in these files, the tests that reach no server (none of their fixtures
# leads to SERVER_FIXTURES): the command line's local work (fingerprints of
# files and JSON Lines, find-all on hash files, dedupe of a corpus in memory).
# The files start no server of their own.
MAJOR_INDEPENDENT_WITHOUT_SERVER = (
    "package/test_cli.py",
    "package/test_cli_dedupe.py",
)
SERVER_FIXTURES = {"postgresql_proc", "simhash_postgresql_proc"}


# The slowest test files, slowest first (seconds, the sum of a file's tests, on 2 shared cores,
# PostgreSQL 18, 4 processes): collected first, so that pytest-xdist (a file a process, handed
# out in collection order: scripts/test.sh turns off its reordering by test count, which
# handed out test_packaging.py, 2 tests, last) starts them first and a long file never runs
# alone at the end of a run.
SLOW_FIRST = (
    "packaging/test_packaging.py",                  # 230
    "extension/index/test_mih_build.py",            # 117
    "packaging/test_docker.py",                     # 104
    "package/test_cli.py",                          # 98
    "extension/test_hostile_inputs.py",             # 96
    "package/test_pytest_plugin.py",                # 91
    "package/test_cli_refingerprint.py",            # 90
    "packaging/test_pgxn.py",                       # 87
    "extension/index/test_index.py",                # 75
    "extension/index/test_mih_format.py",           # 68
    "extension/index/test_standby.py",              # 51
    "extension/find_all/test_find_all_spill.py",    # 50
    "package/test_hashing.py",                      # 42
    "extension/index/test_mih_check.py",            # 41
    "package/test_drivers.py",                      # 39
    "extension/index/test_mih_writes.py",           # 37
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = ROOT / "tests"
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    for item in items:
        path = item.path.relative_to(tests).as_posix()
        if path in MAJOR_INDEPENDENT or (path in MAJOR_INDEPENDENT_WITHOUT_SERVER
                                         and not SERVER_FIXTURES & set(item.fixturenames)):
            item.add_marker(pytest.mark.major_independent)
    # a stable sort: every process collects the same order
    items.sort(key=lambda item: rank.get(item.path.relative_to(tests).as_posix(), len(SLOW_FIRST)))


def pytest_configure(config: pytest.Config) -> None:
    """Give each session its own temporary root: sessions running at once
    (in several checkouts, or two in one checkout) would otherwise share
    pytest-of-USER, or one fixed directory, and each prunes the others'
    directories at its start (servers then die mid-test).  Removed when the
    session ends, unless SIMHASH_KEEP_TEST_TMP is set (to look at a failed
    test's servers and files)."""
    if config.option.basetemp is None:
        config.option.basetemp = Path(tempfile.mkdtemp(prefix=f"pysimhash-sql-pytest-{os.getuid()}-"))
        config.stash[OWN_BASETEMP] = config.option.basetemp


def pytest_unconfigure(config: pytest.Config) -> None:
    basetemp = config.stash.get(OWN_BASETEMP, None)
    if basetemp is not None and not os.environ.get("SIMHASH_KEEP_TEST_TMP"):
        shutil.rmtree(basetemp, ignore_errors=True)


# One server for the whole suite: the one pysimhash_sql.pytest_plugin starts
# (its template database has the extension, so each test database does too).
# Without fsync: nothing the extension does depends on it (its WAL is written
# all the same), and each test's CREATE DATABASE and DROP DATABASE take half
# the time.  fsync is a reload setting; the server is the tests' alone.
@pytest.fixture(scope="session")
def postgresql_proc(simhash_postgresql_proc):
    with psycopg.connect(simhash_postgresql_proc.dsn(), autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET fsync = off")
        admin.execute("SELECT pg_reload_conf()")
    return simhash_postgresql_proc


@pytest.fixture
def db(postgresql_proc, simhash_postgresql: psycopg.Connection) -> psycopg.Connection:
    """A connection in autocommit mode to a fresh database with simhash created."""
    simhash_postgresql.autocommit = True
    return simhash_postgresql


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


@pytest.fixture
def plain_database(postgresql_proc):
    """The name of a fresh database without the simhash extension (made from
    template0, checked): the server of a managed service, where the package's
    plain back end runs (docs/managed.md).  Needs only psycopg (the Django 4.2
    environment has no SQLAlchemy)."""
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user)
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute("CREATE DATABASE plain TEMPLATE template0")
    try:
        with psycopg.connect(dbname="plain", autocommit=True, **server) as conn:
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simhash'").fetchone() == (0,)
            assert conn.execute("SELECT to_regtype('simhash64')").fetchone() == (None,)
        yield "plain"
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute("DROP DATABASE plain WITH (FORCE)")


@pytest.fixture
def plain_url(postgresql_proc, plain_database):
    """The SQLAlchemy URL of plain_database."""
    from sqlalchemy import URL

    return URL.create("postgresql+psycopg", username=postgresql_proc.user, host=postgresql_proc.host,
                      port=postgresql_proc.port, database=plain_database)


@pytest.fixture
def plain_engine(plain_url):
    """A SQLAlchemy Engine on plain_url's database, its back end detected (plain)."""
    from sqlalchemy import create_engine

    from pysimhash_sql.backends import PLAIN, backend_of
    from pysimhash_sql.sqlalchemy import register_simhash

    engine = create_engine(plain_url)
    register_simhash(engine)
    with engine.connect():
        pass
    assert backend_of(engine) == PLAIN
    yield engine
    engine.dispose()
