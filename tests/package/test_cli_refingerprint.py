"""pysimhash-sql refingerprint (pysimhash_sql/cli/refingerprint.py) and the
text spec version of the CLI's tables: a version 1 table moved to the default
version (3) while writers insert and update rows, interrupted and resumed, on
the extension and on the plain back end; a version 2 table moved to version 3
and back; every row checked against the brute force (its text fingerprinted
here) at the end; a database whose extension predates simhash_v3 refused."""

from __future__ import annotations

import random
import subprocess
import threading
import time

import psycopg
import pytest
from test_cli import CLI, CORPUS, assert_user_error, column_spec, plain_dsn, run
from toolbox import distance
from toolbox.workers import run_together

from pysimhash_sql import hashing, plain, text_spec

WORDS = ("harbour ferry timetable spring islands boats minutes hour board council library orchard apples "
         "近似 重复 检测 语言 Ünïcödé straße ÉCOLE école крейсер аврора").split()
ROWS = 600
BATCH = "10"  # the interrupted run's: small batches, so that it is cut in the middle


def body(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40)))


def make_v1_table(conn: psycopg.Connection, plain_backend: bool = False, version: int = 1) -> None:
    """A table as ingest made it before versions were recorded: version 1
    fingerprints, no comment, a near-duplicate index, NOT NULL (``version``
    2: as ingest made it with version 2 the default, its comment recording it)."""
    rng = random.Random(28)
    bodies = [body(rng) for _ in range(ROWS)]
    fp_type = "bigint" if plain_backend else "simhash64"
    conn.execute(f"CREATE TABLE docs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL, "
                 f"fingerprint {fp_type} NOT NULL)")
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)",
                        [(b, stored(hashing.fingerprint(b, version=version), plain_backend)) for b in bodies])
    if version != 1:
        conn.execute(text_spec.comment_on_column_sql("docs", "fingerprint", version))
    if plain_backend:
        conn.execute(plain.PlainLayout().index_sql("docs_fingerprint_idx", "docs", "fingerprint"))
    else:
        conn.execute("CREATE INDEX docs_fingerprint_idx ON docs USING simhash_mih (fingerprint)")


def stored(fp: int, plain_backend: bool) -> int | str:
    return plain.to_signed(fp) if plain_backend else str(fp)


def write_as_the_application(dsn: str, plain_backend: bool, seed: int, stop: threading.Event,
                             counts: dict[str, int]) -> None:
    """An application's writer: in each transaction it takes its row lock on
    the table first, then reads the column's recorded version and writes
    fingerprints of that version (the swap commits before or after, never
    in between); inserts and updates rows' text until stopped."""
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            with conn.transaction():
                conn.execute("LOCK TABLE docs IN ROW EXCLUSIVE MODE")
                comment = conn.execute("SELECT col_description('docs'::regclass, attnum) FROM pg_attribute "
                                       "WHERE attrelid = 'docs'::regclass AND attname = 'fingerprint'").fetchone()[0]
                version = text_spec.spec_of_comment(comment) or 1
                text = body(rng)
                fp = stored(hashing.fingerprint(text, version=version), plain_backend)
                if rng.random() < 0.5:
                    conn.execute("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)", (text, fp))
                    counts["inserted"] += 1
                else:
                    conn.execute("UPDATE docs SET body = %s, fingerprint = %s WHERE id = %s",
                                 (text, fp, rng.randint(1, ROWS)))
                    counts["updated"] += 1
            time.sleep(0.005)


