"""The upgrade convention of docs/releasing.md, exercised without shipping a fake release.

A scratch copy of the private installation gets a generated 1.0 -> 1.1
upgrade script and a control file whose default_version is 1.1, exactly as
the next release will ship them; ALTER EXTENSION simhash UPDATE must then move
a database that has 1.0 (and data in simhash64 columns) to 1.1.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from scratch_postgres import PG_CONFIG, ROOT, ScratchInstall, ScratchServer

NEXT = "1.1"
UPGRADE_SCRIPT = f"""\
-- simhash extension, upgrade 1.0 -> {NEXT}
\\echo Use "ALTER EXTENSION simhash UPDATE TO '{NEXT}'" to load this file. \\quit

CREATE FUNCTION simhash_release() RETURNS text
    AS $$ SELECT '{NEXT}'::text $$ LANGUAGE sql IMMUTABLE PARALLEL SAFE;
"""


def current_version(conn) -> str:
    return conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash'").fetchone()[0]


def ship_next_release(install: ScratchInstall) -> None:
    """What the next release adds: an upgrade script and a bumped default_version."""
    (install.extension_dir / f"simhash--1.0--{NEXT}.sql").write_text(UPGRADE_SCRIPT)
    control = install.extension_dir / "simhash.control"
    text = re.sub(r"^default_version = .*$", f"default_version = '{NEXT}'", control.read_text(), flags=re.M)
    control.write_text(text)


def test_alter_extension_update_applies_the_next_upgrade_script(tmp_path: Path) -> None:
    install = ScratchInstall(tmp_path / "install")
    with ScratchServer(install.path("bindir"), tmp_path) as server:
        with server.connect() as conn:
            conn.execute("CREATE EXTENSION simhash")
            conn.execute("CREATE TABLE docs AS SELECT simhash('near duplicate detection') AS fp")
            before = conn.execute("SELECT fp::text FROM docs").fetchone()[0]
            assert current_version(conn) == "1.0"

            ship_next_release(install)
            path = conn.execute(
                "SELECT path FROM pg_extension_update_paths('simhash') WHERE source = '1.0' AND target = %s",
                (NEXT,),
            ).fetchone()
            conn.execute("ALTER EXTENSION simhash UPDATE")

            assert path == (f"1.0--{NEXT}",)
            assert current_version(conn) == NEXT
            assert conn.execute("SELECT simhash_release()").fetchone() == (NEXT,)
            # One shared library serves every SQL version: the 1.0 objects and data still work.
            row = conn.execute("SELECT fp::text, fp <~> simhash('near duplicate detection') FROM docs").fetchone()
            assert row == (before, 0)
            conn.execute("CREATE DATABASE fresh")

        # A fresh install of the new release runs 1.0's script, then the upgrade.
        with server.connect("fresh") as fresh:
            fresh.execute("CREATE EXTENSION simhash")
            assert current_version(fresh) == NEXT
            assert fresh.execute("SELECT simhash_release()").fetchone() == (NEXT,)


def test_make_install_ships_every_versioned_script(tmp_path: Path) -> None:
    """pg_ext/Makefile installs sql/simhash--*.sql, so an upgrade script added
    there is installed with no Makefile change (checked on a copy of pg_ext/)."""
    ext = tmp_path / "pg_ext"
    shutil.copytree(ROOT / "pg_ext", ext, ignore=shutil.ignore_patterns("*.o", "*.so", "*.bc"))
    (ext / "sql" / f"simhash--1.0--{NEXT}.sql").write_text(UPGRADE_SCRIPT)
    dry_run = subprocess.run(
        ["make", "-n", "-C", str(ext), f"PG_CONFIG={PG_CONFIG}", "install", f"DESTDIR={tmp_path / 'dest'}"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert f"sql/simhash--1.0--{NEXT}.sql" in dry_run
    assert "sql/simhash--1.0.sql" in dry_run
