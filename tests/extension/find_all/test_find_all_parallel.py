"""simhash_find_all and simhash_clusters with parallel workers: exactly the
serial result (brute force), workers really launched, and a cancelled run
leaves no workers behind."""

from __future__ import annotations

import random
import re
import threading
import time

import psycopg
import pytest
from hypothesis import given, settings
from toolbox import (
    brute_force_pairs,
    components,
    error_of,
    flip_random,
    parallel_on_small_inputs,
    parallel_workers_of,
)
from toolbox.data import clustered_rows, planted_pairs_query, rows_query

LAUNCHED = re.compile(r"simhash: (\d+) of (\d+) parallel workers launched")
WORKER_COUNTS = (0, 1, 2, 4)


def launched(messages: list[str]) -> list[int]:
    return [int(m.group(1)) for m in map(LAUNCHED.search, messages) if m]


def pairs(conn, query: str, k: int, blocks: int | None, workers: int | None) -> list[tuple[int, int, int]]:
    return sorted(
        conn.execute(
            "SELECT id1, id2, distance FROM simhash_find_all(%s, %s, %s, workers => %s)", (query, k, blocks, workers)
        ).fetchall()
    )


def clusters(conn, query: str, k: int, blocks: int | None, singletons: bool, workers: int | None) -> dict[int, int]:
    return dict(
        conn.execute(
            "SELECT id, cluster_id FROM simhash_clusters(%s, %s, %s, %s, workers => %s)",
            (query, k, blocks, singletons, workers),
        ).fetchall()
    )


def duplicate_heavy_rows(seed: int, n: int) -> list[tuple[int, int]]:
    """Groups of exact duplicates and near copies (1..4 bits) around random centres."""
    rng = random.Random(seed)
    centres = [rng.getrandbits(64) for _ in range(n // 20)]
    rows = []
    for i in range(n):
        centre = rng.choice(centres)
        kind = rng.random()
        fp = centre if kind < 0.4 else flip_random(centre, rng.randint(1, 4), rng) if kind < 0.8 else rng.getrandbits(64)
        rows.append((i * 7 - n, fp))
    rng.shuffle(rows)
    return rows


@settings(max_examples=60, deadline=None)
@given(clustered_rows())
def test_every_worker_count_equals_brute_force(shared_db, case) -> None:
    rows, k, blocks = case
    expected = brute_force_pairs(rows, k)
    edges = [(a, b) for a, b, _ in expected]
    nodes = [i for i, h in rows if h is not None]
    with parallel_on_small_inputs(shared_db):
        for workers in WORKER_COUNTS:
            assert pairs(shared_db, rows_query(rows), k, blocks, workers) == expected
            assert clusters(shared_db, rows_query(rows), k, blocks, True, workers) == components(nodes, edges)


@pytest.mark.parametrize(("k", "blocks"), [(3, 4), (3, 6), (2, 5), (5, 7)])
def test_workers_are_launched_and_agree_with_brute_force(shared_db, k, blocks) -> None:
    rows = duplicate_heavy_rows(k * 100 + blocks, 1500)
    query = rows_query(rows)
    expected = brute_force_pairs(rows, k)
    edges = [(a, b) for a, b, _ in expected]
    in_pairs = {i for edge in edges for i in edge}
    expected_clusters = components(sorted(in_pairs), edges)
    assert len(expected) > 1000
    with parallel_on_small_inputs(shared_db) as messages:
        for workers in WORKER_COUNTS:
            messages.clear()
            assert pairs(shared_db, query, k, blocks, workers) == expected
            assert clusters(shared_db, query, k, blocks, False, workers) == expected_clusters
            # the server has 8 worker slots, enough for these
            assert launched(messages) == ([] if workers == 0 else [workers, workers])


def test_many_rows_many_units_with_workers(db) -> None:
    """Enough rows for stripes and units to split (the small cases have one
    unit): 300k rows with 20k planted near pairs, serial and parallel equal."""
    db.execute("SET maintenance_work_mem = '256MB'")
    base, planted = 300_000, 20_000
    query = planted_pairs_query(base, planted)
    with parallel_on_small_inputs(db) as messages:
        serial = db.execute("SELECT id1, id2, distance FROM simhash_find_all(%s, 3, workers => 0)", (query,)).fetchall()
        parallel = db.execute("SELECT id1, id2, distance FROM simhash_find_all(%s, 3, workers => 2)", (query,)).fetchall()
        serial_clusters = db.execute("SELECT * FROM simhash_clusters(%s, 3, workers => 0)", (query,)).fetchall()
        parallel_clusters = db.execute("SELECT * FROM simhash_clusters(%s, 3, workers => 2)", (query,)).fetchall()
        assert launched(messages) == [2, 2]
    planted_pairs = {(i, i + base, 1) for i in range(1, planted + 1)}
    assert planted_pairs <= set(serial)
    assert sorted(serial) == sorted(parallel)
    assert sorted(serial_clusters) == sorted(parallel_clusters)
    assert len(serial_clusters) == 2 * len(serial)  # every planted pair is a cluster of two


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [(5, 123)],
        [(i, 42) for i in range(300)],  # all equal: 44850 pairs at distance 0
        [(i, None) for i in range(10)],
    ],
    ids=["empty", "one-row", "all-equal", "all-null"],
)
def test_edge_inputs_with_workers(shared_db, rows) -> None:
    expected = brute_force_pairs(rows, 3)
    nodes = [i for i, h in rows if h is not None]
    with parallel_on_small_inputs(shared_db):
        for workers in WORKER_COUNTS:
            assert pairs(shared_db, rows_query(rows), 3, None, workers) == expected
            got = clusters(shared_db, rows_query(rows), 3, None, True, workers)
            assert got == components(nodes, [(a, b) for a, b, _ in expected])


