"""simhash_find_all and simhash_clusters reading a plain table's rows straight
from its heap, by the backend and parallel workers (find_all_read.c): exactly
what the query run through SPI returns (brute force, and the same query made
to take the SPI path), the transaction's own rows included, the executor's
privilege checks, and every other query (row-level security, inheritance, a
view, a WHERE clause, a cast) still through SPI."""

from __future__ import annotations

import random
import re
import time
import uuid
from contextlib import contextmanager

import psycopg
import pytest
from toolbox import (
    brute_force_pairs,
    components,
    error_of,
    flip_random,
    parallel_on_small_inputs,
    parallel_workers_of,
)

READ = re.compile(r"simhash: reading table \"(\w+)\" by the backend with (\d+) of (\d+) parallel workers")
SEARCH = re.compile(r"simhash: (\d+) of (\d+) parallel workers launched")
WORKER_COUNTS = (0, 1, 2)


def reads(messages: list[str]) -> list[tuple[str, int]]:
    """The direct reads of a table: (table, workers launched)."""
    return [(m.group(1), int(m.group(2))) for m in map(READ.search, messages) if m]


def pairs(conn, query: str, k: int = 3, workers: int | None = 0, blocks: int | None = None) -> list[tuple]:
    return sorted(
        conn.execute(
            "SELECT id1, id2, distance FROM simhash_find_all(%s, %s, %s, workers => %s)", (query, k, blocks, workers)
        ).fetchall()
    )


def clusters(conn, query: str, k: int = 3, workers: int | None = 0, singletons: bool = True) -> dict[int, int]:
    return dict(
        conn.execute(
            "SELECT id, cluster_id FROM simhash_clusters(%s, %s, NULL, %s, workers => %s)",
            (query, k, singletons, workers),
        ).fetchall()
    )


