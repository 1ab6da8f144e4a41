"""Scoped near-duplicate queries, `domain = $1 AND hamming_within(fp, $2, k)`:
answered through a plain GIN index on the fingerprint or a two-column GIN
index (btree_gin), which the planner picks by itself; equal to a sequential scan."""

from __future__ import annotations

import random

import psycopg
import pytest

SCOPED = "SELECT id FROM pages WHERE domain = %s AND hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"


@pytest.fixture
def pages(db: psycopg.Connection):
    rng = random.Random(5)
    db.execute("CREATE EXTENSION btree_gin")
    db.execute("CREATE TABLE pages (id int PRIMARY KEY, domain text, fp simhash64)")
    articles = [rng.getrandbits(64) for _ in range(300)]
    with db.cursor().copy("COPY pages FROM STDIN") as copy:
        for i in range(30_000):
            fp = rng.choice(articles) ^ (1 << rng.randrange(64)) if i % 4 == 0 else rng.getrandbits(64)
            copy.write_row((i, f"site{rng.randrange(40)}.example", str(fp)))
    db.execute("ANALYZE pages")
    queries = [(f"site{rng.randrange(40)}.example", str(rng.choice(articles) ^ (1 << rng.randrange(64))),
                rng.randint(0, 4)) for _ in range(150)]
    return db, queries


def answers(db: psycopg.Connection, queries, index: str | None) -> list[list[int]]:
    db.execute("SET enable_seqscan = off" if index else "SET enable_bitmapscan = off; SET enable_indexscan = off")
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + SCOPED, queries[0]))
    assert (f"Bitmap Index Scan on {index}" in plan) if index else ("Seq Scan" in plan), plan
    # never prepared (psycopg prepares a query run 5 times): a prepared statement's plan
    # is kept whatever enable_* says later (here only the new index's invalidation replans it)
    result = [[r[0] for r in db.execute(SCOPED, q, prepare=False)] for q in queries]
    db.execute("RESET ALL")
    return result


@pytest.mark.parametrize("columns", ["fp", "domain, fp"], ids=["plain", "two-column"])
def test_scoped_queries_equal_the_sequential_scan(pages, columns: str) -> None:
    db, queries = pages
    expected = answers(db, queries, None)
    assert sum(map(len, expected)) > 30  # the queries do find rows
    db.execute(f"CREATE INDEX pages_scoped ON pages USING gin ({columns}) WITH (fastupdate = off)")
    assert answers(db, queries, "pages_scoped") == expected


def test_planner_picks_the_two_column_index_by_itself(pages) -> None:
    db, queries = pages
    db.execute("CREATE INDEX pages_scoped ON pages USING gin (domain, fp) WITH (fastupdate = off)")
    db.execute("ANALYZE pages")
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + SCOPED, queries[0]))
    assert "Bitmap Index Scan on pages_scoped" in plan, plan