def assert_moved(conn: psycopg.Connection, plain_backend: bool = False,
                 version: int = hashing.TEXT_SPEC_VERSION_LATEST) -> None:
    """Every row's fingerprint is its text's fingerprint of ``version`` (the
    default: the latest), computed here (brute force); the column records it, kept NOT
    NULL and its index; nothing of the move is left; the index answers as
    brute force does."""
    assert wrong_rows(conn, version, plain_backend) == []
    rows = conn.execute("SELECT id, body, fingerprint::text FROM docs").fetchall()
    assert column_spec(conn, "docs") == text_spec.comment(version)
    assert conn.execute("SELECT attnotnull FROM pg_attribute WHERE attrelid = 'docs'::regclass "
                        "AND attname = 'fingerprint'").fetchone() == (True,)
    assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'docs'::regclass AND attnum > 0 "
                        "AND NOT attisdropped").fetchone() == (3,)
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs'::regclass "
                        "AND NOT tgisinternal").fetchone() == (0,)  # (a deferrable constraint's are internal)
    assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname LIKE 'simhash_refingerprint%'").fetchone() == (0,)
    (definition, valid), = conn.execute("SELECT pg_get_indexdef(indexrelid), indisvalid FROM pg_index "
                                        "WHERE indexrelid = 'docs_fingerprint_idx'::regclass").fetchall()
    assert valid and ("simhash_mih (fingerprint)" in definition if not plain_backend else "gin" in definition)
    if not plain_backend:
        fps = {i: int(fp) for i, _, fp in rows}
        conn.execute("SET enable_seqscan = off")
        for probe in random.Random(3).sample(sorted(fps), 5):
            found = {i for (i,) in conn.execute("SELECT id FROM docs WHERE hamming_within(fingerprint, %s::text::"
                                                "simhash64, 6)", (str(fps[probe]),))}
            assert found == {i for i, fp in fps.items() if distance(fp, fps[probe]) <= 6}
        conn.execute("RESET enable_seqscan")


def wrong_rows(conn: psycopg.Connection, version: int, plain_backend: bool) -> list[int]:
    """The ids of the rows whose fingerprint is not their text's of ``version``, computed here."""
    return [i for i, text, fp in conn.execute("SELECT id, body, fingerprint::text FROM docs")
            if fp != str(stored(hashing.fingerprint(text, version=version), plain_backend))]


def refingerprint(dsn: str, *more: str, ok: bool = True) -> subprocess.CompletedProcess:
    return run("refingerprint", "--dsn", dsn, "--table", "docs", "--text-column", "body", "--column", "fingerprint",
               *more, ok=ok)


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_refingerprint_with_writers_interrupted_and_resumed(db: psycopg.Connection, plain_url, backend: str) -> None:
    plain_backend = backend == "plain"
    dsn = plain_dsn(plain_url) if plain_backend else db.info.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        make_v1_table(conn, plain_backend)
        # interrupted: its connection is cut while it fills; the table is as it was, the work so far kept
        proc = subprocess.Popen([CLI, "refingerprint", "--dsn", dsn, "--table", "docs", "--batch-size", BATCH],
                                stderr=subprocess.PIPE, text=True)
        filled = 0
        while proc.poll() is None and filled < 50:
            filled = conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'docs'::regclass AND "
                                  "attname = 'fingerprint_v3'").fetchone()[0] and \
                conn.execute("SELECT count(fingerprint_v3) FROM docs").fetchone()[0]
            time.sleep(0.005)
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = 'pysimhash-sql refingerprint'")
        assert proc.wait(timeout=60) == 1, proc.stderr.read()
        assert column_spec(conn, "docs") is None
        assert 50 <= conn.execute("SELECT count(fingerprint_v3) FROM docs").fetchone()[0] < ROWS
        assert wrong_rows(conn, 1, plain_backend) == []  # the application's column untouched

        # resumed, while the application writes
        counts = {"inserted": 0, "updated": 0}
        results: list[subprocess.CompletedProcess] = []
        errors = run_together([lambda: results.append(refingerprint(dsn, "--batch-size", "40"))],
                              [lambda stop, seed=seed: write_as_the_application(dsn, plain_backend, seed, stop, counts)
                               for seed in range(3)])
        assert errors == []
        assert counts["inserted"] > 0 and counts["updated"] > 0
        progress = results[0].stderr
        # the default: the latest version
        assert "rows to fingerprint with text spec version 3" in progress and "CREATE INDEX CONCURRENTLY" in progress
        assert "holds text spec version 3 fingerprints now" in progress
        assert_moved(conn, plain_backend, version=3)
        assert "nothing to do" in refingerprint(dsn).stderr


