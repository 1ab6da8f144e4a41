"""Users' data survives a PostgreSQL major upgrade: pg_upgrade, and dump/restore.

Each older supported major is upgraded to the newest with pg_upgrade, on a
database holding every kind of object users build on simhash64 (columns and
arrays, the GIN index with default and explicit options, simhash_mih indexes
without and with a scope column (which simhash_mih_check must pass
afterwards, and whose scope hashes must not change), btree and hash
indexes, a hash-partitioned table, a view and a materialized view, aggregate
results); afterwards the rows are identical, every index is valid and passes
amcheck where the newest major has a checker, and index lookups equal a
sequential scan and brute force.  The same database moves from 15 to the
newest by pg_dump/pg_restore and by COPY (FORMAT binary).

Marked ``cross_version``: `make test-all` runs them once, after every major's
own suite, with the newest major's server (scripts/test-all.sh).
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import psycopg
import pytest
from toolbox.servers import release_bindir, supported_majors
from toolbox import brute_force_within
from toolbox.data import planted_fingerprints, random_queries

from pysimhash_sql.throwaway import ThrowawayServer

pytestmark = pytest.mark.cross_version

NEWEST = supported_majors()[-1]
OLDER = supported_majors()[:-1]
DUMP_FROM = 15

SCHEMA = """
CREATE EXTENSION simhash;
CREATE TABLE pages (id int PRIMARY KEY, fp simhash64, history simhash64[], body text);
CREATE INDEX pages_fp ON pages USING gin (fp);
CREATE INDEX pages_fp_43 ON pages USING gin (fp simhash64_ops (blocks = 4, max_distance = 3));
CREATE INDEX pages_fp_mih ON pages USING simhash_mih (fp);
CREATE INDEX pages_fp_scoped ON pages USING simhash_mih ((id % 5), (substr(body, 1, 6)), fp);
CREATE INDEX pages_fp_btree ON pages (fp);
CREATE INDEX pages_fp_hash ON pages USING hash (fp);
CREATE TABLE parts (id int, fp simhash64) PARTITION BY HASH (fp);
CREATE TABLE parts_0 PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE VIEW near_zero AS SELECT id, fp <~> '0' AS distance FROM pages WHERE hamming_within(fp, '0', 30);
CREATE MATERIALIZED VIEW fingerprints_by_bucket AS
    SELECT id % 10 AS bucket, simhash_agg(fp::bigint) AS combined, min(fp), max(fp) FROM pages GROUP BY 1;
