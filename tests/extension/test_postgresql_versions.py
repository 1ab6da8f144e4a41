"""What only some PostgreSQL majors have, exercised on the majors that have it.

`make test-all` runs this file on every supported major (14 to 18); each test
names the major its path starts at, and on older majors asserts the older
behaviour instead, so no version runs nothing.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors

from toolbox.plans import plan_of


def major(conn: psycopg.Connection) -> int:
    return conn.info.server_version // 10000


BAD_LITERALS = [
    ("12x", "22P02", 'invalid input syntax for type simhash64: "12x"'),
    ("-1", "22P02", 'invalid input syntax for type simhash64: "-1"'),
    ("18446744073709551616", "22003", 'value "18446744073709551616" is out of range for type simhash64'),
    ("0x10000000000000000", "22P02", 'invalid input syntax for type simhash64: "0x10000000000000000"'),
]


@pytest.mark.parametrize(("literal", "sqlstate", "message"), BAD_LITERALS)
def test_bad_literals_are_soft_errors_from_16_on(db: psycopg.Connection, literal: str, sqlstate: str,
                                                 message: str) -> None:
    """16+: simhash64_in reports through the soft-error context, so
    pg_input_is_valid() answers instead of raising; before 16 the same input
    is a plain ERROR with the same SQLSTATE and message."""
    if major(db) >= 16:
        valid, = db.execute("SELECT pg_input_is_valid(%s, 'simhash64')", (literal,)).fetchone()
        info = db.execute("SELECT message, sql_error_code FROM pg_input_error_info(%s, 'simhash64')",
                          (literal,)).fetchone()
        assert (valid, info) == (False, (message, sqlstate))
        assert db.execute("SELECT pg_input_is_valid('0xff', 'simhash64')").fetchone() == (True,)
    with pytest.raises(psycopg.Error) as caught:
        db.execute("SELECT %s::text::simhash64", (literal,))
    assert (caught.value.sqlstate, caught.value.diag.message_primary) == (sqlstate, message)


def test_copy_on_error_ignore_skips_bad_fingerprints_from_17_on(db: psycopg.Connection) -> None:
    """17+: COPY ... (ON_ERROR ignore) skips rows whose simhash64 is malformed and
    loads the rest (it needs the soft errors above); before 17 the bad row aborts
    the COPY and nothing is loaded."""
    db.execute("CREATE TABLE pages (id int, fp simhash64)")
    rows = [(1, "0xff"), (2, "not a hash"), (3, "18446744073709551615"), (4, "18446744073709551616")]
    options = "(ON_ERROR ignore)" if major(db) >= 17 else ""
    notices: list[str] = []
    db.add_notice_handler(lambda diag: notices.append(diag.message_primary))
    try:
        with db.cursor().copy(f"COPY pages FROM STDIN {options}") as copy:
            for row in rows:
                copy.write_row(row)
    except errors.InvalidTextRepresentation:
        assert major(db) < 17
    loaded = db.execute("SELECT id, fp::text FROM pages ORDER BY id").fetchall()
    if major(db) >= 17:
        assert loaded == [(1, "255"), (3, "18446744073709551615")]
        assert any("2 rows were skipped" in n for n in notices), notices
    else:
        assert loaded == []


def test_gin_index_builds_in_parallel_from_18_on(db: psycopg.Connection) -> None:
    """18+: GIN index builds use parallel workers, and so does simhash64_ops; the
    index they build answers exactly as a sequential scan does.  Before 18 the
    build is serial (no parallel request is logged)."""
    db.execute("CREATE TABLE pages AS SELECT g AS id, hashint8extended(g % 150000, 7)::simhash64 AS fp"
               " FROM generate_series(1, 200000) g")
    db.execute("SET max_parallel_maintenance_workers = 2; SET min_parallel_table_scan_size = 0;"
               " SET maintenance_work_mem = '64MB'; SET client_min_messages = debug1")
    messages: list[str] = []
    db.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
    db.execute("CREATE INDEX pages_fp ON pages USING gin (fp)")
    db.execute("RESET ALL")
    parallel = [m for m in messages if 'building index "pages_fp"' in m and "parallel workers" in m]
    assert bool(parallel) == (major(db) >= 18), messages

    query = "SELECT count(*), sum(id) FROM pages WHERE hamming_within(fp, %s::text::simhash64, 4)"
    centres = [str(r[0]) for r in db.execute("SELECT fp FROM pages WHERE id % 10000 = 0 ORDER BY id")]
    db.execute("SET enable_seqscan = off")
    plan = plan_of(db, query, (centres[0],))
    assert "Bitmap Index Scan on pages_fp" in plan, plan
    # never prepared (psycopg prepares a query run 5 times): a prepared statement's
    # generic plan is kept whatever enable_* says later, so both sides would use the index
    by_index = [db.execute(query, (c,), prepare=False).fetchone() for c in centres]
    db.execute("SET enable_seqscan = on; SET enable_bitmapscan = off")
    plan = plan_of(db, query, (centres[0],))
    assert "Seq Scan on pages" in plan and "Index" not in plan, plan
    assert by_index == [db.execute(query, (c,), prepare=False).fetchone() for c in centres]
    # ids 10000 ... 200000: rows up to 50000 and from 160000 on have a twin 150000 apart
    assert [count for count, _ in by_index] == [2] * 5 + [1] * 10 + [2] * 5