def test_fingerprints_computed_here_into_a_simhash64_column(db: psycopg.Connection) -> None:
    """--backend plain on a database with the extension: the command computes
    the fingerprints (as where simhash_v3 is missing) into the simhash64 column."""
    make_v1_table(db)
    assert "holds text spec version 3 fingerprints now" in refingerprint(db.info.dsn, "--backend", "plain",
                                                                         "--jobs", "2").stderr
    assert_moved(db, version=3)


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_a_version_2_table_moves_to_version_3_and_back(db: psycopg.Connection, plain_url, backend: str) -> None:
    """A table of version 2, the default before version 3: refingerprint
    without --to moves it to version 3, every row exactly
    hashing.fingerprint(text, version=3) (the server's simhash_v3 in the
    extension's trigger, the command's on the plain back end); --keep-old
    keeps the version 2 fingerprints as they were, and --to 2 moves back."""
    plain_backend = backend == "plain"
    dsn = plain_dsn(plain_url) if plain_backend else db.info.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        make_v1_table(conn, plain_backend, version=2)
        before = dict(conn.execute("SELECT id, fingerprint::text FROM docs").fetchall())
        moved = refingerprint(dsn, "--keep-old").stderr
        assert "rows to fingerprint with text spec version 3" in moved and "kept in fingerprint_v2" in moved
        rows = conn.execute("SELECT body, fingerprint::text FROM docs").fetchall()
        assert [fp for _, fp in rows] == [str(stored(hashing.fingerprint(text, version=3), plain_backend))
                                          for text, _ in rows]
        assert wrong_rows(conn, 3, plain_backend) == [] and column_spec(conn, "docs") == "simhash text spec 3"
        assert dict(conn.execute("SELECT id, fingerprint_v2::text FROM docs").fetchall()) == before
        assert column_spec(conn, "docs", "fingerprint_v2") == "simhash text spec 2"
        assert "nothing to do" in refingerprint(dsn).stderr
        # the application writes version 3 now; the extension's trigger keeps version 2 in step
        conn.execute("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)",
                     ("Order 1234 shipped", stored(hashing.simhash_v3("Order 1234 shipped"), plain_backend)))
        assert conn.execute("SELECT fingerprint_v2::text FROM docs WHERE body = 'Order 1234 shipped'").fetchone() == (
            None if plain_backend else str(hashing.simhash_v2("Order 1234 shipped")),)
        back = refingerprint(dsn, "--to", "2").stderr
        assert "holds text spec version 2 fingerprints now" in back
        assert_moved(conn, plain_backend, version=2)


