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

import functools
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


def as_server_user(workdir: Path, *argv: str | Path) -> subprocess.CompletedProcess:
    """Runs a PostgreSQL tool in ``workdir`` as the user the servers run as."""
    result = subprocess.run([str(ROOT / "scripts" / "as-server-user"), str(workdir), *map(str, argv)],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{argv[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result


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
    """A throwaway cluster of the installation in ``bindir`` (a ScratchInstall's,
    or release_bindir's); use as a context manager.  Data checksums are on, as
    initdb's default is from PostgreSQL 18 on (pg_upgrade needs both alike)."""

    def __init__(self, bindir: Path, workdir: Path) -> None:
        self.bindir = bindir
        self.datadir = workdir / "data"
        self.socket_dir = workdir  # pg_ctl initdb makes it the server user's
        self.env = {**os.environ, "SIMHASH_PG_BINDIR": str(bindir)}

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [str(ROOT / "scripts" / "pg_ctl"), *args, "-D", str(self.datadir)],
            check=True, env=self.env, stdout=subprocess.DEVNULL,
        )

    def initdb(self) -> ScratchServer:
        self._pg_ctl("initdb", "-s", "-o", "-U postgres -A trust -E UTF8 --no-locale --data-checksums")
        return self

    def start(self) -> ScratchServer:
        self._pg_ctl(
            "start", "-w", "-l", str(self.socket_dir / "server.log"),
            "-o", f"-p {PORT} -k {self.socket_dir} -c listen_addresses=''",
        )
        return self

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "fast", "-w")

    def __enter__(self) -> ScratchServer:
        if not self.datadir.exists():
            self.initdb()
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={PORT} user=postgres dbname={dbname}"

    def libpq_env(self, dbname: str = "postgres") -> dict[str, str]:
        """PG* variables that point libpq clients (psql, pysimhash-sql) at this server."""
        return {"PGHOST": str(self.socket_dir), "PGPORT": str(PORT), "PGUSER": "postgres", "PGDATABASE": dbname}

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.dsn(dbname), autocommit=True)
