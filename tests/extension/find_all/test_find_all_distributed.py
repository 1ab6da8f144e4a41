"""simhash_find_all_distributed and simhash_clusters_distributed without Citus.

On a server without Citus the two functions run the single-node code: their
results must equal simhash_find_all's and simhash_clusters'.  The pieces the
workers run on Citus are tested here too, with the moving done by hand: every
row put into the batches of its buckets by simhash_partition_batches (what
each shard does), each bucket's pairs by simhash_find_all_batches over its
batches (what each bucket does), and the union compared with brute force,
also with the rows spilled to temporary files.  1.1's pieces
(simhash_partition_key, simhash_find_all_part) likewise.
tests/extension/test_citus.py runs the same on a real cluster.
"""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbox import brute_force_pairs, components, error_of
from toolbox.data import clustered_rows


def load(conn: psycopg.Connection, rows: list[tuple[int, int | None]], table: str = "pg_temp.docs") -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id bigint, fp simhash64)")
    with conn.cursor().copy(f"COPY {table} (id, fp) FROM STDIN") as copy:
        for i, h in rows:
            copy.write_row((i, None if h is None else str(h)))


def batches_by_hand(conn: psycopg.Connection, k: int, rows: int, buckets: int) -> None:
    """pg_temp.docs's rows as simhash_partition_batches sends them, into pg_temp.batches."""
    conn.execute("DROP TABLE IF EXISTS pg_temp.batches")
    conn.execute("""CREATE TABLE pg_temp.batches AS SELECT (b).part, (b).batch
                    FROM (SELECT simhash_partition_batches('SELECT id, fp FROM pg_temp.docs', %s, %s, %s) AS b) s""",
                 (k, rows, buckets))


def bucket_query(k: int, bucket: int) -> str:
    """The batches of a bucket: parts bucket * passes .. bucket * passes + passes - 1, passes = k + 1."""
    return f"SELECT part, batch FROM pg_temp.batches WHERE part / {k + 1} = {bucket}"


def pairs_by_buckets(conn: psycopg.Connection, k: int, rows: int, buckets: int) -> list[tuple[int, int, int]]:
    """The pairs of pg_temp.docs found bucket by bucket, as on Citus."""
    batches_by_hand(conn, k, rows, buckets)
    return sorted(conn.execute(
        """SELECT u.* FROM generate_series(0, %(buckets)s - 1) bucket,
           LATERAL simhash_find_all_batches(format('SELECT part, batch FROM pg_temp.batches WHERE part / %%s = %%s',
                                                   %(k)s + 1, bucket), %(k)s, %(rows)s) b,
           LATERAL simhash_unpack_pairs(b.batch) u""",
        {"k": k, "rows": rows, "buckets": buckets},
    ).fetchall())


def clusters_by_buckets(conn: psycopg.Connection, k: int, rows: int, buckets: int, singletons: bool) -> dict[int, int]:
    """The clusters of pg_temp.docs from each bucket's edges, joined by simhash_components."""
    batches_by_hand(conn, k, rows, buckets)
    singles = " UNION ALL SELECT id, id FROM pg_temp.docs WHERE fp IS NOT NULL" if singletons else ""
    edges = f"""SELECT u.id1, u.id2 FROM generate_series(0, {buckets} - 1) bucket,
        LATERAL simhash_clusters_batches(format('SELECT part, batch FROM pg_temp.batches WHERE part / %s = %s',
                                                {k} + 1, bucket), {k}, {rows}) b,
        LATERAL simhash_unpack_pairs(b.batch) u{singles}"""
    return dict(conn.execute("SELECT id, cluster_id FROM simhash_components(%s)", (edges,)).fetchall())


# The rows a run says it has choose the search's layout: as many as there are,
# and so many that it takes more blocks (and so more tables per pass).
LAYOUT_ROWS = st.sampled_from([None, 10**8])


