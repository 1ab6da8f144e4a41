"""pysimhash_sql.dedupe: insert unless a near-duplicate is stored, with many
writers at once (sync Sessions in threads, AsyncSessions in tasks)."""

from __future__ import annotations

import asyncio
import random

import pytest
from sqlalchemy import BigInteger, Column, Identity, MetaData, Table, Text, func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.pool import NullPool

from pysimhash_sql.dedupe import (
    RepeatableReadError, Stored, insert_unless_near_duplicate, insert_unless_near_duplicate_async,
)
from pysimhash_sql.sqlalchemy import SimHash64, simhash_index
from toolbox.workers import run_together


class Base(DeclarativeBase):
    pass


class Page(Base):
    __tablename__ = "crawled"  # its index: the engine fixture's
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    domain: Mapped[str] = mapped_column(Text)
    body: Mapped[str | None] = mapped_column(Text)
    fingerprint: Mapped[int] = mapped_column(SimHash64)


# Every index a crawler's table may have; the check uses whichever is there.
INDEXES = {
    "simhash_mih (the default)": {},
    "gin": {"method": "gin"},
    "simhash_mih (domain, fingerprint)": {"scope": ["domain"]},
    "gin (domain, fingerprint)": {"scope": ["domain"], "method": "gin"},
}


@pytest.fixture(params=INDEXES)
def engine(request, simhash_engine):
    Base.metadata.create_all(simhash_engine)
    table = Table(Page.__tablename__, MetaData(), Column("domain", Text), Column("fingerprint", SimHash64))
    options = dict(INDEXES[request.param])
    options["scope"] = [table.c[name] for name in options.get("scope", ())]
    with simhash_engine.begin() as conn:
        if options["scope"] and options.get("method") == "gin":
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS btree_gin"))
        simhash_index("crawled_fingerprint_idx", table.c.fingerprint, **options).create(conn)
        method = conn.scalar(text("SELECT amname FROM pg_class JOIN pg_am ON pg_am.oid = relam"
                                  " WHERE relname = 'crawled_fingerprint_idx'"))
    assert method == request.param.split()[0]
    return simhash_engine


def store(session: Session, domain: str, fp) -> Stored:
    return insert_unless_near_duplicate(session, Page, {"domain": domain, "fingerprint": fp}, scope="domain")


def test_returns_the_stored_near_duplicate_or_the_new_row(engine) -> None:
    with Session(engine) as session, session.begin():
        first = store(session, "a.example", 2**64 - 1)
        near = store(session, "a.example", (2**64 - 1) ^ 0b101)          # 2 bits away: found
        far = store(session, "a.example", (2**64 - 1) ^ 0b1111)          # 4 bits away: new
        other_scope = store(session, "b.example", 2**64 - 1)             # same fingerprint, other domain
    assert first.inserted and far.inserted and other_scope.inserted
    assert near == Stored(first.id, False)
    with Session(engine) as session:
        rows = session.execute(select(Page.domain, Page.fingerprint).order_by(Page.id)).all()
    assert rows == [("a.example", 2**64 - 1), ("a.example", (2**64 - 1) ^ 0b1111), ("b.example", 2**64 - 1)]


def test_fingerprint_computed_by_the_server_and_no_scope(engine) -> None:
    body = "the same article refetched with new ads"
    with Session(engine) as session, session.begin():
        first = insert_unless_near_duplicate(session, Page, {"domain": "a", "body": body,
                                                             "fingerprint": func.simhash(body)})
        again = insert_unless_near_duplicate(session.connection(), Page.__table__,
                                             {"domain": "b", "fingerprint": func.simhash(body)}, max_distance=0)
        stored_body = session.get(Page, first.id).body
    assert first.inserted and again == Stored(first.id, False)
    assert stored_body == body


def test_repeatable_read_is_refused(engine) -> None:
    with Session(engine) as session:
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        with pytest.raises(DBAPIError, match="REPEATABLE READ"):
            store(session, "a.example", 1)


WRITERS = 8
CLUSTERS = 10


