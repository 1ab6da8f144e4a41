"""pysimhash_sql.pytest_plugin as a user meets it: a test of their own model
is a one-liner, and a test session that uses no fixture starts no server."""

from __future__ import annotations

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