@settings(max_examples=200, deadline=None)
@given(clustered_rows(), st.integers(1, 5), LAYOUT_ROWS)
def test_bucketed_pairs_equal_brute_force(shared_db, case, buckets, layout_rows) -> None:
    """Each pair within k bits comes out of exactly one bucket and pass: the
    union of the buckets equals brute force, with no pair twice."""
    rows, k, _ = case
    load(shared_db, rows)
    assert pairs_by_buckets(shared_db, k, layout_rows or len(rows), buckets) == brute_force_pairs(rows, k)


@settings(max_examples=100, deadline=None)
@given(clustered_rows(), st.integers(1, 4), st.booleans())
def test_bucketed_clusters_equal_components(shared_db, case, buckets, singletons) -> None:
    """The edges of each bucket and pass, joined by simhash_components, are the
    connected components of all pairs (exact duplicates included)."""
    rows, k, _ = case
    load(shared_db, rows)
    pairs = brute_force_pairs(rows, k)
    nodes = [i for i, h in rows if h is not None] if singletons else sorted({i for p in pairs for i in p[:2]})
    assert clusters_by_buckets(shared_db, k, len(rows), buckets, singletons) == components(
        nodes, [(a, b) for a, b, _ in pairs])


@settings(max_examples=60, deadline=None)
@given(clustered_rows(), st.integers(1, 3), st.integers(1, 8))
def test_bucketed_search_spilled_to_files(shared_db, case, buckets, memory_rows) -> None:
    """Past the memory (simhash.debug_spill_rows), both a shard's rows and a
    bucket's passes go through temporary files, with the same results."""
    rows, k, _ = case
    load(shared_db, rows)
    shared_db.execute(f"SET simhash.debug_spill_rows = {memory_rows}")
    try:
        pairs = pairs_by_buckets(shared_db, k, len(rows), buckets)
        clusters = clusters_by_buckets(shared_db, k, len(rows), buckets, False)
    finally:
        shared_db.execute("RESET simhash.debug_spill_rows")
    expected = brute_force_pairs(rows, k)
    assert pairs == expected
    assert clusters == components(sorted({i for p in expected for i in p[:2]}), [(a, b) for a, b, _ in expected])


def test_batches_carry_any_ids(db) -> None:
    """Keys travel as differences from the one before: ids at both ends of
    bigint, in any order, come back as they were."""
    ids = [-(2**63), 2**63 - 1, 0, -1, 1, 2**62, -(2**62), 7]
    rows = [(i, 0x0F0F_0F0F_0F0F_0F0F ^ (1 << n)) for n, i in enumerate(ids)]
    load(db, rows)
    assert pairs_by_buckets(db, 3, len(rows), 2) == brute_force_pairs(rows, 3)


def test_batches_of_the_wrong_shape_are_refused(db) -> None:
    for batches, message in [
        ("SELECT 0, '\\x0102'::bytea", "a batch ends inside an entry"),
        ("SELECT NULL::int, '\\x'::bytea", "a batch without a part"),
        ("SELECT 'x'::text, '\\x'::bytea", "must return 2 columns, a part of type integer and a batch"),
    ]:
        error = error_of(db, "SELECT count(*) FROM simhash_find_all_batches(%s, 3, 10)", (batches,))
        assert message in str(error)
    assert "not a whole number of pairs" in str(error_of(db, "SELECT * FROM simhash_unpack_pairs('\\x01')"))


def test_the_cluster_parts_need_citus(db) -> None:
    """Without Citus the functions that work on its nodes say so."""
    db.execute("CREATE TABLE t_1 (id bigint, fp simhash64)")
    for call in ["simhash_prepare_results('{x}', 3, 2)",
                 "simhash_write_shard('t_1', 'id', 'fp', 3, 10, 2, 'x')",
                 "simhash_find_all_batches('SELECT 0, ''\\x''::bytea', 3, 10, '{x_0}')"]:
        error = error_of(db, f"SELECT * FROM {call}")
        assert error.sqlstate == "0A000" and "runs on the nodes of a Citus cluster only" in str(error)