def copies(seed: int) -> list[tuple[str, int]]:
    """One writer's pages: a near-copy (1 bit from the centre) of every cluster."""
    rng = random.Random(seed)
    return [(f"site{c % 3}.example", random.Random(c).getrandbits(64) ^ (1 << rng.randrange(64)))
            for c in range(CLUSTERS)]


def assert_one_row_per_cluster(engine) -> None:
    with engine.connect() as conn:
        rows = conn.execute(select(func.count()).select_from(Page)).scalar_one()
        pairs = conn.execute(select(func.count()).select_from(Page.__table__.alias("a")).join(
            Page.__table__.alias("b"), func.hamming_within(
                Page.__table__.alias("a").c.fingerprint, Page.__table__.alias("b").c.fingerprint, 3))).scalar_one()
    assert rows == CLUSTERS
    assert pairs == CLUSTERS  # each row with itself only


def test_many_writers_store_each_page_once(engine) -> None:
    def writer(seed: int) -> None:
        for domain, fp in copies(seed):
            with Session(engine) as session, session.begin():
                store(session, domain, fp)

    errors = run_together([lambda seed=seed: writer(seed) for seed in range(WRITERS)])
    assert errors == []
    assert_one_row_per_cluster(engine)


def test_many_async_writers_store_each_page_once(engine, simhash_url) -> None:
    async def main() -> None:
        async_engine = create_async_engine(simhash_url, poolclass=NullPool)

        async def writer(seed: int) -> None:
            for domain, fp in copies(seed):
                async with AsyncSession(async_engine) as session, session.begin():
                    await insert_unless_near_duplicate_async(
                        session, Page, {"domain": domain, "fingerprint": fp}, scope=Page.domain)

        await asyncio.gather(*(writer(seed) for seed in range(WRITERS)))
        await async_engine.dispose()

    asyncio.run(main())
    assert_one_row_per_cluster(engine)


class CrawledPage(Base):
    __tablename__ = "crawler_pages"
    __table_args__ = (simhash_index("crawler_pages_fingerprint_idx", "fingerprint"),)
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    domain: Mapped[str] = mapped_column(Text)
    url: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[int] = mapped_column(SimHash64)


def test_readme_crawler_example(engine) -> None:
    """The README's crawler block, run on two noisy fetches of one article and
    one of another: the refetch finds the first, the other article goes in."""
    from toolbox.readme import readme_blocks
    from toolbox.web_pages import article_page

    block = readme_blocks("Crawlers: many workers, one decision per page", "python")[0]
    results = []
    for key, fetch in (("harbour", 0), ("harbour", 5), ("library", 0)):
        url, html = article_page(key, fetch)
        namespace = {"Session": Session, "engine": engine, "Page": CrawledPage, "html": html, "url": url,
                     "domain": "news.example.org"}
        exec(block, namespace)  # noqa: S102 - the README's own code
        results.append(namespace["stored"])
    first, refetch, other = results
    assert first.inserted and other.inserted and other.id != first.id
    assert refetch == Stored(first.id, False)


@pytest.fixture
def plain_pages(plain_engine):
    """The crawler's table on a database without the extension, its plain index made."""
    Base.metadata.create_all(plain_engine)
    table = Table(Page.__tablename__, MetaData(), Column("fingerprint", SimHash64))
    with plain_engine.begin() as conn:
        simhash_index("crawled_fingerprint_idx", table.c.fingerprint).create(conn)
    return plain_engine


def test_plain_backend_many_writers_store_each_page_once(plain_pages) -> None:
    """8 writers on the plain back end: its advisory locks (simhash_lock_near's
    keys) and check let no near-duplicate pair in."""
    test_many_writers_store_each_page_once(plain_pages)
    with plain_pages.connect() as conn:
        assert conn.scalar(text("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                                "WHERE attrelid = 'crawled'::regclass AND attname = 'fingerprint'")) == "bigint"


def test_plain_backend_outcomes_and_repeatable_read(plain_pages) -> None:
    test_returns_the_stored_near_duplicate_or_the_new_row(plain_pages)
    with Session(plain_pages) as session:
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        with pytest.raises(RepeatableReadError, match="REPEATABLE READ"):
            store(session, "a.example", 1)
