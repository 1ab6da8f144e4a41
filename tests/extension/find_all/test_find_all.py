"""simhash_find_all and simhash_clusters against brute force on a real server."""

from __future__ import annotations

import random
import time
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolbox import brute_force_pairs, components, distance, error_of, flip
from toolbox.data import clustered_rows, planted_pairs_query, rows_query



def sql_pairs(conn, query: str, k: int, blocks: int | None) -> list[tuple[int, int, int]]:
    got = conn.execute("SELECT id1, id2, distance FROM simhash_find_all(%s, %s, %s)", (query, k, blocks))
    return sorted(got.fetchall())


def sql_clusters(conn, query: str, k: int, blocks: int | None, singletons: bool = False) -> dict[int, int]:
    got = conn.execute(
        "SELECT id, cluster_id FROM simhash_clusters(%s, %s, %s, %s)", (query, k, blocks, singletons)
    )
    return dict(got.fetchall())


@settings(max_examples=300, deadline=None)
@given(clustered_rows())
def test_find_all_equals_brute_force(shared_db, case) -> None:
    rows, k, blocks = case
    assert sql_pairs(shared_db, rows_query(rows), k, blocks) == brute_force_pairs(rows, k)


@settings(max_examples=200, deadline=None)
@given(clustered_rows(), st.booleans())
def test_clusters_are_connected_components(shared_db, case, singletons) -> None:
    rows, k, blocks = case
    edges = [(a, b) for a, b, _ in brute_force_pairs(rows, k)]
    in_pairs = {i for edge in edges for i in edge}
    nodes = [i for i, h in rows if h is not None and (singletons or i in in_pairs)]
    assert sql_clusters(shared_db, rows_query(rows), k, blocks, singletons) == components(nodes, edges)


@settings(max_examples=200, deadline=None)
@given(clustered_rows())
def test_array_variant_has_simhash_py_semantics(shared_db, case) -> None:
    """Distinct fingerprints, each pair once as (smaller, larger), NULLs ignored."""
    rows, k, blocks = case
    hashes = [h for _, h in rows]
    distinct = sorted({h for h in hashes if h is not None})
    expected = sorted((a, b, distance(a, b)) for a, b in combinations(distinct, 2) if distance(a, b) <= k)
    got = shared_db.execute(
        "SELECT hash1::text, hash2::text, distance FROM simhash_find_all(%s::text[]::simhash64[], %s, %s)",
        ([None if h is None else str(h) for h in hashes], k, blocks),
    ).fetchall()
    assert sorted((int(a), int(b), d) for a, b, d in got) == expected

    clusters = shared_db.execute(
        "SELECT hash::text, cluster_id::text FROM simhash_clusters(%s::text[]::simhash64[], %s, %s, true)",
        ([None if h is None else str(h) for h in hashes], k, blocks),
    ).fetchall()
    edges = [(a, b) for a, b, _ in expected]
    assert {int(h): int(c) for h, c in clusters} == components(distinct, edges)


def test_array_variant_matches_python_find_all(shared_db) -> None:
    hashing = pytest.importorskip("pysimhash_sql.hashing")
    rng = random.Random(7)
    centres = [rng.getrandbits(64) for _ in range(40)]
    hashes = [flip(rng.choice(centres), rng.sample(range(64), rng.randint(0, 4))) for _ in range(400)]
    for blocks in (4, 5, 6):
        got = shared_db.execute(
            "SELECT hash1::text, hash2::text FROM simhash_find_all(%s::text[]::simhash64[], 3, %s)",
            ([str(h) for h in hashes], blocks),
        ).fetchall()
        assert sorted((int(a), int(b)) for a, b in got) == hashing.find_all(hashes, blocks, 3)


@pytest.mark.parametrize(
    ("k", "blocks"), [(0, 1), (2, 3), (3, 4), (3, None), (3, 6), (4, 9), (7, 10), (10, None), (12, 14)]
)
def test_bigger_inputs_equal_brute_force(shared_db, k, blocks) -> None:
    """A few thousand rows, so that buckets fill up and radix passes split."""
    rng = random.Random(k * 100 + (blocks or 0))
    centres = [rng.getrandbits(64) for _ in range(300)]
    rows = []
    for i in rng.sample(range(-5000, 5000), 1500):
        h = flip(rng.choice(centres), rng.sample(range(64), rng.randint(0, k + 2)))
        rows.append((i, None if i % 17 == 0 else h))
    query = rows_query(rows)
    expected = brute_force_pairs(rows, k)
    assert expected, "the data should have pairs"
    assert sql_pairs(shared_db, query, k, blocks) == expected
    nodes = [i for i, h in rows if h is not None]
    assert sql_clusters(shared_db, query, k, blocks, True) == components(nodes, [(a, b) for a, b, _ in expected])


