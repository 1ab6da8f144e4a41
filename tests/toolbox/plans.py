"""A query's rows by one plan, the plan asserted: through a near-duplicate
index's bitmap scan, or by a sequential scan (the brute-force side of a
comparison).

Every planner setting is given each time, with SET LOCAL inside a savepoint:
a SET LOCAL lasts to the end of the caller's transaction, so a setting left
out would be whatever the last call set, and the brute-force side could
itself run on the index.  The plan is read with EXPLAIN before the query
runs, so a comparison of the two sides provably compares two plans.  Never
by a plain index scan: with the sequential scan off, the primary key's index
would do (the condition a filter).  Never prepared (psycopg prepares a query
run 5 times): a prepared statement's generic plan is kept whatever the
settings say later."""

from __future__ import annotations

import psycopg

BY_INDEX = ("enable_seqscan = off", "enable_bitmapscan = on", "enable_indexscan = off")
BY_SEQSCAN = ("enable_seqscan = on", "enable_bitmapscan = off", "enable_indexscan = off")
BY_ORDERING_SCAN = ("enable_seqscan = off", "enable_bitmapscan = off", "enable_indexscan = on")


def plan_of(conn: psycopg.Connection, sql: str, params=()) -> str:
    """EXPLAIN's text of sql with params (the plan the query would run with now)."""
    return "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params, prepare=False))


def rows_by_plan(conn: psycopg.Connection, sql: str, params=(), *, table: str, index: str | None,
                 ordering: bool = False) -> list[tuple]:
    """sql's rows through a bitmap scan of `index` (with ordering, its
    ordering scan: ORDER BY fp <~> q), or with index None by a sequential
    scan of `table` that uses no index at all (asserted)."""
    with conn.transaction():
        for setting in (BY_ORDERING_SCAN if ordering else BY_INDEX) if index else BY_SEQSCAN:
            conn.execute(f"SET LOCAL {setting}")
        plan = plan_of(conn, sql, params)
        if index:
            scan = f"Index Scan using {index}" if ordering else f"Bitmap Index Scan on {index}"
            assert scan in plan, plan
        else:
            assert f"Seq Scan on {table}" in plan and "Index" not in plan, plan
        return conn.execute(sql, params, prepare=False).fetchall()
