"""A PostgreSQL installation and server of a test's own.

Tests that install extension files (pgxn install, upgrade scripts) must not
write into the private installation the shared test server runs from, so they
copy it (46 MB, well under a second), change the copy, and start a server from
it.  PostgreSQL finds its share/ and lib/ directories relative to its binaries,
so the copy is a complete installation.  Servers are pysimhash_sql.throwaway's
(as the unprivileged harness user when the tests run as root), as every
server of the project is.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from toolbox import ROOT

PG_CONFIG = os.environ.get("PG_CONFIG", "pg_config")


def pg_config(option: str) -> str:
    return subprocess.run([PG_CONFIG, f"--{option}"], check=True, capture_output=True, text=True).stdout.strip()


def supported_majors() -> list[int]:
    """The supported PostgreSQL majors, oldest first (scripts/postgresql-releases)."""
    lines = (ROOT / "scripts" / "postgresql-releases").read_text().splitlines()
    return [int(line.split()[0]) for line in lines if line[:1].isdigit()]


@functools.cache
def release_bindir(major: int) -> Path:
    """The bindir of a private installation of PostgreSQL ``major`` (the project's
    own download) with the extension built and installed, made on first use."""
    env = {**os.environ, "SIMHASH_PG_MAJOR": str(major)}
    env.pop("PG_CONFIG", None)
    result = subprocess.run([str(ROOT / "scripts" / "temp-install.sh")], env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"building for PostgreSQL {major} failed:\n{result.stderr}"
    return Path(result.stdout.strip())


class ScratchInstall:
    """A copy of the private installation below ``root`` (a DESTDIR-style root:
    the system paths that pg_config reports, relative to it)."""

    def __init__(self, root: Path) -> None:
        private_bindir = os.environ.get("SIMHASH_PG_BINDIR")
        if not private_bindir:
            pytest.skip("needs the private installation: run through make test or make pytest")
        private_root = private_bindir.removesuffix(pg_config("bindir"))
        shutil.copytree(private_root, root, symlinks=True)
        self.root = root

    def path(self, option: str) -> Path:
        """Where pg_config's directory ``option`` (sharedir, pkglibdir, bindir) is in this copy."""
        return Path(f"{self.root}{pg_config(option)}")

    @property
    def extension_dir(self) -> Path:
        return self.path("sharedir") / "extension"

    def remove_simhash(self) -> None:
        """Take the simhash extension out, so whatever installs it next is tested."""
        for path in [*self.extension_dir.glob("simhash*"), *self.path("pkglibdir").glob("simhash*")]:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
