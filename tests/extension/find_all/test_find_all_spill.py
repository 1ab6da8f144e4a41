"""simhash_find_all and simhash_clusters past maintenance_work_mem: the rows go
to temporary files and are searched partition by partition, with exactly the
in-memory result (brute force on small inputs, made to spill with
simhash.debug_spill_rows; the in-memory run on bigger ones, made to spill with a
tiny maintenance_work_mem), and nothing left behind."""

from __future__ import annotations

from contextlib import contextmanager

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolbox import brute_force_pairs, components, error_of
from toolbox.data import clustered_rows, planted_pairs_query, rows_query


@contextmanager
def rows_in_memory(conn: psycopg.Connection, rows: int):
    """At most `rows` rows in memory at once: every input bigger spills."""
    conn.execute(f"SET simhash.debug_spill_rows = {rows}")
    try:
        yield
    finally:
        conn.execute("RESET simhash.debug_spill_rows")


@contextmanager
def temporary_file_messages(conn: psycopg.Connection):
    """The server's log lines of temporary files removed (log_temp_files = 0)."""
    messages: list[str] = []

    def keep(diagnostic) -> None:
        if (diagnostic.message_primary or "").startswith("temporary file:"):
            messages.append(diagnostic.message_primary)

    conn.add_notice_handler(keep)
    conn.execute("SET log_temp_files = 0")
    conn.execute("SET client_min_messages = log")
    try:
        yield messages
    finally:
        conn.execute("RESET client_min_messages")
        conn.execute("RESET log_temp_files")
        conn.remove_notice_handler(keep)


def pairs(conn, query: str, k: int, blocks: int | None, workers: int = 0) -> list[tuple[int, int, int]]:
    got = conn.execute("SELECT * FROM simhash_find_all(%s, %s, %s, %s)", (query, k, blocks, workers))
    return sorted(got.fetchall())


def clusters(conn, query: str, k: int, blocks: int | None, singletons: bool, workers: int = 0) -> dict[int, int]:
    got = conn.execute("SELECT * FROM simhash_clusters(%s, %s, %s, %s, %s)", (query, k, blocks, singletons, workers))
    return dict(got.fetchall())


@settings(max_examples=150, deadline=None)
@given(clustered_rows(), st.integers(1, 12), st.sampled_from([0, 1, 2, 4]))
def test_spilled_runs_equal_brute_force(shared_db, case, memory_rows, workers) -> None:
    """A few rows in memory: several levels of partition files, partitions of
    one block value and groups of one key bigger than memory all come up, in
    the backend alone or with parallel workers sharing the partitions."""
    rows, k, blocks = case
    expected = brute_force_pairs(rows, k)
    nodes = [i for i, h in rows if h is not None]
    shared_db.execute("SET simhash.find_all_parallel_min_rows = 0")
    with rows_in_memory(shared_db, memory_rows):
        assert pairs(shared_db, rows_query(rows), k, blocks, workers) == expected
        got = clusters(shared_db, rows_query(rows), k, blocks, True, workers)
        assert got == components(nodes, [(a, b) for a, b, _ in expected])
    shared_db.execute("RESET simhash.find_all_parallel_min_rows")


@pytest.mark.parametrize("ordered", [True, False], ids=["ids-increasing", "ids-shuffled"])
def test_duplicate_ids_are_found_in_spilled_rows(shared_db, ordered) -> None:
    """Ids arriving out of order are checked by PostgreSQL's external sort."""
    order = "i" if ordered else "hashint4(i)"
    query = f"SELECT i % 999, 0::bigint::simhash64 FROM generate_series(1, 2000) i ORDER BY {order}"
    with rows_in_memory(shared_db, 100):
        error = error_of(shared_db, "SELECT count(*) FROM simhash_find_all(%s, 3)", (query,))
    assert error.sqlstate == "23505"
    assert "more than once" in str(error)


def test_groups_of_equal_fingerprints_bigger_than_memory(shared_db) -> None:
    """300 equal fingerprints, 50 rows in memory: every pair, one cluster."""
    query = "SELECT i, 42::bigint::simhash64 FROM generate_series(1, 300) i"
    with rows_in_memory(shared_db, 50):
        got = shared_db.execute(
            "SELECT count(*), count(DISTINCT (id1, id2)), bool_and(id1 < id2) FROM simhash_find_all(%s, 3)", (query,)
        ).fetchone()
        assert got == (44850, 44850, True)
        assert shared_db.execute(
            "SELECT count(*), count(DISTINCT cluster_id), min(cluster_id) FROM simhash_clusters(%s, 3)", (query,)
        ).fetchone() == (300, 1, 1)