@pytest.mark.parametrize("simd", ["auto", "avx2", "none"])
def test_big_groups_compared_by_every_copy_of_the_comparison_equal_brute_force(db, simd) -> None:
    """Groups of hundreds of rows sharing a table's key (near copies of a few
    fingerprints, the low 16 bits never flipped) are compared eight rows at a
    time where the CPU has AVX2 (simhash_within_many over the entries, read as
    pairs of words; simhash.debug_simd picks the copy): every pair at every k
    equals brute force, group sizes no multiple of 8."""
    rng = random.Random(61)
    rows = []
    for group, size in enumerate([301, 157, 90]):
        centre = rng.getrandbits(64)
        for _ in range(size):
            rows.append((len(rows), flip(centre, rng.sample(range(16, 64), rng.randint(0, 9)))))
    rows += [(len(rows) + i, rng.getrandbits(64)) for i in range(200)]
    db.execute(f"SET simhash.debug_simd = {simd}")
    for k in [0, 2, 5, 8]:
        expected = brute_force_pairs(rows, k)
        assert expected and sql_pairs(db, rows_query(rows), k, None) == expected, k


def test_colliding_keys_in_one_bucket(shared_db) -> None:
    """Distinct keys crafted to share one bucket (the bucket is the top bits of
    key * 0x9E3779B97F4A7C15), each key twice: the big bucket is sorted by key
    before comparing, and must still give exactly the equal pairs (and
    clusters)."""
    inverse = pow(0x9E3779B97F4A7C15, -1, 2**64)
    # 1000 rows: 11 bucket bits, so products sharing their top 13 bits collide.
    products = [(0x1234 << 51) | (i // 2 * 0x10001) for i in range(1000)]
    rows = [(i, p * inverse % 2**64) for i, p in enumerate(products)]
    pairs = brute_force_pairs(rows, 0)
    assert len(pairs) == 500
    assert sql_pairs(shared_db, rows_query(rows), 0, 1) == pairs
    # clusters find the distinct fingerprints with the same bucket sort
    expected = components([i for i, _ in rows], [(a, b) for a, b, _ in pairs])
    assert sql_clusters(shared_db, rows_query(rows), 0, 1) == expected


@pytest.mark.parametrize("id_type", ["smallint", "integer", "bigint"])
def test_id_types(shared_db, id_type) -> None:
    rows = [(3, 0), (-2, 1), (1, 3), (7, None)]
    assert sql_pairs(shared_db, rows_query(rows, id_type), 2, None) == brute_force_pairs(rows, 2)


def test_defaults_and_nulls(shared_db) -> None:
    rows = [(1, 0), (2, 7), (3, 15), (4, 0)]
    query = rows_query(rows)
    # max_distance defaults to 3, blocks to the function's choice.
    got = shared_db.execute("SELECT id1, id2, distance FROM simhash_find_all(%s)", (query,)).fetchall()
    assert sorted(got) == brute_force_pairs(rows, 3)
    # Like a STRICT function: NULL input or distance gives no rows.
    for args in ((None, 3), (query, None)):
        assert shared_db.execute("SELECT count(*) FROM simhash_find_all(%s::text, %s)", args).fetchone() == (0,)
    assert shared_db.execute("SELECT count(*) FROM simhash_clusters(%s, 3, NULL, NULL)", (query,)).fetchone() == (0,)


@pytest.mark.parametrize(
    ("query", "sqlstate", "message"),
    [
        ("SELECT 1::bigint, 0::bigint::simhash64, 2", "42804", "must return 2 columns"),
        ("SELECT 1::bigint", "42804", "must return 2 columns"),
        ("SELECT 'a'::text, 0::bigint::simhash64", "42804", "first column must be an id of type smallint, integer or bigint, not text"),
        ("SELECT 1.5::numeric, 0::bigint::simhash64", "42804", "not numeric"),
        ("SELECT 1, 0::bigint", "42804", "second column must be a simhash64 fingerprint, not bigint"),
        ("SELEC 1", "42601", "syntax error"),
        ("SELECT 1, 0::bigint::simhash64; SELECT 2, 0::bigint::simhash64", "22023", "one statement that returns rows"),
        ("", "22023", "one statement that returns rows"),
        ("SELECT * FROM no_such_table", "42P01", "no_such_table"),
        ("SELECT NULL::bigint, 0::bigint::simhash64", "22004", "NULL id"),
        ("SELECT 1, 0::bigint::simhash64 UNION ALL SELECT 1, 5::bigint::simhash64", "23505", "id 1 more than once"),
    ],
)
@pytest.mark.parametrize("function", ["simhash_find_all", "simhash_clusters"])
def test_hostile_queries_get_clear_errors(shared_db, function, query, sqlstate, message) -> None:
    error = error_of(shared_db, f"SELECT * FROM {function}(%s, 3)", (query,))
    assert error.sqlstate == sqlstate
    assert message in str(error)


@pytest.mark.parametrize(
    ("k", "blocks", "sqlstate", "message"),
    [
        (-1, None, "22023", "Hamming distance -1 is out of range"),
        (65, None, "22023", "out of range"),
        (32, None, "22023", "max_distance 32 is too large"),
        (3, 3, "22023", "blocks must be greater than max_distance"),
        (3, -4, "22023", "blocks must be greater than max_distance"),
        (3, 33, "22023", "33 blocks cannot find"),
        (5, 32, "54000", "tables, more than"),
    ],
)
def test_bad_parameters(shared_db, k, blocks, sqlstate, message) -> None:
    for sql in (
        "SELECT * FROM simhash_find_all('SELECT 1, 0::bigint::simhash64', %s, %s)",
        "SELECT * FROM simhash_clusters(ARRAY[0::bigint::simhash64], %s, %s)",
    ):
        error = error_of(shared_db, sql, (k, blocks))
        assert (error.sqlstate, message in str(error)) == (sqlstate, True)


def test_query_runs_with_the_callers_privileges(db) -> None:
    db.execute("CREATE TABLE secret (id bigint, fp simhash64)")
    db.execute("CREATE ROLE nobody_in_particular")
    db.execute("SET ROLE nobody_in_particular")
    error = error_of(db, "SELECT * FROM simhash_find_all('SELECT id, fp FROM secret')")
    assert error.sqlstate == "42501"


@pytest.mark.parametrize(
    "call",
    [
        # 4960 tables of 200k rows: many seconds of sorting
        "simhash_find_all('SELECT i, hashint8extended(i, 0)::simhash64 FROM generate_series(1, 200000) i', 3, 32)",
        # 65535 fingerprints with one key on 4 blocks: 2e9 comparisons in one bucket
        "simhash_clusters('SELECT i, (i::bigint << 48)::simhash64 FROM generate_series(1, 65535) i', 3, 4)",
    ],
)
def test_statement_timeout_interrupts_a_long_run(db, call) -> None:
    db.execute("SET statement_timeout = '500ms'")
    start = time.monotonic()
    error = error_of(db, f"SELECT count(*) FROM {call}")
    assert error.sqlstate == "57014"
    assert time.monotonic() - start < 3


def test_clusters_of_many_exact_duplicates_are_fast(db) -> None:
    """Three groups of ~33k equal fingerprints (0, 1, 2; within 1 bit of 0):
    joined directly, not compared pairwise, so well within the timeout."""
    db.execute("SET statement_timeout = '10s'")
    got = db.execute(
        "SELECT count(*), count(DISTINCT cluster_id), min(cluster_id) FROM simhash_clusters("
        "'SELECT i, (i % 3)::bigint::simhash64 FROM generate_series(1, 100000) i', 1)"
    ).fetchone()
    assert got == (100000, 1, 1)


def test_results_bigger_than_work_mem_spill(db) -> None:
    """500 equal fingerprints make 124750 pairs, far more than 64kB of work_mem holds."""
    db.execute("SET work_mem = '64kB'")
    got = db.execute(
        "SELECT count(*), count(DISTINCT (id1, id2)), max(distance), bool_and(id1 < id2) FROM simhash_find_all("
        "'SELECT i, 42::bigint::simhash64 FROM generate_series(1, 500) i', 3)"
    ).fetchone()
    assert got == (124750, 124750, 0, True)


def test_two_million_rows_agree_across_block_counts(db) -> None:
    """Beyond 2M rows the radix sort takes three passes.  Too big for brute
    force: 100k planted pairs must all come out at distance 1, and the
    results for different block counts must be the same set."""
    db.execute("SET maintenance_work_mem = '256MB'")
    base, planted = 2_000_000, 100_000
    query = planted_pairs_query(base, planted)
    db.execute("CREATE TEMP TABLE found AS SELECT * FROM simhash_find_all(%s, 3, 5)", (query,))
    found_planted = db.execute(
        f"SELECT count(*) FROM found WHERE id2 - id1 = {base} AND id1 <= {planted} AND distance = 1"
    ).fetchone()[0]
    assert found_planted == planted
    for blocks in (4, 6):
        differences = db.execute(
            "SELECT count(*) FROM ((TABLE found EXCEPT SELECT * FROM simhash_find_all(%s, 3, %s))"
            " UNION ALL (SELECT * FROM simhash_find_all(%s, 3, %s) EXCEPT TABLE found)) d",
            (query, blocks, query, blocks),
        ).fetchone()[0]
        assert differences == 0
