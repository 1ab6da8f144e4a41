"""simhash_mih's page format (2: compact run pages, TIDs in the first run
only; pg_ext/src/index/mih/mih_page.h): exact at every radius 0..64, against
brute force, through every kind of write — inserts (the pending list),
flushes into run sets, deletes and updates, VACUUM (dead rows out of the first
run, their fingerprints out of the later runs, run sets merged), REINDEX
CONCURRENTLY — on data that stresses the format: many rows of one fingerprint
(pages of equal keys, equal keys across pages), keys sharing long prefixes,
the extreme values; and an index of the previous page format is an error
that asks for a REINDEX, after which it works.
"""

from __future__ import annotations

import random

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolbox import MAX_FINGERPRINT as MAX, copy_rows, error_of, flip, module_database
from toolbox.mih_builds import assert_exact, build, replay
from toolbox.mih_pages import META_VERSION, connect, edit_index, own_server


@pytest.fixture(scope="module")
def format_db(postgresql_proc):
    """A database of this module's own (hypothesis runs a test body many times)."""
    yield from module_database(postgresql_proc, "mih_format")


def near(rng: random.Random, centre: int, bits: int) -> int:
    return flip(centre, rng.sample(range(64), bits))


@st.composite
def fingerprints(draw, centres: list[int]) -> int | None:
    """Mostly near a few centres (exact duplicates among them), some keys sharing
    all but their low bits, the extremes, random ones, NULLs."""
    kind = draw(st.sampled_from(["near", "near", "same", "low bits", "extreme", "random", "null"]))
    if kind == "null":
        return None
    if kind == "random":
        return draw(st.integers(0, MAX))
    if kind == "extreme":
        return draw(st.sampled_from([0, 1, MAX, MAX - 1, 1 << 63, (1 << 63) - 1]))
    centre = draw(st.sampled_from(centres))
    if kind == "same":
        return centre
    if kind == "low bits":
        return centre ^ draw(st.integers(0, 255))
    return flip(centre, draw(st.lists(st.integers(0, 63), max_size=10, unique=True)))


@st.composite
def histories(draw):
    """A table's rows and what happens to them: (runs, pending limit, rows,
    operations, centres, the parallel workers every build asks for)."""
    centres = draw(st.lists(st.integers(0, MAX), min_size=1, max_size=4))
    values = fingerprints(centres)
    rows = draw(st.lists(values, max_size=300))
    operations = draw(st.lists(st.one_of(
        st.tuples(st.just("insert"), st.lists(values, min_size=1, max_size=120)),
        st.tuples(st.just("delete"), st.integers(2, 5), st.integers(0, 4)),
        st.tuples(st.just("update"), st.integers(2, 5), st.integers(0, 63)),
        st.tuples(st.just("vacuum")),
        st.tuples(st.just("reindex concurrently")),
    ), max_size=6))
    return (draw(st.sampled_from([1, 2, 3, 4])), draw(st.sampled_from([7, 50, 65536])), rows, operations, centres,
            draw(st.sampled_from([0, 1, 2])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=histories())
def test_exact_at_every_radius_through_every_kind_of_write(format_db: psycopg.Connection, history) -> None:
    runs, pending_limit, initial, operations, centres, workers = history
    conn = format_db
    conn.execute("DROP TABLE IF EXISTS docs")
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
    rows = {i: (fp,) for i, fp in enumerate(initial)}
    copy_rows(conn, "COPY docs FROM STDIN", ((i, fp) for i, (fp,) in rows.items()))
    report = build(conn, f"CREATE INDEX docs_fp ON docs USING simhash_mih (fp) WITH (runs = {runs})", workers)
    assert report.processes == workers + 1
    conn.execute(f"SET simhash.mih_pending_limit = {pending_limit}")
    rows = {i: fp for i, (fp,) in replay(conn, rows, [
        ("insert", [(fp,) for fp in op[1]]) if op[0] == "insert" else op for op in operations], workers).items()}
    conn.execute("RESET simhash.mih_pending_limit")
    rng = random.Random(len(rows))
    assert_exact(conn, rows, centres + [near(rng, c, 3) for c in centres] + [0, MAX, rng.getrandbits(64)])
    conn.execute("SELECT simhash_mih_check('docs_fp')")


def test_many_rows_of_one_fingerprint(db: psycopg.Connection) -> None:
    """20,000 rows of one fingerprint fill pages of equal keys (past a page's
    4096 entries), 3000 of a near one cross page boundaries; deletes take one
    row's entry out of each run, not every entry of that fingerprint."""
    rng = random.Random(3)
    one = rng.getrandbits(64)
    other = near(rng, one, 2)
    rows = {i: (one if i < 20_000 else other if i < 23_000 else rng.getrandbits(64)) for i in range(30_000)}
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
    copy_rows(db, "COPY docs FROM STDIN", rows.items())
    db.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
    centres = [one, other, near(rng, one, 1), near(rng, other, 4)]
    assert_exact(db, rows, centres)
    db.execute("DELETE FROM docs WHERE id % 3 = 0 OR id BETWEEN 19990 AND 20010")
    rows = {i: fp for i, fp in rows.items() if i % 3 and not 19990 <= i <= 20010}
    db.execute("VACUUM docs")
    assert_exact(db, rows, centres)
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_vacuum_takes_many_dead_rows_out_in_batches(db: psycopg.Connection) -> None:
    """With maintenance_work_mem at its least, VACUUM takes the fingerprints of
    80,000 dead rows out of the later runs in several batches."""
    rng = random.Random(4)
    rows = {i: rng.getrandbits(64) if i % 7 else rng.getrandbits(16) for i in range(100_000)}
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off)")
    copy_rows(db, "COPY docs FROM STDIN", rows.items())
    db.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
    size = db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0]
    db.execute("DELETE FROM docs WHERE id % 5 <> 0")
    rows = {i: fp for i, fp in rows.items() if i % 5 == 0}
    db.execute("SET maintenance_work_mem = '1MB'")
    db.execute("VACUUM docs")
    assert db.execute("SELECT pg_relation_size('docs_fp')").fetchone()[0] == size  # compacted in place
    centres = [rows[0], rows[35], near(rng, rows[70], 2), 0, 12345]
    assert_exact(db, rows, centres)
    db.execute("SELECT simhash_mih_check('docs_fp')")