def pairs_by_hand(conn: psycopg.Connection, k: int, shards: int) -> list[tuple[int, int, int]]:
    """The pairs of pg_temp.docs found shard by shard and part by part, as on Citus."""
    return sorted(conn.execute(
        """SELECT p.* FROM generate_series(0, %(k)s) c, generate_series(0, %(shards)s - 1) s,
           LATERAL simhash_find_all_part(
               format('SELECT id, fp FROM pg_temp.docs WHERE fp IS NOT NULL
                       AND abs(simhash_partition_key(fp, %%s, %%s) %%%% %%s) = %%s', %(k)s, c, %(shards)s, s),
               %(k)s, c) p""",
        {"k": k, "shards": shards},
    ).fetchall())


@settings(max_examples=200, deadline=None)
@given(clustered_rows(), st.integers(1, 4))
def test_partitioned_pairs_equal_brute_force(shared_db, case, shards) -> None:
    """Each pair within k bits comes out of exactly one (shard, part): the union
    of the parts equals brute force, with no pair twice."""
    rows, k, _ = case
    load(shared_db, rows)
    assert pairs_by_hand(shared_db, k, shards) == brute_force_pairs(rows, k)


@settings(max_examples=150, deadline=None)
@given(clustered_rows(), st.integers(1, 4), st.booleans())
def test_partitioned_clusters_equal_components(shared_db, case, shards, singletons) -> None:
    """Clusters of each (shard, part), joined by simhash_components, are the
    connected components of all pairs."""
    rows, k, _ = case
    load(shared_db, rows)
    singles = " UNION ALL SELECT id, id FROM pg_temp.docs WHERE fp IS NOT NULL" if singletons else ""
    edges = f"""SELECT c.* FROM generate_series(0, {k}) part, generate_series(0, {shards} - 1) s,
        LATERAL simhash_clusters(format('SELECT id, fp FROM pg_temp.docs WHERE fp IS NOT NULL
            AND abs(simhash_partition_key(fp, %s, %s) %% %s) = %s', {k}, part, {shards}, s), {k}) c{singles}"""
    got = dict(shared_db.execute("SELECT id, cluster_id FROM simhash_components(%s)", (edges,)).fetchall())
    pairs = brute_force_pairs(rows, k)
    nodes = [i for i, h in rows if h is not None] if singletons else sorted({i for p in pairs for i in p[:2]})
    assert got == components(nodes, [(a, b) for a, b, _ in pairs])


@settings(max_examples=100, deadline=None)
@given(clustered_rows(), st.booleans())
def test_without_citus_the_single_node_code_runs(shared_db, case, singletons) -> None:
    rows, k, _ = case
    load(shared_db, rows)
    got = sorted(shared_db.execute(
        "SELECT * FROM simhash_find_all_distributed('pg_temp.docs', 'id', 'fp', %s)", (k,)).fetchall())
    assert got == brute_force_pairs(rows, k)
    clusters = shared_db.execute(
        "SELECT * FROM simhash_clusters_distributed('pg_temp.docs', 'id', 'fp', %s, %s)", (k, singletons))
    single = shared_db.execute(
        "SELECT * FROM simhash_clusters('SELECT id, fp FROM pg_temp.docs', %s, NULL, %s)", (k, singletons))
    assert sorted(clusters.fetchall()) == sorted(single.fetchall())


def test_defaults_quoting_and_nulls(db) -> None:
    db.execute('CREATE TABLE "Odd Pages" ("Page Id" int PRIMARY KEY, "the fp" simhash64)')
    db.execute("""INSERT INTO "Odd Pages" VALUES (1, '0'), (2, '7'), (3, '15'), (4, NULL), (5, '0')""")
    assert sorted(db.execute(
        """SELECT * FROM simhash_find_all_distributed('"Odd Pages"', 'Page Id', 'the fp')""").fetchall()
    ) == [(1, 2, 3), (1, 5, 0), (2, 3, 1), (2, 5, 3)]
    assert dict(db.execute(
        """SELECT * FROM simhash_clusters_distributed('"Odd Pages"', 'Page Id', 'the fp', 4)""").fetchall()
    ) == {1: 1, 2: 1, 3: 1, 5: 1}
    for call in ["simhash_find_all_distributed(NULL, 'Page Id', 'the fp')",
                 """simhash_find_all_distributed('"Odd Pages"', 'Page Id', 'the fp', NULL)""",
                 """simhash_clusters_distributed('"Odd Pages"', NULL, 'the fp')""",
                 """simhash_clusters_distributed('"Odd Pages"', 'Page Id', 'the fp', 3, NULL)"""]:
        assert db.execute(f"SELECT count(*) FROM {call}").fetchone() == (0,)