def test_an_extension_without_simhash_v3_is_refused_not_replaced(db: psycopg.Connection) -> None:
    """The extension at 1.3 (simhash_v2, no simhash_v3): the default move is
    refused before anything changes, naming the extension version to update
    to; --to 2 and --backend plain (version 3 computed here) still work;
    ingest keeps version 3 too, computing it here, never another version."""
    db.execute("DROP EXTENSION simhash")
    db.execute("CREATE EXTENSION simhash VERSION '1.3'")
    dsn = db.info.dsn
    make_v1_table(db)
    assert_user_error(refingerprint(dsn, ok=False),
                      "this database has no simhash_v3(text), text spec version 3: it comes with the simhash "
                      "extension 1.4 (ALTER EXTENSION simhash UPDATE)", "--backend plain")
    assert column_spec(db, "docs") is None and wrong_rows(db, 1, False) == []
    assert db.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'docs'::regclass "
                      "AND attname LIKE 'fingerprint\\_v%'").fetchone() == (0,)  # nothing made
    assert "holds text spec version 2 fingerprints now" in refingerprint(dsn, "--to", "2").stderr
    assert_moved(db, version=2)
    assert "holds text spec version 3 fingerprints now" in refingerprint(dsn, "--backend", "plain").stderr
    assert_moved(db, version=3)
    run("ingest", "--dsn", dsn, "--table", "new_docs", "--batch-size", "3", str(CORPUS))
    assert column_spec(db, "new_docs") == "simhash text spec 3"
    rows = db.execute("SELECT body, fingerprint::text FROM new_docs").fetchall()
    assert rows and all(fp == str(hashing.simhash_v3(text)) for text, fp in rows)
    db.execute("ALTER EXTENSION simhash UPDATE")
    assert db.execute("SELECT count(*) FROM new_docs WHERE fingerprint <> simhash_v3(body)").fetchone() == (0,)


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_keep_old_keeps_the_old_fingerprints_for_a_rollback(db: psycopg.Connection, plain_url, backend: str) -> None:
    """--keep-old: the old column kept beside the moved one, holding exactly
    the old fingerprints, kept in step with the application's writes after the
    swap (extension) or emptied where the text changed (plain); the rollback
    (--to 1) takes it as its shadow column; --drop-kept drops it and its
    trigger."""
    plain_backend = backend == "plain"
    dsn = plain_dsn(plain_url) if plain_backend else db.info.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        make_v1_table(conn, plain_backend)
        before = dict(conn.execute("SELECT id, fingerprint::text FROM docs").fetchall())
        assert 'kept in fingerprint_v1' in refingerprint(dsn, "--to", "2", "--keep-old").stderr
        assert wrong_rows(conn, 2, plain_backend) == []
        assert dict(conn.execute("SELECT id, fingerprint_v1::text FROM docs").fetchall()) == before
        assert column_spec(conn, "docs", "fingerprint_v1") == "simhash text spec 1"
        assert conn.execute("SELECT attnotnull FROM pg_attribute WHERE attrelid = 'docs'::regclass "
                            "AND attname = 'fingerprint_v1'").fetchone() == (False,)
        assert {name for (name,) in conn.execute("SELECT indexrelid::regclass::text FROM pg_index "
                                                 "WHERE indrelid = 'docs'::regclass")} == {"docs_pkey",
                                                                                         "docs_fingerprint_idx"}
        # the application, on version 2 now: a new row, a changed text
        for statement, text in (("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)", "apples in the orchard"),
                                ("UPDATE docs SET body = %s, fingerprint = %s WHERE id = 1", "ferry to the islands")):
            conn.execute(statement, (text, stored(hashing.fingerprint(text, version=2), plain_backend)))
        written = conn.execute("SELECT id, body, fingerprint_v1::text FROM docs WHERE id = 1 OR id > %s",
                               (ROWS,)).fetchall()
        assert [fp for _, _, fp in written] == ([None, None] if plain_backend else
                                                [stored(hashing.simhash(text), False) for _, text, _ in written])

        moved = dict(conn.execute("SELECT id, fingerprint::text FROM docs").fetchall())
        rollback = refingerprint(dsn, "--to", "1", "--keep-old").stderr
        assert f"filling fingerprint_v1: {2 if plain_backend else 0} rows to fingerprint" in rollback
        assert 'kept in fingerprint_v2' in rollback
        assert dict(conn.execute("SELECT id, fingerprint_v2::text FROM docs").fetchall()) == moved
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):  # its trigger: not dropped by mistake
            conn.execute("ALTER TABLE docs DROP COLUMN fingerprint_v2")
        assert "dropped fingerprint_v2 and the trigger" in refingerprint(dsn, "--drop-kept").stderr
        assert "keeps no old fingerprints" in refingerprint(dsn, "--drop-kept").stderr
        conn.execute("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)",
                     ("harbour", stored(hashing.simhash("harbour"), plain_backend)))
        assert_moved(conn, plain_backend, version=1)
        conn.execute("ALTER TABLE docs ADD COLUMN fingerprint_v1 bigint")
        assert_user_error(refingerprint(dsn, "--keep-old", ok=False), "has a column fingerprint_v1 already")


def test_refingerprint_refuses_what_it_cannot_move(db: psycopg.Connection) -> None:
    dsn = db.info.dsn
    db.execute("CREATE TABLE docs (body text, fingerprint simhash64)")
    assert_user_error(refingerprint(dsn, ok=False), "needs a one-column primary key")
    db.execute("ALTER TABLE docs ADD COLUMN id serial PRIMARY KEY")
    assert_user_error(refingerprint(dsn, "--text-column", "text", ok=False), "--text-column", "no column text")
    db.execute("ALTER TABLE docs ALTER COLUMN fingerprint SET DEFAULT '0'")
    assert_user_error(refingerprint(dsn, ok=False), "has a default")
    assert_user_error(refingerprint(dsn, "--batch-size", "0", ok=False), "--batch-size must be at least 1")
    db.execute("ALTER TABLE docs ALTER COLUMN fingerprint DROP DEFAULT")
    db.execute("CREATE VIEW recent_docs AS SELECT id, fingerprint FROM docs")
    assert_user_error(refingerprint(dsn, "--keep-old", ok=False), "view recent_docs uses fingerprint")


