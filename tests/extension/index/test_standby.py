"""On a streaming hot standby, radius queries through either index kind give
the primary's answers (and brute force's), after a build, inserts, flushes of
simhash_mih's pending list into run sets, deletes, VACUUM's merges and page
recycling, and REINDEX (simhash_mih's in parallel, its pages logged whole at
the build's end), scoped queries through a scoped simhash_mih index too, and
simhash_mih's ordering scans (the n nearest rows): every page change reaches
the standby through WAL."""

from __future__ import annotations

import os
import random
import time

import psycopg
import pytest

from pysimhash_sql.throwaway import ThrowawayServer
from toolbox import INDEX_KINDS, brute_force_within, copy_rows, distance, flip_random
from toolbox.data import planted_fingerprints
from toolbox.mih_builds import build
from toolbox.mih_merges import wait_for_workers
from toolbox.plans import rows_by_plan

# Each kind's index, and its queries' scope ("" or a condition on the domain, every third row's).
KINDS = {**{kind: (using, "") for kind, using in INDEX_KINDS.items()},
         "simhash_mih scoped": ("simhash_mih (domain, fp) {options}", "domain = 'site1' AND ")}
QUERY = "SELECT id FROM docs WHERE {scope}hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A primary and a hot standby streaming from it.  The standby's
    primary_conninfo is written here rather than by pg_basebackup -R, whose
    newest options the server's walreceiver may not know (it loads the
    machine's libpq)."""
    bindir = os.environ["SIMHASH_PG_BINDIR"]
    primary = ThrowawayServer(bindir, tmp_path_factory.mktemp("primary")).initdb().start()
    conninfo = f"host={primary.host} port={primary.port} user=postgres"
    standby = ThrowawayServer(bindir, tmp_path_factory.mktemp("standby"),
                              postgres_options=f"-c primary_conninfo='{conninfo}'")
    try:
        standby.run("pg_basebackup", "-D", standby.datadir, "-X", "stream", "--checkpoint=fast",
                    "-h", primary.host, "-p", str(primary.port), "-U", "postgres")
        standby.run("/usr/bin/touch", standby.datadir / "standby.signal")
        standby.start()
        yield primary, standby
    finally:
        for server in (standby, primary):
            if server.running():
                server.stop("immediate")


def caught_up(primary: psycopg.Connection, standby: psycopg.Connection) -> None:
    lsn = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + 60
    while not standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]:
        assert time.monotonic() < deadline, "the standby did not catch up in 60 s"
        time.sleep(0.05)


def nearest(conn: psycopg.Connection, centres: list[int], scope: str) -> list[list[int]]:
    """The distances of the 20 nearest rows of each centre, through simhash_mih's ordering scan."""
    sql = (f"SELECT fp <~> %s::text::simhash64 FROM docs {'WHERE ' + scope[:-len(' AND ')] if scope else ''}"
           " ORDER BY fp <~> %s::text::simhash64 LIMIT 20")
    conn.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, ("1", "1")))
    assert "Index Scan using docs_fp" in plan, plan
    return [[r[0] for r in conn.execute(sql, (str(c), str(c)))] for c in centres]


def answers(conn: psycopg.Connection, queries: list[tuple[int, int]], index: str, scope: str) -> list[list[int]]:
    conn.execute("SET enable_seqscan = off")
    sql = QUERY.format(scope=scope)
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, (str(queries[0][0]), 3)))
    assert f"Bitmap Index Scan on {index}" in plan, plan
    return [[r[0] for r in conn.execute(sql, (str(c), k))] for c, k in queries]