def near_duplicate_rows(seed: int, n: int, shuffle: bool = True, nulls: bool = False) -> list[tuple[int, int | None]]:
    """Groups of exact and near copies (1..4 bits) and random fingerprints, ids
    spread out (in table order unless shuffled); with nulls, some fingerprints NULL."""
    rng = random.Random(seed)
    centres = [rng.getrandbits(64) for _ in range(max(1, n // 20))]
    rows: list[tuple[int, int | None]] = []
    for i in range(n):
        kind = rng.random()
        centre = rng.choice(centres)
        fp = centre if kind < 0.3 else flip_random(centre, rng.randint(1, 4), rng) if kind < 0.7 else rng.getrandbits(64)
        rows.append((i * 3 - n, None if nulls and rng.random() < 0.05 else fp))
    if shuffle:
        rng.shuffle(rows)
    return rows


def create_table(conn, name: str, rows: list[tuple[int, int | None]], id_type: str = "bigint", extra: str = "") -> None:
    conn.execute(f"CREATE TABLE {name} (id {id_type}, body text, fp simhash64{extra})")
    with conn.cursor().copy(f"COPY {name} (id, body, fp) FROM STDIN") as copy:
        for i, fp in rows:
            copy.write_row((i, "x", None if fp is None else str(fp)))
    conn.execute(f"ANALYZE {name}")


# The same rows, each query made to take the SPI path another way.
SPI_FORMS = (
    "SELECT id, fp FROM {t} WHERE true",
    "SELECT * FROM (SELECT id, fp FROM {t}) s",
    "SELECT id, fp FROM {t} ORDER BY id",
    "SELECT id + 0, fp FROM {t}",
)


@pytest.mark.parametrize("shuffle", [False, True], ids=["in-id-order", "shuffled"])
@pytest.mark.parametrize("id_type", ["bigint", "integer", "smallint"])
def test_direct_read_equals_brute_force_and_the_spi_path(db, shuffle, id_type) -> None:
    n = 3000 if id_type != "smallint" else 2000
    rows = near_duplicate_rows(7, n, shuffle=shuffle, nulls=True)
    create_table(db, "t", rows, id_type)
    expected = brute_force_pairs(rows, 3)
    edges = [(a, b) for a, b, _ in expected]
    expected_clusters = components([i for i, h in rows if h is not None], edges)
    assert len(expected) > 500
    with parallel_on_small_inputs(db) as messages:
        for workers in WORKER_COUNTS:
            messages.clear()
            assert pairs(db, "SELECT id, fp FROM t", workers=workers) == expected
            assert clusters(db, "SELECT id, fp FROM t", workers=workers) == expected_clusters
            assert reads(messages) == ([] if workers == 0 else [("t", workers)] * 2)
            for form in SPI_FORMS:
                messages.clear()
                assert pairs(db, form.format(t="t"), workers=workers) == expected
                assert reads(messages) == []


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_many_rows_with_workers_equal_the_serial_spi_run(db, workers) -> None:
    """200k rows (the ids in table order, and shuffled), several table chunks per
    process: the direct read with workers equals the serial run through SPI."""
    db.execute(
        "CREATE TABLE big AS SELECT i AS id, CASE WHEN i % 10 = 0 THEN hashint8extended(i / 10, 0) # 1"
        " ELSE hashint8extended(i, 0) END::simhash64 AS fp FROM generate_series(1, 200000) i"
    )
    db.execute("CREATE TABLE shuffled AS SELECT * FROM big ORDER BY hashint8(id)")
    db.execute("ANALYZE big")
    db.execute("ANALYZE shuffled")
    serial = pairs(db, "SELECT id, fp FROM big WHERE true", workers=0)
    serial_clusters = clusters(db, "SELECT id, fp FROM big WHERE true", workers=0, singletons=False)
    assert len(serial) >= 15000
    with parallel_on_small_inputs(db) as messages:
        for table in ("big", "shuffled"):
            messages.clear()
            assert pairs(db, f"SELECT id, fp FROM {table}", workers=workers) == serial
            assert clusters(db, f"SELECT id, fp FROM {table}", workers=workers, singletons=False) == serial_clusters
            assert reads(messages) == ([] if workers == 0 else [(table, workers)] * 2)


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_spilled_direct_read_equals_the_in_memory_run(db, workers) -> None:
    """Spilling forced: the rows read (by every process) go to temporary files."""
    db.execute(
        "CREATE TABLE t AS SELECT i AS id, hashint8extended(i % 30000, 0)::simhash64 AS fp"
        " FROM generate_series(1, 100000) i"
    )
    db.execute("ANALYZE t")
    expected = pairs(db, "SELECT id, fp FROM t WHERE true", workers=0)
    expected_clusters = clusters(db, "SELECT id, fp FROM t WHERE true", workers=0, singletons=False)
    with parallel_on_small_inputs(db, spill_rows=5000) as messages:
        assert pairs(db, "SELECT id, fp FROM t", workers=workers) == expected
        assert clusters(db, "SELECT id, fp FROM t", workers=workers, singletons=False) == expected_clusters
        assert reads(messages) == ([] if workers == 0 else [("t", workers)] * 2)
        # repeated ids are found in spilled rows read in parallel too
        db.execute("INSERT INTO t SELECT 77777, 0::bigint::simhash64")
        error = error_of(db, f"SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM t', 3, workers => {workers})")
        assert (error.sqlstate, "returned id 77777 more than once" in str(error)) == ("23505", True)


@pytest.mark.parametrize("workers", [1, 2])
def test_more_rows_than_the_tables_estimate(db, workers) -> None:
    """The run's shared memory is sized from the table's estimate: rows past it
    (here 20 times more, after ANALYZE saw wide rows) go the slower way, same result."""
    db.execute("CREATE TABLE t (id bigint, body text, fp simhash64)")
    db.execute("ALTER TABLE t ALTER body SET STORAGE PLAIN")
    db.execute("INSERT INTO t SELECT i, repeat('x', 2000), hashint8extended(i, 0)::simhash64 FROM generate_series(1, 2000) i")
    db.execute("ANALYZE t")
    db.execute(
        "INSERT INTO t SELECT i, NULL, CASE WHEN i % 7 = 0 THEN hashint8extended(i / 7, 0) # 8"
        " ELSE hashint8extended(i, 0) END::simhash64 FROM generate_series(2001, 150000) i"
    )
    expected = pairs(db, "SELECT id, fp FROM t WHERE true", workers=0)
    expected_clusters = clusters(db, "SELECT id, fp FROM t WHERE true", workers=0, singletons=False)
    assert len(expected) > 10000
    with parallel_on_small_inputs(db) as messages:
        assert pairs(db, "SELECT id, fp FROM t", workers=workers) == expected
        assert clusters(db, "SELECT id, fp FROM t", workers=workers, singletons=False) == expected_clusters
        assert reads(messages) == [("t", workers)] * 2
        assert not any(m.endswith(" in place") for m in messages)
        db.execute("INSERT INTO t (id, fp) VALUES (5, 0::bigint::simhash64)")
        error = error_of(db, "SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM t', 3, workers => %s)", (workers,))
        assert (error.sqlstate, "returned id 5 more than once" in str(error)) == ("23505", True)
        db.execute("DELETE FROM t WHERE id = 5 AND body IS NULL")
        messages.clear()
        db.execute("ANALYZE t")
        assert pairs(db, "SELECT id, fp FROM t", workers=workers) == expected
        assert any(m.endswith(" in place") for m in messages)


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_repeated_ids_are_an_error(db, workers) -> None:
    db.execute("CREATE TABLE t AS SELECT i AS id, hashint8extended(i, 0)::simhash64 AS fp FROM generate_series(1, 50000) i")
    db.execute("INSERT INTO t VALUES (20000, 0::bigint::simhash64)")
    db.execute("INSERT INTO t SELECT * FROM t WHERE id = 1")
    db.execute("ANALYZE t")
    with parallel_on_small_inputs(db):
        for query in ("SELECT id, fp FROM t", "SELECT id, fp FROM t WHERE true"):
            error = error_of(db, "SELECT count(*) FROM simhash_find_all(%s, 3, workers => %s)", (query, workers))
            assert error.sqlstate == "23505"
            assert re.search(r"returned id (1|20000) more than once", str(error))


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_the_transactions_own_uncommitted_rows_are_read(db, workers) -> None:
    db.execute("CREATE TABLE t AS SELECT i AS id, hashint8extended(i, 0)::simhash64 AS fp FROM generate_series(1, 20000) i")
    db.execute("ANALYZE t")
    with parallel_on_small_inputs(db) as messages:
        db.autocommit = False
        try:
            # near copies of rows 1..100, a row deleted, a row changed: none committed
            db.execute("INSERT INTO t SELECT 100000 + i, (hashint8extended(i, 0) # 4)::simhash64 FROM generate_series(1, 100) i")
            db.execute("DELETE FROM t WHERE id = 7")
            db.execute("UPDATE t SET fp = (hashint8extended(1, 0) # 1)::simhash64 WHERE id = 9")
            got = pairs(db, "SELECT id, fp FROM t", workers=workers)
            assert got == pairs(db, "SELECT id, fp FROM t WHERE true", workers=0)
            assert reads(messages) == ([] if workers == 0 else [("t", workers)])
            assert (1, 100001, 1) in got and (1, 9, 1) in got and (9, 100001, 2) in got
            assert not any(7 in (a, b) for a, b, _ in got) and (7, 100007, 1) not in got
            assert len([p for p in got if p[1] > 100000]) >= 99
            # a row added by the statement before, in the same transaction (a new command id)
            db.execute("INSERT INTO t VALUES (200000, (hashint8extended(2, 0) # 2)::simhash64)")
            assert (2, 200000, 1) in pairs(db, "SELECT id, fp FROM t", workers=workers)
        finally:
            db.rollback()
            db.autocommit = True
    assert pairs(db, "SELECT id, fp FROM t", workers=workers) == []


@contextmanager
def role(db):
    name = f"reader_{uuid.uuid4().hex[:10]}"
    db.execute(f"CREATE ROLE {name}")
    try:
        yield name
    finally:
        db.execute("RESET ROLE")
        db.execute(f"DROP OWNED BY {name}")
        db.execute(f"DROP ROLE {name}")


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_privileges_are_checked_as_the_executor_checks_them(db, workers) -> None:
    rows = near_duplicate_rows(3, 500)
    create_table(db, "t", rows)
    expected = brute_force_pairs(rows, 3)
    with role(db) as reader, parallel_on_small_inputs(db):
        db.execute(f"GRANT SELECT (id, body) ON t TO {reader}")
        db.execute(f"SET ROLE {reader}")
        for query in ("SELECT id, fp FROM t", "SELECT id, fp FROM t WHERE true"):
            error = error_of(db, "SELECT count(*) FROM simhash_find_all(%s, 3, workers => %s)", (query, workers))
            assert error.sqlstate == "42501"
            assert "permission denied for table t" in str(error)
        db.execute("RESET ROLE")
        db.execute(f"GRANT SELECT (fp) ON t TO {reader}")
        db.execute(f"SET ROLE {reader}")
        assert pairs(db, "SELECT id, fp FROM t", workers=workers) == expected
        db.execute("RESET ROLE")


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_row_level_security_takes_the_spi_path(db, workers) -> None:
    rows = near_duplicate_rows(5, 1000, shuffle=False)
    create_table(db, "t", rows)
    visible = [(i, h) for i, h in rows if i % 2 == 0]
    db.execute("ALTER TABLE t ENABLE ROW LEVEL SECURITY")
    db.execute("CREATE POLICY even ON t FOR SELECT USING (id % 2 = 0)")
    with role(db) as reader, parallel_on_small_inputs(db) as messages:
        db.execute(f"GRANT SELECT ON t TO {reader}")
        db.execute(f"SET ROLE {reader}")
        assert pairs(db, "SELECT id, fp FROM t", workers=workers) == brute_force_pairs(visible, 3)
        assert reads(messages) == []
        db.execute("RESET ROLE")
        # the owner is not subject to the policy: the direct read, every row
        messages.clear()
        assert pairs(db, "SELECT id, fp FROM t", workers=workers) == brute_force_pairs(rows, 3)
        assert reads(messages) == ([] if workers == 0 else [("t", workers)])


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_an_inheritance_parent_takes_the_spi_path(db, workers) -> None:
    rows = near_duplicate_rows(11, 1200)
    create_table(db, "parent", rows[:600])
    db.execute("CREATE TABLE child () INHERITS (parent)")
    with db.cursor().copy("COPY child (id, body, fp) FROM STDIN") as copy:
        for i, fp in rows[600:]:
            copy.write_row((i, "y", str(fp)))
    with parallel_on_small_inputs(db) as messages:
        assert pairs(db, "SELECT id, fp FROM parent", workers=workers) == brute_force_pairs(rows, 3)
        assert reads(messages) == []
        assert pairs(db, "SELECT id, fp FROM ONLY parent", workers=workers) == brute_force_pairs(rows[:600], 3)
        assert pairs(db, "SELECT id, fp FROM child", workers=workers) == brute_force_pairs(rows[600:], 3)
        assert reads(messages) == ([] if workers == 0 else [("parent", workers), ("child", workers)])


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_views_filters_casts_and_other_queries_take_the_spi_path(db, workers) -> None:
    rows = near_duplicate_rows(13, 800)
    create_table(db, "t", rows)
    db.execute("CREATE VIEW v AS SELECT id, fp FROM t")
    db.execute("CREATE TABLE t2 (id int, fp bigint)")
    db.execute("INSERT INTO t2 SELECT id, fp::bigint FROM t")
    db.execute("CREATE TEMP TABLE tt AS SELECT id, fp FROM t")
    expected = brute_force_pairs(rows, 3)
    low = [(i, h) for i, h in rows if i < 0]
    with parallel_on_small_inputs(db) as messages:
        for query in (
            "SELECT id, fp FROM v",
            "SELECT id, fp::simhash64 FROM t2",
            "SELECT id + 0, fp FROM t",
            "SELECT id, fp FROM t, (SELECT 1) one",
            "SELECT id, fp FROM t LIMIT 100000",
            "SELECT DISTINCT id, fp FROM t",
            "WITH w AS (SELECT id, fp FROM t) SELECT id, fp FROM w",
            "SELECT id, fp FROM t TABLESAMPLE SYSTEM (100)",
        ):
            messages.clear()
            assert pairs(db, query, workers=workers) == expected, query
            assert reads(messages) == [], query
        assert pairs(db, "SELECT id, fp FROM t WHERE id < 0", workers=workers) == brute_force_pairs(low, 3)
        # a temporary table: read straight, by the backend alone (workers cannot see it)
        messages.clear()
        assert pairs(db, "SELECT id, fp FROM tt", workers=workers) == expected
        assert reads(messages) == []
        # the columns the other way round are still the caller's mistake
        error = error_of(db, "SELECT * FROM simhash_find_all('SELECT fp, id FROM t', 3)")
        assert error.sqlstate == "42804"


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_a_null_id_is_the_same_error_and_null_fingerprints_are_skipped(db, workers) -> None:
    db.execute(
        "CREATE TABLE t AS SELECT i AS id, CASE WHEN i % 3 = 0 THEN NULL ELSE hashint8extended(i % 1000, 0) END::simhash64 AS fp"
        " FROM generate_series(1, 30000) i"
    )
    db.execute("ANALYZE t")
    with parallel_on_small_inputs(db) as messages:
        direct = pairs(db, "SELECT id, fp FROM t", workers=workers)
        assert direct == pairs(db, "SELECT id, fp FROM t WHERE true", workers=0)
        assert reads(messages) == ([] if workers == 0 else [("t", workers)])
        assert direct and not any(a % 3 == 0 or b % 3 == 0 for a, b, _ in direct)
        db.execute("INSERT INTO t VALUES (NULL, 5::bigint::simhash64)")
        for query in ("SELECT id, fp FROM t", "SELECT id, fp FROM t WHERE true"):
            for function in ("simhash_find_all(%s, 3, workers => %s)", "simhash_clusters(%s, 3, workers => %s)"):
                error = error_of(db, f"SELECT count(*) FROM {function}", (query, workers))
                name = function.split("(")[0]
                assert (error.sqlstate, error.diag.message_primary) == ("22004", f"{name}: the query returned a NULL id")


@pytest.mark.parametrize("spill_rows", [None, 100000], ids=["in-memory", "spilled"])
def test_statement_timeout_mid_read_leaves_no_workers_or_files(db, spill_rows) -> None:
    db.execute("CREATE UNLOGGED TABLE t AS SELECT i AS id, hashint8extended(i, 0)::simhash64 AS fp FROM generate_series(1, 3000000) i")
    db.execute("ANALYZE t")
    pid = db.info.backend_pid
    with parallel_on_small_inputs(db, spill_rows=spill_rows) as messages:
        for timeout in ("50ms", "200ms"):
            messages.clear()
            db.execute(f"SET statement_timeout = '{timeout}'")
            error = error_of(db, "SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM t', 3, workers => 2)")
            db.execute("SET statement_timeout = '120s'")
            assert error.sqlstate == "57014"
            assert reads(messages) == [("t", 2)]
            for _ in range(50):
                if parallel_workers_of(db, pid) == 0:
                    break
                time.sleep(0.1)
            assert parallel_workers_of(db, pid) == 0
            assert db.execute("SELECT name FROM pg_ls_tmpdir()").fetchall() == []
        small = "SELECT id, fp FROM t WHERE id <= 100"
        assert db.execute("SELECT count(*) FROM simhash_find_all(%s, 3, workers => 2)", (small,)).fetchone() == (0,)