def test_keys_sharing_long_prefixes_and_the_extremes(db: psycopg.Connection) -> None:
    """Runs of consecutive values (pages spanning a few bits), the two ends of
    the 64-bit range, and every run count."""
    values = [*range(5000), *(MAX - i for i in range(3000)), *((1 << 63) + i * 977 for i in range(3000)),
              *(i << 40 for i in range(2000))]
    rows = dict(enumerate(values))
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
    copy_rows(db, "COPY docs FROM STDIN", rows.items())
    for runs in (1, 3, 5, 8):
        db.execute(f"DROP INDEX IF EXISTS docs_fp; CREATE INDEX docs_fp ON docs USING simhash_mih (fp)"
                   f" WITH (runs = {runs})")
        assert_exact(db, rows, [0, 4095, MAX, MAX - 2047, 1 << 63, 17 << 40, 0x5555_5555_5555_5555])
        db.execute("SELECT simhash_mih_check('docs_fp')")


@pytest.mark.parametrize(("statement", "rebuild"), [
    ("SELECT count(*) FROM docs WHERE hamming_within(fp, '12345', 3)", "REINDEX INDEX docs_fp"),
    ("INSERT INTO docs VALUES (-1, '12345')", "REINDEX INDEX CONCURRENTLY docs_fp"),
    ("VACUUM docs", "REINDEX INDEX docs_fp"),
    ("SELECT simhash_mih_check('docs_fp')", "REINDEX INDEX CONCURRENTLY docs_fp"),
])
def test_an_index_of_the_previous_page_format_asks_for_a_reindex(tmp_path_factory, statement: str,
                                                                 rebuild: str) -> None:
    """An index written in page format 1 (by simhash before the compact
    format): queries, inserts, VACUUM and the checker say so, naming the index
    and the REINDEX that rebuilds it; after the REINDEX (CONCURRENTLY too, which
    never reads the old index) all is well."""
    with own_server(tmp_path_factory.mktemp("mih-format")) as server:
        with connect(server) as conn:
            conn.execute("CREATE EXTENSION simhash")
            conn.execute("CREATE TABLE docs (id int PRIMARY KEY, fp simhash64)")
            copy_rows(conn, "COPY docs FROM STDIN", ((i, i * 7919) for i in range(2000)))
            conn.execute("CREATE INDEX docs_fp ON docs USING simhash_mih (fp)")
        edit_index(server, lambda f: f.put(0, META_VERSION, "<I", 1))
        with connect(server) as conn:
            conn.execute("SET enable_seqscan = off")
            error = error_of(conn, statement)
            assert error.sqlstate == "0A000", str(error)
            assert 'index "docs_fp" has simhash_mih page format 1' in str(error), str(error)
            assert error.diag.message_hint == "Rebuild the index: REINDEX INDEX public.docs_fp;"
            conn.execute(rebuild)
            conn.execute(statement)
            conn.execute("SELECT simhash_mih_check('docs_fp')")
            assert conn.execute("SELECT count(*) FROM docs WHERE hamming_within(fp, %s::text::simhash64, 0)",
                                (str(7919 * 5),)).fetchone() == (1,)