"""

# Everything a user would look at after the upgrade, as text, in a fixed order.
CONTENT = {
    "pages": "SELECT id, fp::text, history::text, body FROM pages ORDER BY id",
    "parts": "SELECT tableoid::regclass::text, id, fp::text FROM parts ORDER BY id",
    "view": "SELECT * FROM near_zero ORDER BY id",
    "matview": "SELECT bucket, combined::text, min::text, max::text FROM fingerprints_by_bucket ORDER BY 1",
    "pairs": "SELECT * FROM simhash_find_all('SELECT id, fp FROM pages', 3) ORDER BY 1, 2",
    # The extension's members.  Array types are left out: PostgreSQL 17 and later record
    # simhash64[] and simhash64_ball[] as members, older majors (and so a
    # database pg_upgrade brings from them) do not.
    "objects": "SELECT pg_describe_object(classid, objid, objsubid) AS object FROM pg_depend d"
               " JOIN pg_extension e ON d.refobjid = e.oid WHERE e.extname = 'simhash' AND d.deptype = 'e'"
               " AND pg_describe_object(classid, objid, objsubid) NOT LIKE 'type %[]' ORDER BY 1",
}


@pytest.fixture(scope="module")
def data() -> tuple[list[int | None], list[tuple[int, int]]]:
    rng = random.Random(915)
    fps = planted_fingerprints(rng, 4000)
    return fps, [(c, k) for c, k in random_queries(rng, fps, 300) if k <= 8]


def populate(conn: psycopg.Connection, fps: list[int | None]) -> None:
    conn.execute(SCHEMA)
    with conn.cursor().copy("COPY pages FROM STDIN") as copy:
        for i, fp in enumerate(fps):
            history = None if fp is None else "{%d,%d}" % (fp, fp ^ 0b1011)
            copy.write_row((i, None if fp is None else str(fp), history, f"page {i}"))
    conn.execute("INSERT INTO parts SELECT id, fp FROM pages")
    conn.execute("REFRESH MATERIALIZED VIEW fingerprints_by_bucket")
    conn.execute("ANALYZE")


def client(server: ThrowawayServer, program: Path, *args: str | Path, cwd: Path) -> None:
    """A client tool (pg_dump, pg_restore, psql) against the server, files in cwd."""
    result = subprocess.run([str(program), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                            env={**os.environ, **server.libpq_env()})
    assert result.returncode == 0, f"{program.name} failed:\n{result.stderr}"


def content(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    return {name: conn.execute(sql).fetchall() for name, sql in CONTENT.items()}


GIN_INDEXES = ("pages_fp", "pages_fp_43")
NEAR_INDEXES = (*GIN_INDEXES, "pages_fp_mih", "pages_fp_scoped")


def lookups(conn: psycopg.Connection, index: str, queries: list[tuple[int, int]],
            scopes: list[tuple[int, str]] | None = None) -> list[list[int]]:
    """The ids within k of each query centre through ``index`` alone (checked in
    the plan): the other near-duplicate indexes are dropped in a transaction
    rolled back after.  With scopes: query i asks the rows of scopes[i]
    (id % 5, substr(body, 1, 6)) alone."""
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
        conn.execute(f"DROP INDEX {', '.join(set(NEAR_INDEXES) - {index})}")
        scope = "id %% 5 = %s AND substr(body, 1, 6) = %s AND " if scopes else ""
        sql = f"SELECT id FROM pages WHERE {scope}hamming_within(fp, %s::text::simhash64, %s) ORDER BY id"
        params = [(*(scopes[i] if scopes else ()), str(c), k) for i, (c, k) in enumerate(queries)]
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params[0]))
        assert f"Bitmap Index Scan on {index}" in plan, plan
        return [[r[0] for r in conn.execute(sql, p)] for p in params]


def scope_of(i: int) -> tuple[int, str]:
    """The scope of row i in pages_fp_scoped (its body is "page <i>")."""
    return i % 5, f"page {i}"[:6]


def assert_indexes_sound(conn: psycopg.Connection, fps: list[int | None], queries: list[tuple[int, int]]) -> None:
    invalid = conn.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE NOT indisvalid").fetchall()
    assert invalid == []
    conn.execute("CREATE EXTENSION amcheck")
    for (index,) in conn.execute("SELECT indexrelid::regclass::text FROM pg_index i JOIN pg_class c"
                                 " ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
                                 " WHERE a.amname = 'btree' AND i.indrelid = 'pages'::regclass").fetchall():
        conn.execute("SELECT bt_index_check(%s::regclass, true)", (index,))
    if conn.execute("SELECT to_regproc('gin_index_check') IS NOT NULL").fetchone()[0]:  # amcheck 1.5, PostgreSQL 18
        for index in GIN_INDEXES:
            conn.execute("SELECT gin_index_check(%s::regclass)", (index,))
    if conn.execute("SELECT to_regproc('simhash_mih_check') IS NOT NULL").fetchone()[0]:  # SQL 1.2 on
        conn.execute("SELECT simhash_mih_check('pages_fp_mih')")
        conn.execute("SELECT simhash_mih_check('pages_fp_scoped')")
    expected = [brute_force_within(fps, c, k) for c, k in queries]
    assert lookups(conn, "pages_fp", queries) == expected
    assert lookups(conn, "pages_fp_mih", queries) == expected
    # each query scoped to its nearest row's scope: the scope hashes of the old major are the new one's
    scopes = [scope_of(min((i for i, fp in enumerate(fps) if fp is not None), key=lambda i: (fps[i] ^ c).bit_count()))
              for c, _ in queries]
    assert lookups(conn, "pages_fp_scoped", queries, scopes) == [
        [i for i in ids if scope_of(i) == scope] for ids, scope in zip(expected, scopes)]
    small = [i for i, (_, k) in enumerate(queries) if k <= 3]   # within pages_fp_43's max_distance
    assert lookups(conn, "pages_fp_43", [queries[i] for i in small]) == [expected[i] for i in small]


@pytest.mark.parametrize("old", OLDER)
def test_pg_upgrade_keeps_rows_and_indexes(old: int, data, tmp_path: Path) -> None:
    fps, queries = data
    old_bin, new_bin = release_bindir(old), release_bindir(NEWEST)
    old_server = ThrowawayServer(old_bin, tmp_path / "old")
    with old_server, old_server.connect() as conn:
        populate(conn, fps)
        before = content(conn)
    new = ThrowawayServer(new_bin, tmp_path / "new").initdb()

    # as the clusters' owner, in the new server's directory (pg_upgrade writes where it runs)
    new.run(new_bin / "pg_upgrade", "--old-bindir", old_bin, "--new-bindir", new_bin,
            "--old-datadir", old_server.datadir, "--new-datadir", new.datadir,
            "--username", "postgres", "--socketdir", new.directory)

    with new, new.connect() as conn:
        assert conn.execute("SHOW server_version_num").fetchone()[0].startswith(str(NEWEST))
        assert content(conn) == before
        assert_indexes_sound(conn, fps, queries)
        conn.execute("ALTER EXTENSION simhash UPDATE")
        conn.execute("INSERT INTO pages VALUES (-1, %s::text::simhash64)", (str(queries[0][0]),))
        assert -1 in [r[0] for r in conn.execute(
            "SELECT id FROM pages WHERE hamming_within(fp, %s::text::simhash64, 0)", (str(queries[0][0]),))]


def test_dump_and_restore_into_the_newest_major(data, tmp_path: Path) -> None:
    """pg_dump of a 15 database (by the newest pg_dump, as PostgreSQL advises, and
    by 15's own in plain SQL) restores into the newest major; so does COPY (FORMAT
    binary) of the simhash64 columns, whose wire format is ours."""
    fps, queries = data
    old_bin, new_bin = release_bindir(DUMP_FROM), release_bindir(NEWEST)
    work = tmp_path / "work"
    work.mkdir()
    with ThrowawayServer(old_bin, tmp_path / "old") as old:
        with old.connect() as conn:
            populate(conn, fps)
            before = content(conn)
        client(old, new_bin / "pg_dump", "--format", "custom", "--file", "custom.dump", cwd=work)
        client(old, old_bin / "pg_dump", "--file", "plain.sql", cwd=work)
        client(old, old_bin / "psql", "-X", "-v", "ON_ERROR_STOP=1", "-c",
               "\\copy pages TO 'pages.bin' (FORMAT binary)", cwd=work)

    with ThrowawayServer(new_bin, tmp_path / "new") as new:
        with new.connect() as admin:
            admin.execute("CREATE DATABASE from_custom")
            admin.execute("CREATE DATABASE from_plain")
        client(new, new_bin / "pg_restore", "--exit-on-error", "--dbname", "from_custom", "custom.dump", cwd=work)
        client(new, new_bin / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "plain.sql", "from_plain",
               cwd=work)
        for dbname in ("from_custom", "from_plain"):
            with new.connect(dbname) as conn:
                assert content(conn) == before, dbname
                assert_indexes_sound(conn, fps, queries)

        with new.connect() as conn:
            conn.execute("CREATE EXTENSION simhash")
            conn.execute("CREATE TABLE pages (id int PRIMARY KEY, fp simhash64, history simhash64[], body text)")
        client(new, new_bin / "psql", "-X", "-v", "ON_ERROR_STOP=1", "-c",
               "\\copy pages FROM 'pages.bin' (FORMAT binary)", cwd=work)
        with new.connect() as conn:
            assert conn.execute(CONTENT["pages"]).fetchall() == before["pages"]
