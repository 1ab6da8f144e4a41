"""pysimhash_sql.backends: the back end is known before a helper's first
statement on a fresh engine, and both back ends refuse a radius outside
0..64 (or not an integer) as the extension does."""

from __future__ import annotations

import asyncio
import re

import psycopg
import pytest
from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session, aliased
from sqlalchemy.pool import NullPool

from pysimhash_sql.backends import EXTENSION, PLAIN, InvalidRadius, backend_of
from pysimhash_sql.dedupe import insert_unless_near_duplicate, insert_unless_near_duplicate_async, lock_near
from pysimhash_sql.queries import (
    has_near_duplicate, near_duplicate_matches, near_duplicates, nearest, run_clusters, run_find_all,
)
from pysimhash_sql.sqlalchemy import register_simhash
from toolbox.pages_model import Base, Page

FINGERPRINTS = {1: 0, 2: 0b11, 3: 2**64 - 1, 4: (2**64 - 1) ^ 1}
NEW = (2**64 - 1) ^ 0b110  # 2 bits from 3, 3 from 4


def _pages(session) -> select:
    return select(Page.id, Page.fp)


# Each public helper as a fresh engine's first call: (what it returns, as compared).
HELPERS = {
    "run_find_all": lambda session: sorted(run_find_all(session, _pages(session), 3)),
    "run_clusters": lambda session: sorted(run_clusters(session, _pages(session), 3)),
    "insert_unless_near_duplicate": lambda session: insert_unless_near_duplicate(
        session, Page, {"id": 9, "url": "new", "fp": NEW}, fingerprint="fp").inserted,
    "lock_near": lambda session: lock_near(session, NEW, 3, "example.org"),
    "near_duplicates": lambda session: sorted((page.id, d) for page, d in session.execute(
        near_duplicates(Page.fp, NEW, 3))),
    "nearest": lambda session: [(page.id, d) for page, d in session.execute(nearest(Page.fp, NEW, 2))],
    "has_near_duplicate": lambda session: session.scalar(select(func.count()).select_from(Page).where(
        ~has_near_duplicate(Page.fp, aliased(Page).fp, 0))),
    "near_duplicate_matches": lambda session: sorted((a.id, b.id, d) for a, b, d in session.execute(
        near_duplicate_matches(aliased(Page).fp, Page.fp, 1))),
}
EXPECTED = {
    "run_find_all": [(1, 2, 2), (3, 4, 1)],
    "run_clusters": [(1, 1), (2, 1), (3, 3), (4, 3)],
    "insert_unless_near_duplicate": False,
    "lock_near": None,
    "near_duplicates": [(3, 2), (4, 3)],
    "nearest": [(3, 2), (4, 3)],
    "has_near_duplicate": 0,
    "near_duplicate_matches": [(1, 1, 0), (2, 2, 0), (3, 3, 0), (3, 4, 1), (4, 3, 1), (4, 4, 0)],
}


@pytest.fixture(params=[EXTENSION, PLAIN])
def database_url(request, simhash_url, plain_url):
    """A database of each back end with the pages (FINGERPRINTS), made by
    another engine than the one under test."""
    url = simhash_url if request.param == EXTENSION else plain_url
    setup = create_engine(url)
    register_simhash(setup)
    Base.metadata.create_all(setup)
    with Session(setup) as session, session.begin():
        session.execute(insert(Page), [{"id": i, "url": str(i), "fp": fp} for i, fp in FINGERPRINTS.items()])
    assert backend_of(setup) == request.param
    setup.dispose()
    return request.param, url


@pytest.mark.parametrize("helper", HELPERS)
def test_a_fresh_engines_first_call_knows_its_back_end(database_url, helper) -> None:
    """Every public helper as the first call of a fresh engine: on the plain
    database it used to send the extension's SQL (simhash_find_all,
    simhash_lock_near) before the engine's first connection detected the
    back end."""
    backend, url = database_url
    engine = create_engine(url)
    register_simhash(engine)
    try:
        with Session(engine) as session, session.begin():
            assert HELPERS[helper](session) == EXPECTED[helper]
        assert backend_of(engine) == backend
    finally:
        engine.dispose()