def test_small_inputs_launch_no_workers_by_default(shared_db) -> None:
    with parallel_on_small_inputs(shared_db) as messages:
        shared_db.execute("RESET simhash.find_all_parallel_min_rows")
        assert shared_db.execute("SHOW simhash.find_all_parallel_min_rows").fetchone() == ("100000",)
        query = rows_query(duplicate_heavy_rows(1, 500))
        shared_db.execute("SELECT count(*) FROM simhash_find_all(%s, 3, NULL, 4)", (query,))
        assert launched(messages) == []
        shared_db.execute("SET simhash.find_all_parallel_min_rows = 500")
        shared_db.execute("SELECT count(*) FROM simhash_find_all(%s, 3, NULL, 4)", (query,))
        assert launched(messages) == [4]


def test_workers_default_and_cap_follow_max_parallel_maintenance_workers(shared_db) -> None:
    query = rows_query(duplicate_heavy_rows(2, 500))
    with parallel_on_small_inputs(shared_db) as messages:
        shared_db.execute("SET max_parallel_maintenance_workers = 1")
        shared_db.execute("SELECT count(*) FROM simhash_find_all(%s, 3)", (query,))
        shared_db.execute("SELECT count(*) FROM simhash_clusters(%s, 3, workers => 3)", (query,))
        shared_db.execute("SET max_parallel_maintenance_workers = 0")
        shared_db.execute("SELECT count(*) FROM simhash_find_all(%s, 3, workers => 3)", (query,))
        assert launched(messages) == [1, 1]


@pytest.mark.parametrize(
    "function",
    [
        "simhash_find_all('SELECT 1, 0::bigint::simhash64', 3, NULL, %s)",
        "simhash_clusters('SELECT 1, 0::bigint::simhash64', 3, NULL, false, %s)",
    ],
)
def test_negative_workers_is_an_error(shared_db, function) -> None:
    error = error_of(shared_db, f"SELECT * FROM {function}", (-1,))
    assert error.sqlstate == "22023"
    assert "workers must be 0 or more, got -1" in str(error)
    # NULL: the default (max_parallel_maintenance_workers), not "no rows"
    assert shared_db.execute(f"SELECT count(*) FROM {function}", (None,)).fetchone() == (0,)


def test_inside_a_parallel_query_runs_serially(db) -> None:
    """Called from a PARALLEL SAFE wrapper in a parallel plan: no nested parallel mode."""
    db.execute("CREATE TABLE t AS SELECT i FROM generate_series(1, 4) i")
    db.execute(
        "CREATE FUNCTION pairs_of(n int) RETURNS bigint LANGUAGE sql PARALLEL SAFE AS "
        "$$ SELECT count(*) FROM simhash_find_all("
        "'SELECT i, hashint8extended(i % 3, 0)::simhash64 FROM generate_series(1, 200) i', 3, NULL, 2) $$"
    )
    with parallel_on_small_inputs(db):
        db.execute("SET debug_parallel_query = on" if db.info.server_version >= 160000 else "SET force_parallel_mode = on")
        db.execute("SET parallel_setup_cost = 0")
        got = db.execute("SELECT pairs_of(i) FROM t").fetchall()
    assert got == [(6567,)] * 4  # 67, 67, 66 equal fingerprints: C(67,2)*2 + C(66,2)