@pytest.mark.parametrize(
    ("call", "sqlstate", "message"),
    [
        ("simhash_find_all_distributed('t', 'id', 'nope')", "42703", 'column "nope" does not exist'),
        ("simhash_find_all_distributed('t', 'body', 'fp')", "42804", "first column must be an id"),
        ("simhash_clusters_distributed('t', 'id', 'body')", "42804", "second column must be a simhash64"),
        ("simhash_find_all_distributed('t', 'id', 'fp', 40)", "22023", "max_distance 40 is too large"),
        ("simhash_find_all_distributed('t', 'id', 'fp', -1)", "22023", "out of range"),
        ("simhash_find_all_part('SELECT id, fp FROM t', 3, 4)", "22023", "part must be between 0 and max_distance (3)"),
        ("simhash_find_all_part('SELECT id, fp FROM t', 3, -1)", "22023", "part must be between"),
        ("simhash_partition_key('1', 2, 3)", "22023", "part must be between 0 and max_distance (2), got 3"),
        ("simhash_components('SELECT id, fp FROM t')", "42804", "second column must be an id"),
        ("simhash_components('SELECT id, NULL::int FROM t')", "22004", "NULL id"),
        ("simhash_components('SELECT id FROM t')", "42804", "must return 2 columns, two integer ids"),
        ("simhash_partition_batches('SELECT id, fp FROM t', 3, 10, 0)", "22023", "buckets must be between 1 and"),
        ("simhash_partition_batches('SELECT id, fp FROM t', 3, -1, 2)", "22023", "rows must be 0 or more"),
        ("simhash_partition_batches('SELECT id, body FROM t', 3, 10, 2)", "42804", "second column must be a simhash64"),
        ("simhash_find_all_batches('SELECT 0, NULL::bytea', 40, 10)", "22023", "max_distance 40 is too large"),
    ],
)
def test_clear_errors(db, call, sqlstate, message) -> None:
    db.execute("CREATE TABLE t (id bigint, body text, fp simhash64)")
    db.execute("INSERT INTO t VALUES (1, 'a', '1'), (2, 'b', '3')")
    error = error_of(db, f"SELECT count(*) FROM {call}")
    assert error.sqlstate == sqlstate
    assert message in str(error)


def test_components_of_edges(db) -> None:
    edges = "VALUES (5::int8, 3::int2), (3, 9), (-4, -4), (7, 8), (9223372036854775807, -9223372036854775808)"
    assert dict(db.execute("SELECT * FROM simhash_components(%s)", (edges,)).fetchall()) == {
        3: 3, 5: 3, 9: 3, -4: -4, 7: 7, 8: 7,
        9223372036854775807: -9223372036854775808, -9223372036854775808: -9223372036854775808,
    }


def test_partition_key_depends_only_on_its_block(shared_db) -> None:
    """Fingerprints equal on coarse block c (of k + 1) get the same key for c, and
    other keys almost always differ."""
    row = shared_db.execute("""
        SELECT simhash_partition_key('0x00000000ffffffff', 1, 0) = simhash_partition_key('0x12345678ffffffff', 1, 0),
               simhash_partition_key('0x00000000ffffffff', 1, 1) = simhash_partition_key('0x12345678ffffffff', 1, 1),
               simhash_partition_key('0xffffffff00000000', 1, 1) = simhash_partition_key('0xffffffff12345678', 1, 1),
               simhash_partition_key('0', 3, 0) <> simhash_partition_key('0', 3, 1),
               simhash_partition_key('0', 3, 0) <> simhash_partition_key('0', 2, 0)""").fetchone()
    assert row == (True, False, True, True, True)
