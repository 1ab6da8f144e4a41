"""New rows against stored rows — the crawler's nightly batch, the paper's
batch mode: `fresh n WHERE [NOT] EXISTS (SELECT FROM stored s WHERE
hamming_within(s.fp, n.fp, k))` is one index lookup per new row, runs in
parallel workers on the new rows' side, and equals brute force
(docs/find_all.md, "New rows against stored rows")."""

from __future__ import annotations

import json
import random

import numpy as np
import psycopg
import pytest

from toolbox import INDEX_KINDS, copy_rows, flip_random
from toolbox.data import planted_fingerprints

EXISTS = ("SELECT n.id FROM fresh n WHERE {negation} EXISTS"
          " (SELECT FROM stored s WHERE hamming_within(s.fp, n.fp, {k}))")
# Costs that let a small table's plan go parallel, as a big table's would.
PARALLEL = "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET max_parallel_workers_per_gather = 2"


def fresh_fingerprints(rng: random.Random, stored: list[int | None], n: int, k: int) -> list[int | None]:
    """New rows: near copies of stored rows (some just outside k), exact copies,
    unrelated fingerprints and NULLs."""
    present = [fp for fp in stored if fp is not None]
    fresh: list[int | None] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.4:
            fresh.append(flip_random(rng.choice(present), rng.randint(0, k + 2), rng))
        elif roll < 0.5:
            fresh.append(rng.choice(present))
        elif roll < 0.97:
            fresh.append(rng.getrandbits(64))
        else:
            fresh.append(None)
    return fresh


def brute_force_seen(stored: list[int | None], fresh: list[int | None], k: int) -> set[int]:
    """The positions of fresh rows within k bits of some stored row."""
    values = np.array([fp for fp in stored if fp is not None], dtype=np.uint64)
    return {i for i, fp in enumerate(fresh)
            if fp is not None and bool((np.bitwise_count(values ^ np.uint64(fp)) <= k).any())}


def plan_nodes(plan: dict) -> list[dict]:
    return [plan, *(node for child in plan.get("Plans", []) for node in plan_nodes(child))]


@pytest.mark.parametrize("kind", list(INDEX_KINDS))
@pytest.mark.parametrize("k", [0, 3, 7])
def test_batch_check_runs_in_parallel_and_equals_brute_force(db: psycopg.Connection, kind: str, k: int) -> None:
    rng = random.Random(f"{kind}{k}")
    stored = planted_fingerprints(rng, 20_000)
    fresh = fresh_fingerprints(rng, stored, 3000, k)
    db.execute("CREATE TABLE stored (id int PRIMARY KEY, fp simhash64)")
    db.execute("CREATE TABLE fresh (id int PRIMARY KEY, fp simhash64) WITH (parallel_workers = 2)")
    copy_rows(db, "COPY stored FROM STDIN", enumerate(stored))
    copy_rows(db, "COPY fresh FROM STDIN", enumerate(fresh))
    db.execute(f"CREATE INDEX ON stored USING {INDEX_KINDS[kind].format(options='')}")
    db.execute("ANALYZE stored, fresh")
    db.execute(PARALLEL)

    seen_sql = EXISTS.format(negation="", k=k)
    (plan,), = db.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {seen_sql}").fetchone()
    nodes = plan_nodes(plan["Plan"])
    assert any(node.get("Workers Launched", 0) >= 1 for node in nodes), json.dumps(plan)
    assert any(node["Node Type"] == "Bitmap Index Scan" and node.get("Relation Name", "stored") == "stored"
               for node in nodes), json.dumps(plan)

    expected = brute_force_seen(stored, fresh, k)
    assert {i for (i,) in db.execute(seen_sql)} == expected
    unseen = {i for (i,) in db.execute(EXISTS.format(negation="NOT", k=k))}
    assert unseen == set(range(len(fresh))) - expected
