"""pysimhash_sql.pytest_plugin as a user meets it: a test of their own model
is a one-liner, and a test session that uses no fixture starts no server."""

from __future__ import annotations

import os

import pytest

USER_TEST = '''
from sqlalchemy import BigInteger, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from pysimhash_sql.queries import near_duplicates
from pysimhash_sql.sqlalchemy import SimHash64


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    fp: Mapped[int] = mapped_column(SimHash64)


def test_my_model(simhash_engine):
    Base.metadata.create_all(simhash_engine)
    with Session(simhash_engine) as session:
        session.add_all([Item(id=1, fp=0), Item(id=2, fp=2**64 - 1), Item(id=3, fp=0b111)])
        session.commit()
        assert [i.id for i, _ in session.execute(near_duplicates(Item.fp, 0, 3))] == [1, 3]


def test_raw_connection(simhash_db):
    assert simhash_db.execute("SELECT '18446744073709551615'::simhash64").fetchone()[0] == 2**64 - 1
'''


def test_user_tests_get_a_server_with_simhash(pytester) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_nothing_starts_unless_asked(pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--setup-show", "--fixtures")
    assert "simhash_engine" in result.stdout.str()  # the plugin is loaded ...
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--setup-show")
    result.assert_outcomes(passed=1)
    assert "simhash_postgresql_proc" not in result.stdout.str()  # ... and started nothing


def test_loading_imports_nothing_optional(pytester) -> None:
    """The plugin loads in every pytest run of the environment: it must not
    import a driver or SQLAlchemy (which may be missing)."""
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionstart(session):\n"
        "    loaded = sorted(m for m in ('psycopg', 'sqlalchemy', 'pytest_postgresql', 'asyncpg', 'psycopg2')\n"
        "                    if m in sys.modules)\n"
        "    print('optional modules loaded:', loaded)\n"
    )
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["optional modules loaded: []"])


def test_a_missing_package_fails_the_fixture_naming_the_extra(pytester) -> None:
    pytester.makeconftest("import sys\nsys.modules['psycopg'] = None  # as if not installed\n")
    pytester.makepyfile(
        test_user="def test_db(simhash_db):\n    pass\n\ndef test_plain():\n    assert True\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*the simhash_postgresql_proc fixture needs psycopg: "
                                 "pip install 'pysimhash-sql[[]pytest[]]'"])
    assert "Traceback" not in result.stdout.str()


SERVER_USER_TEST = '''
import os
import pwd


def test_server_runs_as(simhash_postgresql_proc, simhash_db):
    owner = pwd.getpwuid(os.stat(simhash_postgresql_proc.datadir).st_uid).pw_name
    assert owner == os.environ["EXPECTED_SERVER_USER"]
    assert simhash_db.execute("SELECT 13893055204574190055::simhash64").fetchone()[0] == 13893055204574190055
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="the tests run as root in CI containers; here they do not")
@pytest.mark.parametrize("how", ["default", "ini", "option"])
def test_as_root_the_server_runs_as_an_unprivileged_user(pytester, monkeypatch, how: str) -> None:
    """PostgreSQL refuses to run as root: the plugin runs it as nobody, or as
    the user the ini option, the command line or SIMHASH_PG_USER names."""
    monkeypatch.delenv("SIMHASH_PG_USER", raising=False)
    expected = {"default": "nobody", "ini": "simhash", "option": "simhash"}[how]
    monkeypatch.setenv("EXPECTED_SERVER_USER", expected)
    pytester.makepyfile(test_user=SERVER_USER_TEST)
    args = ["-p", "no:cacheprovider"]
    if how == "ini":
        pytester.makeini("[pytest]\nsimhash_pg_user = simhash\n")
    elif how == "option":
        args += ["--simhash-pg-user", "simhash"]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root switches users")
def test_as_root_an_unknown_server_user_says_what_to_do(pytester, monkeypatch) -> None:
    monkeypatch.setenv("SIMHASH_PG_USER", "no-such-user-here")
    pytester.makepyfile(test_user="def test_db(simhash_db):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no user 'no-such-user-here' to run PostgreSQL as*simhash_pg_user*"])
