"""A PostgreSQL installation and server of a test's own.

Tests that install extension files (pgxn install, upgrade scripts) must not
write into the private installation the shared test server runs from, so they
copy it (46 MB, well under a second), change the copy, and start a server from
it.  PostgreSQL finds its share/ and lib/ directories relative to its binaries,
so the copy is a complete installation.  The server runs through scripts/pg_ctl
(as the unprivileged harness user when the tests run as root), listening on a
Unix socket only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[1]
PG_CONFIG = os.environ.get("PG_CONFIG", "pg_config")
PORT = 5432  # only names the socket file in the server's own directory


def pg_config(option: str) -> str:
    return subprocess.run([PG_CONFIG, f"--{option}"], check=True, capture_output=True, text=True).stdout.strip()


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


class ScratchServer:
    """A throwaway cluster started from a ScratchInstall; use as a context manager."""

    def __init__(self, install: ScratchInstall, workdir: Path) -> None:
        self.datadir = workdir / "data"
        self.socket_dir = workdir  # pg_ctl initdb makes it the server user's
        self.env = {**os.environ, "SIMHASH_PG_BINDIR": str(install.path("bindir"))}

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [str(ROOT / "scripts" / "pg_ctl"), *args, "-D", str(self.datadir)],
            check=True, env=self.env, stdout=subprocess.DEVNULL,
        )

    def __enter__(self) -> ScratchServer:
        self._pg_ctl("initdb", "-s", "-o", "-U postgres -A trust -E UTF8 --no-locale")
        self._pg_ctl(
            "start", "-w", "-l", str(self.socket_dir / "server.log"),
            "-o", f"-p {PORT} -k {self.socket_dir} -c listen_addresses=''",
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self._pg_ctl("stop", "-m", "fast", "-w")

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={PORT} user=postgres dbname={dbname}"

    def libpq_env(self, dbname: str = "postgres") -> dict[str, str]:
        """PG* variables that point libpq clients (psql, pysimhash-sql) at this server."""
        return {"PGHOST": str(self.socket_dir), "PGPORT": str(PORT), "PGUSER": "postgres", "PGDATABASE": dbname}

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.dsn(dbname), autocommit=True)