def test_ingest_keeps_a_table_s_version(db: psycopg.Connection) -> None:
    """ingest makes new tables of the latest version (3); into a table it made before
    versions were recorded it keeps adding version 1; a version the table
    does not hold is refused."""
    dsn = db.info.dsn
    run("ingest", "--dsn", dsn, "--table", "old_docs", "--spec-version", "1", str(CORPUS))
    db.execute("COMMENT ON COLUMN old_docs.fingerprint IS NULL")  # as made before versions were recorded
    db.execute("DELETE FROM old_docs WHERE name > 'm'")
    for fingerprints in ("server", "local"):
        run("ingest", "--dsn", dsn, "--table", "old_docs", "--fingerprints", fingerprints, str(CORPUS))
        assert db.execute("SELECT count(*) FROM old_docs WHERE fingerprint <> simhash(body)").fetchone() == (0,)
    assert_user_error(run("ingest", "--dsn", dsn, "--table", "old_docs", "--spec-version", "2", str(CORPUS), ok=False),
                      "old_docs.fingerprint holds text spec version 1 fingerprints, not 2",
                      "refingerprint --table old_docs --column fingerprint --to 2")
    run("ingest", "--dsn", dsn, "--table", "new_docs", str(CORPUS))
    assert column_spec(db, "new_docs") == "simhash text spec 3"
    assert_user_error(run("ingest", "--dsn", dsn, "--table", "new_docs", "--spec-version", "2", str(CORPUS), ok=False),
                      "holds text spec version 3 fingerprints, not 2")
    # a version 2 table (made when 2 was the default) keeps taking version 2, the default notwithstanding
    run("ingest", "--dsn", dsn, "--table", "v2_docs", "--spec-version", "2", str(CORPUS))
    db.execute("DELETE FROM v2_docs WHERE name > 'm'")
    run("ingest", "--dsn", dsn, "--table", "v2_docs", str(CORPUS))
    assert column_spec(db, "v2_docs") == "simhash text spec 2"
    assert db.execute("SELECT count(*) FROM v2_docs WHERE fingerprint <> simhash_v2(body)").fetchone() == (0,)


UNIQUES = """SELECT c.relname, coalesce(pg_get_constraintdef(con.oid), pg_get_indexdef(c.oid)), i.indisvalid,
                    (SELECT array_agg(attname ORDER BY attname) FROM pg_attribute
                     WHERE attrelid = i.indrelid AND attnum = ANY (i.indkey))
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
             WHERE i.indrelid = 'docs'::regclass AND i.indisunique AND NOT i.indisprimary"""


def uniques(conn: psycopg.Connection) -> dict[str, tuple]:
    """The table's unique indexes but its primary key: name -> (its UNIQUE
    constraint's definition, else the index's; valid; the columns it is on)."""
    return {name: (definition, valid, columns) for name, definition, valid, columns in conn.execute(UNIQUES)}


def add_uniques(conn: psycopg.Connection) -> None:
    """A UNIQUE constraint (deferred) and a partial unique index on the fingerprint."""
    conn.execute("ALTER TABLE docs ADD CONSTRAINT docs_fingerprint_key UNIQUE (fingerprint) "
                 "DEFERRABLE INITIALLY DEFERRED")
    conn.execute("CREATE UNIQUE INDEX docs_fingerprint_unique ON docs (fingerprint) WHERE body <> ''")


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_unique_constraints_and_indexes_move_with_the_column(db: psycopg.Connection, plain_url, backend: str) -> None:
    """A UNIQUE constraint and a unique index on the column: made again on
    the moved column (the constraint with its name and timing, through its
    index made concurrently), none left on the column --keep-old kept; the
    rollback moves them back the same way."""
    plain_backend = backend == "plain"
    dsn = plain_dsn(plain_url) if plain_backend else db.info.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        make_v1_table(conn, plain_backend)
        add_uniques(conn)
        before = uniques(conn)
        assert before == {"docs_fingerprint_key": ("UNIQUE (fingerprint) DEFERRABLE INITIALLY DEFERRED", True,
                                                   ["fingerprint"]),
                          "docs_fingerprint_unique": ("CREATE UNIQUE INDEX docs_fingerprint_unique ON public.docs "
                                                      "USING btree (fingerprint) WHERE (body <> ''::text)", True,
                                                      ["fingerprint"])}
        for to, kept in ((2, "fingerprint_v1"), (1, "fingerprint_v2")):
            assert "3 index(es) moved" in refingerprint(dsn, "--to", str(to), "--keep-old").stderr
            assert wrong_rows(conn, to, plain_backend) == []
            assert uniques(conn) == before  # on the moved column, none on the kept one
            assert conn.execute("SELECT count(*) FROM pg_constraint WHERE conrelid = 'docs'::regclass "
                                "AND contype = 'u' AND conkey = ARRAY[(SELECT attnum FROM pg_attribute "
                                "WHERE attrelid = 'docs'::regclass AND attname = %s)]", (kept,)).fetchone() == (0,)
            # enforced on the moved fingerprints: a new text with a stored row's fingerprint (body '': the constraint's)
            taken = conn.execute("SELECT fingerprint FROM docs WHERE id = 1").fetchone()[0]
            with pytest.raises(psycopg.errors.UniqueViolation) as refused:
                conn.execute("INSERT INTO docs (body, fingerprint) VALUES ('', %s)", (taken,))
            assert refused.value.diag.constraint_name == "docs_fingerprint_key"
        refingerprint(dsn, "--drop-kept")
        assert_moved(conn, plain_backend, version=1)


