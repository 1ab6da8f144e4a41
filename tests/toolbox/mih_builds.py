"""simhash_mih builds and their answers, for the index tests: a CREATE INDEX
(or REINDEX) with parallel workers asked for and what its DEBUG1 report says
(processes, chunks spilled, merge passes, peak sort memory), and every centre
at every radius 0..64 through the index against brute force."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import psycopg

from toolbox import copy_rows

# The report mih_build.c gives at DEBUG1.
REPORT = re.compile(
    r'simhash_mih: index "(?P<index>[^"]+)" built by (?P<processes>\d+) processes '
    r"\((?P<requested>\d+) parallel workers requested\): (?P<rows>\d+) rows, (?P<chunks>\d+) chunks spilled "
    r"\((?P<spilled_mb>[\d.]+) MB\), (?P<passes>\d+) merge passes, peak sort memory (?P<leader_mb>[\d.]+) MB "
    r"in the leader, (?P<worker_mb>[\d.]+) MB in a worker"
)

# PostgreSQL gives each participant of a parallel build at least 32 MB
# (plan_create_index_workers): the least maintenance_work_mem for w workers.
MB_PER_PARTICIPANT = 32


@dataclass
class BuildReport:
    processes: int
    requested: int
    rows: int
    chunks: int
    passes: int
    leader_mb: float
    worker_mb: float


def build(conn: psycopg.Connection, statement: str, workers: int = 0,
          maintenance_work_mem: str | None = None, table: str = "docs") -> BuildReport:
    """Runs a CREATE INDEX / REINDEX of one simhash_mih index on `table` with
    `workers` parallel workers asked for, whatever the table's size (its
    parallel_workers setting, which the planner takes as it is), and enough
    maintenance_work_mem for them unless given; returns the build's report."""
    messages: list[str] = []

    def keep(diagnostic: psycopg.errors.Diagnostic) -> None:
        messages.append(diagnostic.message_primary or "")

    memory = maintenance_work_mem or f"{max(64, MB_PER_PARTICIPANT * (workers + 1))}MB"
    conn.add_notice_handler(keep)
    if workers:
        conn.execute(f"ALTER TABLE {table} SET (parallel_workers = {workers})")
    try:
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        conn.execute("SET min_parallel_table_scan_size = 0")
        conn.execute(f"SET maintenance_work_mem = '{memory}'")
        conn.execute("SET client_min_messages = debug1")
        conn.execute(statement)
    finally:
        conn.execute("RESET client_min_messages")
        conn.execute("RESET maintenance_work_mem")
        conn.execute("RESET min_parallel_table_scan_size")
        conn.execute("RESET max_parallel_maintenance_workers")
        conn.remove_notice_handler(keep)
    reports = [m for m in map(REPORT.search, messages) if m]
    assert reports, messages
    m = reports[-1]
    return BuildReport(int(m["processes"]), int(m["requested"]), int(m["rows"]), int(m["chunks"]),
                       int(m["passes"]), float(m["leader_mb"]), float(m["worker_mb"]))


def replay(conn: psycopg.Connection, rows: dict[int, tuple], operations: list[tuple], workers: int) -> dict[int, tuple]:
    """Applies a hypothesis history's operations to table docs, whose rows
    (id -> column values) end with the fingerprint, after the scope (domain)
    if any; returns its rows after them.  Operations: ("insert", [values]),
    ("delete", m, r): ids = r mod m, ("update", m, bit): the fingerprints of
    ids = 0 mod m get the bit flipped, ("move", m, domain): ids = 1 mod m move
    to the domain, ("vacuum",), ("reindex concurrently",) with `workers`."""
    for operation in operations:
        kind = operation[0]
        if kind == "insert":
            new = dict(enumerate(operation[1], start=max(rows, default=0) + 1))
            copy_rows(conn, "COPY docs FROM STDIN", ((i, *values) for i, values in new.items()))
            rows.update(new)
        elif kind == "delete":
            _, modulus, remainder = operation
            conn.execute("DELETE FROM docs WHERE id %% %s = %s", (modulus, remainder))
            rows = {i: values for i, values in rows.items() if i % modulus != remainder}
        elif kind == "update":
            _, modulus, bit = operation
            conn.execute("UPDATE docs SET fp = (fp::bigint # (1::bigint << %s))::simhash64 WHERE id %% %s = 0",
                         (bit, modulus))
            rows = {i: (*v[:-1], v[-1] ^ (1 << bit) if v[-1] is not None and i % modulus == 0 else v[-1])
                    for i, v in rows.items()}
        elif kind == "move":
            _, modulus, domain = operation
            conn.execute("UPDATE docs SET domain = %s WHERE id %% %s = 1", (domain, modulus))
            rows = {i: (domain if i % modulus == 1 else v[0], *v[1:]) for i, v in rows.items()}
        elif kind == "vacuum":
            conn.execute("VACUUM docs")
        else:
            assert build(conn, "REINDEX INDEX CONCURRENTLY docs_fp", workers).processes == workers + 1
    return rows


