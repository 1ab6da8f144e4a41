"""simhash_nearest_distances and simhash_nn_histogram (SQL 1.2) against brute force."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolbox import distance
from toolbox.data import clustered_rows


def brute_force_nearest(rows, max_distance: int, scopes=None) -> dict[int, int | None]:
    """Each row's distance to its nearest other row (same scope), None beyond max_distance."""
    found = {}
    for i, (a, fa) in enumerate(rows):
        if fa is None:
            continue
        near = [distance(fa, fb) for j, (b, fb) in enumerate(rows)
                if j != i and fb is not None and (scopes is None or scopes[i] == scopes[j])]
        best = min(near, default=None)
        found[a] = best if best is not None and best <= max_distance else None
    return found


def load(conn: psycopg.Connection, rows, scopes=None, index: str | None = None) -> None:
    conn.execute("DROP TABLE IF EXISTS pg_temp.nn")
    conn.execute("CREATE TEMP TABLE nn (id bigint, fp simhash64, scope text)")
    with conn.cursor().copy("COPY pg_temp.nn (id, fp, scope) FROM STDIN") as copy:
        for i, (row_id, fp) in enumerate(rows):
            copy.write_row((row_id, None if fp is None else str(fp), None if scopes is None else scopes[i]))
    if index:
        conn.execute(f"CREATE INDEX ON pg_temp.nn USING {index} (fp)")
    conn.execute("ANALYZE pg_temp.nn")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=clustered_rows(), max_distance=st.integers(0, 20), index=st.sampled_from([None, "simhash_mih", "gin"]),
       scoped=st.booleans())
def test_nearest_distances_are_brute_force(shared_db, data, max_distance, index, scoped) -> None:
    rows, _, _ = data
    scopes = [f"s{i % 3}" if i % 5 else None for i in range(len(rows))] if scoped else None
    load(shared_db, rows, scopes, index)
    got = shared_db.execute(
        "SELECT id, nearest_id, distance, scope FROM simhash_nearest_distances('pg_temp.nn', 'id', 'fp', %s, "
        "1000000, %s)", ("scope" if scoped else None, max_distance)).fetchall()
    expected = brute_force_nearest(rows, max_distance, scopes)
    assert {i: d for i, _, d, _ in got} == expected
    fps = dict(rows)
    for row_id, nearest_id, d, _ in got:  # the nearest row named is at that distance, and another row
        assert (nearest_id is None) == (d is None)
        if nearest_id is not None:
            assert nearest_id != row_id and distance(fps[row_id], fps[nearest_id]) == d
    histogram = dict(shared_db.execute(
        "SELECT distance, documents FROM simhash_nn_histogram('pg_temp.nn', 'id', 'fp', %s, 1000000, %s)",
        ("scope" if scoped else None, max_distance)).fetchall())
    counts = Counter(expected.values())
    assert histogram == {**{d: counts.get(d, 0) for d in range(max_distance + 1)}, None: counts.get(None, 0)}


def test_a_sample_above_the_size(db) -> None:
    """Above sample_size rows, that many are sampled: the same ones at every call."""
    rows = [(i, (i * 0x9E3779B97F4A7C15) % 2**64) for i in range(1, 301)]
    load(db, rows)
    first = db.execute("SELECT id, distance FROM simhash_nearest_distances('pg_temp.nn', 'id', 'fp', NULL, 50)").fetchall()
    again = db.execute("SELECT id, distance FROM simhash_nearest_distances('pg_temp.nn', 'id', 'fp', NULL, 50)").fetchall()
    assert len(first) == 50 and first == again
    expected = brute_force_nearest(rows, 16)
    assert all(expected[i] == d for i, d in first)
    assert sum(n for _, n in db.execute("SELECT * FROM simhash_nn_histogram('pg_temp.nn', 'id', 'fp', NULL, 50)")) == 50


def test_empty_and_one_row_tables(db) -> None:
    for rows in ([], [(7, 12345)]):
        load(db, rows)
        histogram = db.execute("SELECT distance, documents FROM simhash_nn_histogram('pg_temp.nn', 'id', 'fp')").fetchall()
        assert histogram == [*((d, 0) for d in range(17)), (None, len(rows))]


@pytest.mark.parametrize("call, sqlstate", [
    ("simhash_nearest_distances('pg_temp.nn', 'id', 'fp', NULL, 0)", "22023"),
    ("simhash_nearest_distances('pg_temp.nn', 'id', 'fp', NULL, 10, 65)", "22023"),
    ("simhash_nearest_distances('pg_temp.nn', 'id', 'fp', NULL, 10, -1)", "22023"),
    ("simhash_nearest_distances('pg_temp.nn', NULL, 'fp')", "22004"),
    ("simhash_nearest_distances('pg_temp.nn', 'id', 'nope')", "42703"),
    ("simhash_nearest_distances('pg_temp.nn', 'id', 'fp', 'x\"; DROP TABLE nn; --')", "42703"),
    # the histogram checks before it lists its distances (2^31 of them took minutes)
    ("simhash_nn_histogram('pg_temp.nn', 'id', 'fp', NULL, 10, 2147483647)", "22023"),
    ("simhash_nn_histogram('pg_temp.nn', 'id', 'fp', NULL, 10, -1)", "22023"),
    ("simhash_nn_histogram('pg_temp.nn', 'id', 'fp', NULL, 0)", "22023"),
])
def test_bad_arguments_are_clear_errors(db, call: str, sqlstate: str) -> None:
    load(db, [(1, 1), (2, 3)])
    db.execute("SET statement_timeout = '5s'")  # a check that comes too late is a timeout (57014), not a hang
    with pytest.raises(psycopg.Error) as raised:
        db.execute(f"SELECT * FROM {call}").fetchall()
    assert raised.value.sqlstate == sqlstate
    assert db.execute("SELECT count(*) FROM pg_temp.nn").fetchone()[0] == 2