@pytest.mark.parametrize("kind", list(KINDS))
def test_standby_answers_as_the_primary_does(pair, kind: str) -> None:
    primary, standby = pair
    using, scope = KINDS[kind]
    rng = random.Random(kind)
    fps = planted_fingerprints(rng, 4000)
    with primary.connect() as p, primary.connect() as writer, standby.connect() as s:
        if p.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simhash'").fetchone()[0] == 0:
            p.execute("CREATE EXTENSION simhash")
        p.execute("DROP TABLE IF EXISTS docs")
        p.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64,"
                  " domain text GENERATED ALWAYS AS ('site' || id % 3) STORED)")
        copy_rows(p, "COPY docs (id, fp) FROM STDIN", enumerate(fps))
        p.execute(f"CREATE INDEX docs_fp ON docs USING {using.format(options='')}")
        writer.execute("SET simhash.mih_pending_limit = 64")
        stored = [fp for fp in fps if fp is not None]

        def compare() -> None:
            rows = dict(p.execute("SELECT id, fp::text FROM docs").fetchall())
            # the scoped kind's queries ask for ids = 1 mod 3 alone
            current = [None if rows.get(i) is None or (scope and i % 3 != 1) else int(rows[i])
                       for i in range(max(rows) + 1)]
            queries = [(flip_random(rng.choice(stored), rng.randint(0, 3), rng), rng.randint(0, 8))
                       for _ in range(150)]
            if kind.startswith("simhash_mih"):
                # at rest: a flush, merge or recycling the inserts started, replayed while the
                # standby reads, may recycle a page under its scan (a retryable failure, which
                # the concurrent test below retries; this one compares answers at rest)
                wait_for_workers(p, "docs_fp", lambda now: True)
            caught_up(p, s)
            expected = [brute_force_within(current, c, k) for c, k in queries]
            assert answers(p, queries, "docs_fp", scope) == expected
            assert answers(s, queries, "docs_fp", scope) == expected
            if kind.startswith("simhash_mih"):  # the n nearest, by the ordering scan
                p.execute("ANALYZE docs")  # the scope's share of the rows, for the planner
                caught_up(p, s)
                centres = [c for c, _ in queries[:10]]
                values = [fp for fp in current if fp is not None]
                assert nearest(s, centres, scope) == nearest(p, centres, scope) == \
                    [sorted(distance(fp, c) for fp in values)[:20] for c in centres]

        compare()
        for i in range(300):  # single-row inserts: simhash_mih flushes every 64
            writer.execute("INSERT INTO docs (id, fp) VALUES (%s, %s::text::simhash64)",
                           (10_000 + i, str(flip_random(rng.choice(stored), rng.randint(0, 3), rng))))
        compare()
        p.execute("DELETE FROM docs WHERE id % 4 = 0")
        p.execute("VACUUM docs")  # merges the run sets; a second VACUUM recycles the retired pages
        p.execute("VACUUM docs")
        for i in range(100):
            writer.execute("INSERT INTO docs (id, fp) VALUES (%s, %s::text::simhash64)",
                           (20_000 + i, str(rng.getrandbits(64))))
        compare()
        if kind.startswith("simhash_mih"):
            assert build(p, "REINDEX INDEX docs_fp", 2).processes == 3
        else:
            p.execute("REINDEX INDEX docs_fp")
        compare()


def test_standby_queries_stay_exact_while_the_primary_flushes_and_recycles(pair) -> None:
    """simhash_mih's retired pages are recycled on the primary by horizon or
    pin, neither of which sees a standby's scans: a standby scan whose pages
    were recycled under it scans again (or fails with a retryable
    serialization failure), never answers wrong.  Standby readers compare the
    index with a sequential scan in one snapshot while two primary writers
    make a flush every 64 rows; every other query is an ordering scan's
    nearest rows (their distances), every radius grown a pass of its own."""
    from toolbox.workers import run_together

    primary, standby = pair
    rng = random.Random(77)
    fps = planted_fingerprints(rng, 3000)
    stored = [fp for fp in fps if fp is not None]
    with primary.connect() as p, standby.connect() as s:
        if p.execute("SELECT count(*) FROM pg_extension WHERE extname = 'simhash'").fetchone()[0] == 0:
            p.execute("CREATE EXTENSION simhash")
        p.execute("DROP TABLE IF EXISTS busy")
        p.execute("CREATE TABLE busy (id int PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
        copy_rows(p, "COPY busy (id, fp) FROM STDIN", enumerate(fps))
        p.execute("CREATE INDEX busy_fp ON busy USING simhash_mih (fp)")
        caught_up(p, s)

    def write(seed: int) -> None:
        wrng = random.Random(seed)
        with primary.connect() as conn:
            conn.execute("SET simhash.mih_pending_limit = 64")
            for i in range(1500):
                conn.execute("INSERT INTO busy VALUES (%s, %s::text::simhash64)",
                             (100_000 * (seed + 1) + i, str(flip_random(wrng.choice(stored), wrng.randint(0, 5), wrng))))

    compared: list[int] = []
    retried: list[int] = []

    def read(stop) -> None:
        radius = "SELECT id FROM busy WHERE hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"
        # every other query the 10 nearest rows' distances (k unused): the ordering scan
        ordering = ("SELECT (fp <~> %s::text::simhash64) + 0 * %s FROM busy ORDER BY fp <~> %s::text::simhash64"
                    " LIMIT 10")
        with standby.connect() as conn:
            while not stop.is_set():
                centre, k = flip_random(rng.choice(stored), rng.randint(0, 4), rng), rng.randint(0, 8)
                sql, params = (radius, (str(centre), k)) if len(compared) % 2 else \
                    (ordering, (str(centre), k, str(centre)))
                try:
                    with conn.transaction():
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        ordered = sql is ordering
                        by_index = rows_by_plan(conn, sql, params, table="busy", index="busy_fp", ordering=ordered)
                        assert by_index == rows_by_plan(conn, sql, params, table="busy", index=None), \
                            (centre, k)
                    compared.append(k)
                except psycopg.errors.SerializationFailure:
                    retried.append(k)

    errors = run_together([lambda seed=seed: write(seed) for seed in range(2)], [read, read])
    assert not errors, errors
    assert len(compared) > 50, (len(compared), len(retried))
    with primary.connect() as p:
        recycled = p.execute("SELECT recycled, flushes FROM simhash_mih_stats('busy_fp')").fetchone()
    assert recycled[0] > 0 and recycled[1] >= 3000 // (20 * 64), recycled