@pytest.mark.parametrize("backend", ["extension", "plain"])
def test_a_unique_constraint_the_new_version_breaks_is_refused(db: psycopg.Connection, plain_url,
                                                               backend: str) -> None:
    """Two texts whose version 1 fingerprints differ and version 2 ones do not
    (case and typography): the unique index cannot be made; a user error
    naming the constraint and the key, the application's column, constraint
    and writes as they were (no invalid unique index left to refuse them)."""
    plain_backend = backend == "plain"
    dsn = plain_dsn(plain_url) if plain_backend else db.info.dsn
    texts = ("ÉCOLE: « près d’ici »", "école \"près d'ici\"")
    assert hashing.simhash(texts[0]) != hashing.simhash(texts[1])
    assert hashing.simhash_v2(texts[0]) == hashing.simhash_v2(texts[1])
    with psycopg.connect(dsn, autocommit=True) as conn:
        make_v1_table(conn, plain_backend)
        add_uniques(conn)
        for text in texts:
            conn.execute("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)",
                         (text, stored(hashing.simhash(text), plain_backend)))
        before = uniques(conn)
        for options in ((), ("--keep-old",)):
            result = refingerprint(dsn, "--to", "2", *options, ok=False)
            *progress, error = result.stderr.splitlines()  # after the fill's progress: one line, no traceback
            assert result.returncode == 1 and all(line.startswith("pysimhash-sql refingerprint: ") for line in progress)
            key = stored(hashing.simhash_v2(texts[0]), plain_backend)
            assert error.startswith("pysimhash-sql: unique index docs_fingerprint_key cannot hold on text spec version "
                                    f"2 fingerprints: Key (fingerprint_v2)=({key}) "), error
            assert uniques(conn) == before and column_spec(conn, "docs") is None
            assert wrong_rows(conn, 1, plain_backend) == []
            assert conn.execute("SELECT count(*) FROM pg_index WHERE NOT indisvalid").fetchone() == (0,)
        third = "ÉCOLE PRÈS D’ICI"  # a third text of that version 2 fingerprint: the shadow column refuses none
        assert hashing.simhash_v2(third) == hashing.simhash_v2(texts[0])
        conn.execute("INSERT INTO docs (body, fingerprint) VALUES (%s, %s)",
                     (third, stored(hashing.simhash(third), plain_backend)))


def test_constraints_the_move_would_lose_are_refused(db: psycopg.Connection) -> None:
    """A CHECK constraint (the old column's drop would take it) or a foreign
    key to the column (it would stop the drop): refused by name before any change."""
    dsn = db.info.dsn
    make_v1_table(db)
    db.execute("ALTER TABLE docs ADD CONSTRAINT docs_fingerprint_check CHECK (fingerprint <> '0'::simhash64)")
    assert_user_error(refingerprint(dsn, ok=False), "CHECK constraint docs_fingerprint_check uses fingerprint",
                      "drop it first")
    db.execute("ALTER TABLE docs DROP CONSTRAINT docs_fingerprint_check")
    db.execute("ALTER TABLE docs ADD CONSTRAINT docs_fingerprint_key UNIQUE (fingerprint)")  # (not deferrable)
    db.execute("CREATE TABLE copies (id int PRIMARY KEY, original simhash64 REFERENCES docs (fingerprint))")
    assert_user_error(refingerprint(dsn, "--keep-old", ok=False),
                      "foreign key copies_original_fkey of table copies uses fingerprint")
    assert db.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'docs'::regclass "
                      "AND attname LIKE 'fingerprint\\_v%'").fetchone() == (0,)  # no shadow column made