def test_a_fresh_async_engines_first_call_knows_its_back_end(database_url) -> None:
    backend, url = database_url
    engine = create_async_engine(url, poolclass=NullPool)
    register_simhash(engine)

    async def first_call() -> bool:
        async with AsyncSession(engine) as session, session.begin():
            return (await insert_unless_near_duplicate_async(session, Page, {"id": 9, "url": "new", "fp": NEW},
                                                            fingerprint="fp")).inserted

    try:
        assert asyncio.run(first_call()) is False
        assert backend_of(engine) == backend
    finally:
        asyncio.run(engine.dispose())


SERVER_CHECK = "SELECT hamming_within(0::simhash64, 0::simhash64, %s)"


@pytest.mark.parametrize("radius", [-1, 65])
def test_the_radius_error_is_the_extensions(simhash_db, radius) -> None:
    """InvalidRadius says what the extension's simhash_check_radius says."""
    with pytest.raises(psycopg.errors.InvalidParameterValue) as server:
        simhash_db.execute(SERVER_CHECK, (radius,))
    error = InvalidRadius(radius)
    assert (error.sqlstate, error.message, error.detail) == (
        server.value.sqlstate, server.value.diag.message_primary, server.value.diag.message_detail)


def _refused(session, statement) -> InvalidRadius:
    with pytest.raises(InvalidRadius) as refused:
        session.execute(statement)
    return refused.value


@pytest.mark.parametrize("radius", [-1, 65, 2.5, "3", True])
def test_both_back_ends_refuse_a_radius_out_of_range(database_url, radius) -> None:
    """The plain back end answered within(q, -1) with no row and within(q, 65)
    with every row; the extension refused both (SQLSTATE 22023), and a
    non-integer radius with another error (no such function).  Now both
    refuse every such radius the same way, before sending anything; the
    near-duplicate lock's radius too."""
    backend, url = database_url
    engine = create_engine(url)
    register_simhash(engine)
    try:
        with Session(engine) as session:
            for statement in (select(Page.id).where(Page.fp.within(NEW, radius)),
                              select(Page.id).where(func.hamming_within(Page.fp, NEW, radius)),
                              near_duplicates(Page.fp, NEW, radius),
                              select(Page.id).where(has_near_duplicate(Page.fp, aliased(Page).fp, radius))):
                error = _refused(session, statement)
                assert (error.sqlstate, error.message) == ("22023", f"Hamming distance {radius!r} is out of range")
                assert isinstance(error, ValueError)
            for lock in (lambda: lock_near(session, NEW, radius),
                         lambda: insert_unless_near_duplicate(session, Page, {"id": 9, "url": "new", "fp": NEW},
                                                              fingerprint="fp", max_distance=radius)):
                with pytest.raises(InvalidRadius, match=f"^Hamming distance {re.escape(repr(radius))} is out of"):
                    lock()
            session.rollback()
            # the radius 0 and 64, and the same statement again (its cache key holds the radius)
            assert session.scalars(select(Page.id).where(Page.fp.within(NEW, 64)).order_by(Page.id)).all() == [
                1, 2, 3, 4]
            assert session.scalars(select(Page.id).where(Page.fp.within(FINGERPRINTS[4], 0))).all() == [4]
            _refused(session, select(Page.id).where(Page.fp.within(NEW, radius)))
    finally:
        engine.dispose()


def test_a_radius_that_is_no_constant_is_the_servers_to_check(simhash_engine) -> None:
    """A radius the client cannot see (a SQL expression) is checked by the
    extension, as before."""
    Base.metadata.create_all(simhash_engine)
    with Session(simhash_engine) as session, session.begin():
        session.add(Page(id=1, url="a", fp=1))
    with Session(simhash_engine) as session:
        with pytest.raises(DBAPIError) as server:
            session.execute(select(Page.id).where(Page.fp.within(0, text("-1"))))
        assert server.value.orig.sqlstate == "22023"
