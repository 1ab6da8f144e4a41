"""Extension upgrades (docs/releasing.md): ALTER EXTENSION simhash UPDATE.

- A database created at every released SQL version and brought forward with
  ALTER EXTENSION UPDATE has exactly the objects, definitions and data of a
  fresh install of the current version.
- The convention for the next release, exercised without shipping a fake one:
  a scratch copy of the private installation gets a generated
  <current> -> <next> script and a bumped default_version, as the next release
  will ship them, and ALTER EXTENSION UPDATE must move a database with data to it.

Both run on every supported major (make test-all).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from toolbox.servers import PG_CONFIG, ROOT, ScratchInstall

from pysimhash_sql.throwaway import ThrowawayServer

SQL_DIR = ROOT / "pg_ext" / "sql"
CURRENT = re.search(r"^default_version = '([\d.]+)'", (ROOT / "pg_ext" / "simhash.control").read_text(), re.M).group(1)
NEXT = f"{CURRENT.split('.')[0]}.{int(CURRENT.split('.')[1]) + 1}"
RELEASED = sorted(p.name.split("--")[1].removesuffix(".sql") for p in SQL_DIR.glob("simhash--*--*.sql"))
UPGRADE_SCRIPT = f"""\
-- simhash extension, upgrade {CURRENT} -> {NEXT}
\\echo Use "ALTER EXTENSION simhash UPDATE TO '{NEXT}'" to load this file. \\quit

CREATE FUNCTION simhash_release() RETURNS text
    AS $$ SELECT '{NEXT}'::text $$ LANGUAGE sql IMMUTABLE PARALLEL SAFE;
"""

# Every member of the extension with its full definition, in a fixed order.
DEFINITIONS = """
SELECT pg_describe_object(d.classid, d.objid, d.objsubid),
       CASE WHEN d.classid = 'pg_proc'::regclass THEN
           (SELECT row(p.proargnames, p.prorettype::regtype, p.prosrc, p.probin, p.provolatile, p.proisstrict,
                       p.proparallel, p.prosupport, p.prorows, p.proretset, p.pronargdefaults,
                       pg_get_expr(p.proargdefaults, 0))::text
            FROM pg_proc p WHERE p.oid = d.objid)
       WHEN d.classid = 'pg_type'::regclass THEN
           (SELECT row(t.typinput, t.typoutput, t.typreceive, t.typsend, t.typlen, t.typbyval, t.typalign,
                       t.typcategory, t.typispreferred)::text FROM pg_type t WHERE t.oid = d.objid)
       WHEN d.classid = 'pg_cast'::regclass THEN
           (SELECT row(c.castfunc::regproc, c.castcontext, c.castmethod)::text FROM pg_cast c WHERE c.oid = d.objid)
       WHEN d.classid = 'pg_operator'::regclass THEN
           (SELECT row(o.oprcode, o.oprrest, o.oprjoin, o.oprcom::regoperator, o.oprnegate::regoperator,
                       o.oprcanmerge, o.oprcanhash)::text FROM pg_operator o WHERE o.oid = d.objid)
       ELSE '' END
FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
WHERE e.extname = 'simhash' AND d.deptype = 'e'
ORDER BY 1, 2
"""


def current_version(conn) -> str:
    return conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash'").fetchone()[0]


def definitions(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(DEFINITIONS).fetchall()


@pytest.mark.parametrize("old", RELEASED)
def test_update_from_each_released_version_equals_a_fresh_install(db: psycopg.Connection, old: str) -> None:
    db.execute("DROP EXTENSION simhash")
    db.execute(f"CREATE EXTENSION simhash VERSION '{old}'")
    db.execute("CREATE TABLE docs AS SELECT g AS id, simhash('document ' || g) AS fp FROM generate_series(1, 100) g")
    db.execute("CREATE INDEX ON docs USING gin (fp)")
    before = db.execute("SELECT id, fp::text FROM docs ORDER BY id").fetchall()

    db.execute("ALTER EXTENSION simhash UPDATE")
    assert current_version(db) == CURRENT
    upgraded = definitions(db)
    assert db.execute("SELECT id, fp::text FROM docs ORDER BY id").fetchall() == before
    db.execute("SET enable_seqscan = off")
    assert db.execute("SELECT count(*) FROM docs WHERE hamming_within(fp, simhash('document 7'), 0)").fetchone() == (1,)
    db.execute("RESET enable_seqscan")

    db.execute("DROP TABLE docs")
    db.execute("DROP EXTENSION simhash")
    db.execute("CREATE EXTENSION simhash")
    assert definitions(db) == upgraded


def ship_next_release(install: ScratchInstall) -> None:
    """What the next release adds: an upgrade script and a bumped default_version."""
    (install.extension_dir / f"simhash--{CURRENT}--{NEXT}.sql").write_text(UPGRADE_SCRIPT)
    control = install.extension_dir / "simhash.control"
    text = re.sub(r"^default_version = .*$", f"default_version = '{NEXT}'", control.read_text(), flags=re.M)
    control.write_text(text)


def test_alter_extension_update_applies_the_next_upgrade_script(tmp_path: Path) -> None:
    install = ScratchInstall(tmp_path / "install")
    with ThrowawayServer(install.path("bindir"), tmp_path) as server:
        with server.connect() as conn:
            conn.execute("CREATE EXTENSION simhash")
            conn.execute("CREATE TABLE docs AS SELECT simhash('near duplicate detection') AS fp")
            before = conn.execute("SELECT fp::text FROM docs").fetchone()[0]
            assert current_version(conn) == CURRENT

            ship_next_release(install)
            path = conn.execute(
                "SELECT path FROM pg_extension_update_paths('simhash') WHERE source = %s AND target = %s",
                (CURRENT, NEXT),
            ).fetchone()
            conn.execute("ALTER EXTENSION simhash UPDATE")

            assert path == (f"{CURRENT}--{NEXT}",)
            assert current_version(conn) == NEXT
            assert conn.execute("SELECT simhash_release()").fetchone() == (NEXT,)
            # One shared library serves every SQL version: the older objects and data still work.
            row = conn.execute("SELECT fp::text, fp <~> simhash('near duplicate detection') FROM docs").fetchone()
            assert row == (before, 0)
            conn.execute("CREATE DATABASE fresh")

        # A fresh install of the new release runs the whole chain of scripts.
        with server.connect("fresh") as fresh:
            fresh.execute("CREATE EXTENSION simhash")
            assert current_version(fresh) == NEXT
            assert fresh.execute("SELECT simhash_release()").fetchone() == (NEXT,)


def test_make_install_ships_every_versioned_script(tmp_path: Path) -> None:
    """pg_ext/Makefile installs sql/simhash--*.sql, so an upgrade script added
    there is installed with no Makefile change (checked on a copy of pg_ext/)."""
    ext = tmp_path / "pg_ext"
    shutil.copytree(ROOT / "pg_ext", ext, ignore=shutil.ignore_patterns("*.o", "*.so", "*.bc"))
    (ext / "sql" / f"simhash--{CURRENT}--{NEXT}.sql").write_text(UPGRADE_SCRIPT)
    dry_run = subprocess.run(
        ["make", "-n", "-C", str(ext), f"PG_CONFIG={PG_CONFIG}", "install", f"DESTDIR={tmp_path / 'dest'}"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert f"sql/simhash--{CURRENT}--{NEXT}.sql" in dry_run
    for script in SQL_DIR.glob("simhash--*.sql"):
        assert f"sql/{script.name}" in dry_run