@pytest.mark.parametrize("order", ["i", "hashint4(i)"])
def test_tiny_maintenance_work_mem_spills_to_files_with_the_in_memory_result(db, order) -> None:
    """700k rows do not fit 10 MB (18 bytes a row; 22 for clusters): the run goes through
    temporary files, and gives what the in-memory run gives."""
    base, planted, duplicates = 600_000, 50_000, 50_000
    query = planted_pairs_query(base, planted, duplicates, order)
    db.execute("SET maintenance_work_mem = '256MB'")
    in_memory = db.execute("SELECT * FROM simhash_find_all(%s, 3)", (query,)).fetchall()
    in_memory_clusters = db.execute("SELECT * FROM simhash_clusters(%s, 3)", (query,)).fetchall()
    db.execute("SET maintenance_work_mem = '10MB'")
    with temporary_file_messages(db) as files:
        spilled = db.execute("SELECT * FROM simhash_find_all(%s, 3)", (query,)).fetchall()
        assert len(files) > 10, "the run should have spilled"
        files.clear()
        spilled_clusters = db.execute("SELECT * FROM simhash_clusters(%s, 3)", (query,)).fetchall()
        assert len(files) > 10, "the run should have spilled"
    assert sorted(spilled) == sorted(in_memory)
    assert sorted(spilled_clusters) == sorted(in_memory_clusters)
    found = set(spilled)
    assert all((i, i + base, 1) in found for i in range(1, planted + 1, 997))
    # 4999 groups of 11 equal fingerprints (ten duplicates of a row 1..4999), one of ten
    assert sum(1 for _, _, d in spilled if d == 0) == 4999 * 55 + 45


def test_too_little_maintenance_work_mem_for_a_spilled_run_is_a_clear_error(db) -> None:
    db.execute("SET maintenance_work_mem = '1MB'")
    error = error_of(
        db, "SELECT count(*) FROM simhash_find_all('SELECT i, hashint8extended(i, 0)::simhash64 FROM generate_series(1, 100000) i')"
    )
    assert error.sqlstate == "54000"
    assert "maintenance_work_mem is too small" in str(error)
    assert "Raise maintenance_work_mem" in str(error.diag.message_hint)


@pytest.mark.parametrize("workers", [0, 2])
def test_cancelled_spilled_run_leaves_no_files(db, workers) -> None:
    db.execute("SET simhash.debug_spill_rows = 1000")
    db.execute("SET statement_timeout = '300ms'")
    error = error_of(
        db, "SELECT count(*) FROM simhash_find_all("
        f"'SELECT i, hashint8extended(i, 0)::simhash64 FROM generate_series(1, 3000000) i', 3, NULL, {workers})"
    )
    assert error.sqlstate == "57014"
    db.execute("RESET statement_timeout")
    assert db.execute("SELECT count(*) FROM pg_ls_tmpdir()").fetchone() == (0,)
    assert db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker' AND leader_pid = pg_backend_pid()"
    ).fetchone() == (0,)


def test_spilled_runs_share_the_partitions_with_workers(db) -> None:
    """Past maintenance_work_mem the workers are launched too, and the result
    is the serial one."""
    query = planted_pairs_query(200_000, 20_000, 10_000)
    messages: list[str] = []
    db.add_notice_handler(lambda d: messages.append(d.message_primary or ""))
    db.execute("SET simhash.debug_spill_rows = 30000")
    serial = sorted(db.execute("SELECT * FROM simhash_find_all(%s, 3, workers => 0)", (query,)).fetchall())
    serial_clusters = sorted(db.execute("SELECT * FROM simhash_clusters(%s, 3, workers => 0)", (query,)).fetchall())
    db.execute("SET client_min_messages = debug1")
    parallel = sorted(db.execute("SELECT * FROM simhash_find_all(%s, 3, workers => 2)", (query,)).fetchall())
    parallel_clusters = sorted(db.execute("SELECT * FROM simhash_clusters(%s, 3, workers => 2)", (query,)).fetchall())
    db.execute("RESET client_min_messages")
    assert sum("parallel workers launched" in m and "(spilled)" in m for m in messages) == 2
    assert parallel == serial and parallel_clusters == serial_clusters
