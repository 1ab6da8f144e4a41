"""The planner's estimates of `within k bits` from the data
(pg_ext/src/index/pair_distances.c, planner_support.c; issue 50): ANALYZE of
a simhash64 column keeps the share of its sample's pairs within each distance,
and hamming_within(fp, q, k), fp <@ hamming_ball(q, k) and fp <~> q <= k
estimate from it: on clustered data (clusters of near copies and lone random
rows) within 10x of the rows there are, for every k = 0..8, whether q is a
near copy or a lone row; a generic plan (k a parameter) estimates as k = 3
does; without statistics the share of random fingerprints within k bits of a
point (the ball's volume); odd statistics, empty and all-NULL columns never
break the planner."""

from __future__ import annotations

import json
import math
import random

import psycopg
import pytest

from toolbox import copy_rows, flip_random

CLUSTERS, COPIES, LONE = 300, 8, 3000
FORMS = {
    "function": "hamming_within(fp, %s::simhash64, {k})",
    "operator": "fp <@ hamming_ball(%s::simhash64, {k})",
    "distance": "fp <~> %s::simhash64 <= {k}",
}


def clustered(seed: int, clusters: int = CLUSTERS, copies_each: int = COPIES, lone_rows: int = LONE
              ) -> tuple[list[int | None], list[int], list[int]]:
    """Clusters of near copies (each within 4 bits of its centre), lone random
    rows and a few NULLs; with some copies and some lone rows to query by."""
    rng = random.Random(seed)
    rows: list[int | None] = []
    copies = []
    for _ in range(clusters):
        centre = rng.getrandbits(64)
        cluster = [flip_random(centre, rng.randint(0, 4), rng) for _ in range(copies_each)]
        rows += cluster
        copies.append(cluster[0])
    lone = [rng.getrandbits(64) for _ in range(lone_rows)]
    rows += lone + [None] * 50
    rng.shuffle(rows)
    return rows, copies[:5], lone[:5]


def load(conn: psycopg.Connection, rows: list[int | None], analyze: bool = True) -> None:
    conn.execute("DROP TABLE IF EXISTS docs")
    conn.execute("CREATE TABLE docs (id bigint, fp simhash64) WITH (autovacuum_enabled = off)")
    copy_rows(conn, "COPY docs FROM STDIN", enumerate(rows))
    conn.execute("CREATE INDEX ON docs USING simhash_mih (fp)")
    if analyze:
        conn.execute("ANALYZE docs")


def estimated_rows(conn: psycopg.Connection, sql: str, params: tuple = ()) -> float:
    plan = conn.execute("EXPLAIN (FORMAT JSON) " + sql, params, prepare=False).fetchone()[0]
    plan = plan if isinstance(plan, list) else json.loads(plan)
    return plan[0]["Plan"]["Plan Rows"]


def estimate_and_count(conn: psycopg.Connection, condition: str, q: int) -> tuple[float, int]:
    estimate = estimated_rows(conn, f"SELECT * FROM docs WHERE {condition}", (str(q),))
    count = conn.execute(f"SELECT count(*) FROM docs WHERE {condition}", (str(q),), prepare=False).fetchone()[0]
    return estimate, count


@pytest.mark.parametrize("form", FORMS)
def test_clustered_data_estimates_within_10x_of_the_rows(db: psycopg.Connection, form: str) -> None:
    rows, copies, lone = clustered(50)
    load(db, rows)
    for q in copies + lone:
        for k in range(9):
            estimate, count = estimate_and_count(db, FORMS[form].format(k=k), q)
            assert max(count, 1) / 10 <= estimate <= max(count, 1) * 10, (form, q, k, estimate, count)


def test_the_issues_clusters_estimate_within_10x_for_their_members(db: psycopg.Connection) -> None:
    """Half the rows in clusters of 25 (issue 50's data, scaled down), queried
    by members: the estimate is the mean over all rows (13 rows at k = 8), within
    10x of a member's 1 to 25; a lone row's 1 would be 13x from it."""
    rows, copies, _ = clustered(56, clusters=200, copies_each=25, lone_rows=5000)
    load(db, rows)
    for q in copies:
        for k in range(9):
            estimate, count = estimate_and_count(db, FORMS["function"].format(k=k), q)
            assert count / 10 <= estimate <= count * 10, (q, k, estimate, count)


def test_random_data_estimates_the_ball_volume(db: psycopg.Connection) -> None:
    """Far from any cluster the share is the volume of the ball: about half the
    rows within 32 bits, none measurable within 8 (the planner's one row)."""
    rng = random.Random(51)
    load(db, [rng.getrandbits(64) for _ in range(5000)])
    q = rng.getrandbits(64)
    half, count = estimate_and_count(db, FORMS["function"].format(k=32), q)
    assert 0.5 * count <= half <= 2 * count and 1500 <= half <= 3500, (half, count)
    assert estimate_and_count(db, FORMS["function"].format(k=8), q)[0] == 1