LONG_RUN = (
    "SELECT count(*) FROM simhash_find_all("
    "'SELECT i, hashint8extended(i, 0)::simhash64 FROM generate_series(1, 200000) i', 3, 32, 2)"
)


def none_left(conn: psycopg.Connection, pid: int) -> bool:
    for _ in range(50):
        if parallel_workers_of(conn, pid) == 0:
            return True
        time.sleep(0.1)
    return False


def temporary_files(conn: psycopg.Connection) -> list[str]:
    """The files under the database's temporary directories (pg_ls_tmpdir: superuser)."""
    return [row[0] for row in conn.execute("SELECT name FROM pg_ls_tmpdir()").fetchall()]


def test_statement_timeout_leaves_no_workers_or_files(db) -> None:
    with parallel_on_small_inputs(db) as messages:
        db.execute("SET statement_timeout = '700ms'")
        error = error_of(db, LONG_RUN)
        assert error.sqlstate == "57014"
        assert launched(messages) == [2]
        db.execute("RESET statement_timeout")
        pid = db.info.backend_pid
        assert none_left(db, pid)
        assert temporary_files(db) == []
        small = "SELECT i, hashint8extended(i % 5, 0)::simhash64 FROM generate_series(1, 100) i"
        assert db.execute("SELECT count(*) FROM simhash_find_all(%s, 3, 6, 2)", (small,)).fetchone() == (950,)
        assert launched(messages) == [2, 2]


def test_pg_cancel_backend_mid_run_leaves_no_workers(db, postgresql_proc) -> None:
    server = dict(host=postgresql_proc.host, port=postgresql_proc.port, user=postgresql_proc.user, dbname=db.info.dbname)
    pid = db.info.backend_pid
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            db.execute(LONG_RUN)
        except psycopg.Error as error:
            outcome.append(error)

    with parallel_on_small_inputs(db), psycopg.connect(autocommit=True, **server) as watcher:
        thread = threading.Thread(target=run)
        thread.start()
        for _ in range(200):
            if parallel_workers_of(watcher, pid) == 2:
                break
            time.sleep(0.05)
        assert parallel_workers_of(watcher, pid) == 2, "the run never had its workers"
        watcher.execute("SELECT pg_cancel_backend(%s)", (pid,))
        thread.join(60)
        assert not thread.is_alive()
        assert [e.sqlstate for e in outcome] == ["57014"]
        assert none_left(watcher, pid)
        assert temporary_files(watcher) == []
    assert db.execute("SELECT count(*) FROM simhash_clusters('SELECT 1, 0::bigint::simhash64', 3)").fetchone() == (0,)


def test_the_1_1_declarations_still_work(db) -> None:
    """A database still at 1.1 calls the same C entry points with fewer arguments."""
    query = rows_query(duplicate_heavy_rows(3, 400))
    expected = pairs(db, query, 3, None, 2)
    db.execute("DROP EXTENSION simhash")
    db.execute("CREATE EXTENSION simhash VERSION '1.1'")
    got = db.execute("SELECT id1, id2, distance FROM simhash_find_all(%s, 3, NULL)", (query,)).fetchall()
    assert sorted(got) == expected
    members = db.execute("SELECT id, cluster_id FROM simhash_clusters(%s, 3, NULL, true)", (query,)).fetchall()
    nodes = [int(i) for i, _ in members]
    assert dict(members) == components(nodes, [(a, b) for a, b, _ in expected])


def test_update_to_1_2_names_the_views_that_use_the_replaced_functions(db) -> None:
    """ALTER EXTENSION UPDATE replaces the query variants; a view on one of
    them stops it with the view's name, and nothing is lost."""
    db.execute("DROP EXTENSION simhash")
    db.execute("CREATE EXTENSION simhash VERSION '1.1'")
    db.execute("CREATE VIEW near_pairs AS SELECT * FROM simhash_find_all('SELECT 1::bigint, 0::bigint::simhash64', 3)")
    error = error_of(db, "ALTER EXTENSION simhash UPDATE TO '1.2'")
    assert error.sqlstate == "2BP01"
    assert "view near_pairs" in str(error)
    assert db.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash'").fetchone() == ("1.1",)
    assert db.execute("SELECT count(*) FROM near_pairs").fetchone() == (0,)
    db.execute("DROP VIEW near_pairs")
    db.execute("ALTER EXTENSION simhash UPDATE TO '1.2'")
    assert db.execute("SELECT count(*) FROM simhash_find_all('SELECT 1::bigint, 0::bigint::simhash64', 3, workers => 1)").fetchone() == (0,)