# The radii assert_exact asks: every one to 16 (a query's block layout, its
# sub-blocks and their limits change across these), then steps to 64 (past the
# layout: every block probed, one path for all).
RADII = (*range(17), 20, 24, 32, 40, 48, 56, 63, 64)

# Every query at every radius of RADII in one statement, through the index: (qid, k, matching ids).
THROUGH_INDEX = """
SELECT q.qid, r.k, coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.id IS NOT NULL), '{{}}')
FROM queries q CROSS JOIN unnest('{{""" + ",".join(map(str, RADII)) + """}}'::int[]) r(k)
LEFT JOIN LATERAL (SELECT id FROM {table} WHERE {scope}hamming_within(fp, q.center, r.k)) d ON true
GROUP BY q.qid, r.k ORDER BY q.qid, r.k
"""


def assert_exact(conn: psycopg.Connection, rows: dict[int, int | None], centres: list[int],
                 index: str = "docs_fp", table: str = "docs",
                 scopes: dict[int, object] | None = None, scope_of_query: list[object] | None = None) -> None:
    """Every centre at every radius of RADII, through `index`, equals brute force
    over rows (id -> fingerprint).  Scoped (scopes: id -> the row's scope
    value, scope_of_query: each centre's), a query asks `domain = its scope`."""
    conn.execute("DROP TABLE IF EXISTS queries")
    if scopes is None:
        conn.execute("CREATE TABLE queries (qid int, center simhash64)")
        copy_rows(conn, "COPY queries FROM STDIN", enumerate(centres))
        sql = THROUGH_INDEX.format(table=table, scope="")
    else:
        assert scope_of_query is not None
        conn.execute(f"CREATE TABLE queries AS SELECT 0 AS qid, domain, NULL::simhash64 AS center "
                     f"FROM {table} WHERE false")
        copy_rows(conn, "COPY queries (qid, domain, center) FROM STDIN",
                  ((i, s, c) for i, (s, c) in enumerate(zip(scope_of_query, centres))))
        sql = THROUGH_INDEX.format(table=table, scope="domain = q.domain AND ")
    conn.execute("ANALYZE queries")
    # the index probed with each query's ball (and scope), not read whole for a join on the scope
    for setting in ("enable_seqscan", "enable_memoize", "enable_hashjoin", "enable_mergejoin"):
        conn.execute(f"SET {setting} = off")
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql))
    assert f"Bitmap Index Scan on {index}" in plan and "fp <@ ROW(q.center, r.k)" in plan, plan
    got = conn.execute(sql).fetchall()
    conn.execute("RESET ALL")
    expected = []
    for qid, centre in enumerate(centres):
        ids = sorted(i for i in rows if scopes is None or scopes[i] == scope_of_query[qid])
        fps = [rows[i] for i in ids]
        values = np.array([fp for fp in fps if fp is not None], dtype=np.uint64)
        present = np.array([ids[j] for j, fp in enumerate(fps) if fp is not None], dtype=np.int64)
        distances = np.bitwise_count(values ^ np.uint64(centre))
        expected += [(qid, k, sorted(present[distances <= k].tolist())) for k in RADII]
    assert got == expected


def assert_exact_on_large(conn: psycopg.Connection, centres: list[int], radii: range = range(11),
                          count_radii: tuple[int, ...] = (16, 24)) -> None:
    """For a table too large for assert_exact (docs(id, fp), read back once):
    each centre through the index against numpy's brute force, the ids at
    `radii`, the count at `count_radii` (where thousands of rows match)."""
    # binary: millions of integers are read back faster than parsed from text
    data = conn.cursor(binary=True).execute("SELECT id::bigint, fp::bigint FROM docs WHERE fp IS NOT NULL").fetchall()
    ids = np.fromiter((r[0] for r in data), dtype=np.int64, count=len(data))
    fps = np.fromiter((r[1] for r in data), dtype=np.int64, count=len(data)).view(np.uint64)
    conn.execute("SET enable_seqscan = off")
    for centre in centres:
        distances = np.bitwise_count(fps ^ np.uint64(centre))
        for k in radii:
            got = sorted(r[0] for r in conn.execute(
                "SELECT id FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s)", (str(centre), k)))
            assert got == sorted(ids[distances <= k].tolist()), (centre, k)
        for k in count_radii:
            got = conn.execute("SELECT count(*) FROM docs WHERE hamming_within(fp, %s::text::simhash64, %s)",
                               (str(centre), k)).fetchone()[0]
            assert got == int((distances <= k).sum()), (centre, k)
    conn.execute("RESET enable_seqscan")