def test_generic_plan_estimates_as_radius_3(db: psycopg.Connection) -> None:
    rows, copies, _ = clustered(52)
    load(db, rows)
    q = str(copies[0])
    constant = estimated_rows(db, "SELECT * FROM docs WHERE hamming_within(fp, %s::simhash64, 3)", (q,))
    db.execute("PREPARE near(simhash64, int) AS SELECT * FROM docs WHERE hamming_within(fp, $1, $2)")
    db.execute("PREPARE ball(simhash64, int) AS SELECT * FROM docs WHERE fp <@ hamming_ball($1, $2)")
    db.execute("SET plan_cache_mode = force_generic_plan")
    try:
        for statement in ["near", "ball"]:
            assert estimated_rows(db, f"EXECUTE {statement}('{q}', 8)") == constant
    finally:
        db.execute("RESET plan_cache_mode")
        db.execute("DEALLOCATE ALL")


def test_without_statistics_the_ball_volume(db: psycopg.Connection) -> None:
    rows, copies, _ = clustered(53)
    load(db, rows, analyze=False)
    db.execute("VACUUM docs")  # the table's size, not its statistics
    total = len(rows)
    for k, share in [(8, 0), (32, 0.55)]:
        estimate = estimated_rows(db, f"SELECT * FROM docs WHERE {FORMS['function'].format(k=k)}", (str(copies[0]),))
        assert estimate == max(1, round(share * total)) or math.isclose(estimate, share * total, rel_tol=0.02), \
            (k, estimate)


@pytest.mark.parametrize("rows", [[], [None] * 20, [7], [7] * 100, [0, 2**64 - 1] * 10],
                         ids=["empty", "all-null", "one", "identical", "two-values"])
def test_odd_columns_estimate_sensibly(db: psycopg.Connection, rows: list[int | None]) -> None:
    load(db, rows)
    for k in [0, 3, 64]:
        for form in FORMS.values():
            estimate = estimated_rows(db, f"SELECT * FROM docs WHERE {form.format(k=k)}", ("7",))
            assert 1 <= estimate <= max(len(rows), 1)
    identical = rows == [7] * 100
    if identical:
        assert estimated_rows(db, "SELECT * FROM docs WHERE hamming_within(fp, '7', 0)") == 100


def test_statistics_of_another_shape_are_ignored(db: psycopg.Connection) -> None:
    """A superuser may write anything into pg_statistic: the estimate then falls
    back to the ball's volume, never an error."""
    rows, copies, _ = clustered(54)
    load(db, rows)
    slot = db.execute(
        "SELECT s FROM pg_statistic, generate_series(1, 5) s"
        " WHERE starelid = 'docs'::regclass AND staattnum = 2"
        " AND (ARRAY[stakind1, stakind2, stakind3, stakind4, stakind5])[s] = 17064").fetchone()[0]
    sql = f"SELECT * FROM docs WHERE {FORMS['function'].format(k=8)}"
    assert estimated_rows(db, sql, (str(copies[0]),)) > 1
    for numbers in ["{0.5}", "{NaN," + ",".join(["1"] * 64) + "}", "{" + ",".join(["2"] * 65) + "}",
                    "{1," + ",".join(["0"] * 64) + "}"]:
        db.execute(f"UPDATE pg_statistic SET stanumbers{slot} = %s::real[]"
                   " WHERE starelid = 'docs'::regclass AND staattnum = 2", (numbers,))
        assert estimated_rows(db, sql, (str(copies[0]),)) == 1, numbers


def test_distance_bounds_become_hamming_within(db: psycopg.Connection) -> None:
    """`fp <~> q <= k` with k known at plan time (a constant, or a parameter of
    a custom plan) is planned as hamming_within(fp, q, k): the same rows (NULL
    where either is NULL), the index; a k outside 0..64 stays a comparison."""
    rows, copies, _ = clustered(55)
    load(db, rows)
    q = copies[0]
    db.execute("SET enable_seqscan = off")
    for condition, radius in [("fp <~> %s::simhash64 <= {k}", 0), ("fp <~> %s::simhash64 < {k}", 1),
                              ("{k} >= fp <~> %s::simhash64", 0), ("{k} > hamming_distance(%s::simhash64, fp)", 1)]:
        for k in [-1, 0, 4, 64, 65, 100]:
            sql = f"SELECT count(*) FROM docs WHERE {condition.format(k=k)}"
            expected = sum(fp is not None and (fp ^ q).bit_count() <= k - radius for fp in rows)
            assert db.execute(sql, (str(q),)).fetchone() == (expected,), (condition, k)
            plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, (str(q),)))
            assert ("hamming_within" in plan) == (0 <= k - radius <= 64), (condition, k, plan)
            if 0 <= k - radius <= 8:
                assert "Bitmap Index Scan" in plan, plan
    # A custom plan's parameters (psycopg binds them on the server).
    sql = "SELECT count(*) FROM docs WHERE fp <~> %s::simhash64 <= %s"
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, (str(q), 3), prepare=False))
    assert "hamming_within" in plan and "Bitmap Index Scan" in plan, plan
    assert db.execute("SELECT NULL::simhash64 <~> '1' <= 3, '1'::simhash64 <~> '1' <= 3").fetchone() == (None, True)
    db.execute("RESET enable_seqscan")
