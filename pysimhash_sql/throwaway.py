"""A throwaway PostgreSQL server: the one way pysimhash-sql starts one.

The pytest plugin's server, the project's own tests (servers of their own for
upgrades, crashes, clusters, installs), its pg_regress run, the demo and the
benchmarks all start servers with ``ThrowawayServer`` (the shell harness through
``python -m pysimhash_sql.throwaway``).  A server is ``initdb`` (UTF8, no
locale, trust authentication for ``postgres``, data checksums on as from
PostgreSQL 18 on, so that pg_upgrade sees every major alike) and ``pg_ctl
start`` on a Unix socket in its own directory and a port on 127.0.0.1.

PostgreSQL refuses to run as root: when the caller is root, ``initdb``,
``pg_ctl`` and every tool ``run()`` starts run as an unprivileged user
(``server_user``: the one given, else ``SIMHASH_PG_USER``, else ``nobody``).
The server's directory is then made that user's, and the directories above
it passable.

Command line: ``python -m pysimhash_sql.throwaway --bindir BINDIR --directory DIR
[--postgres-options OPTIONS] -- COMMAND...`` starts a server, runs COMMAND with
``SIMHASH_DSN`` and libpq's ``PG*`` variables pointing at it, stops the server
and exits with COMMAND's status.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from .server_user import DEFAULT_USER, account

__all__ = ["ThrowawayServer", "server_user"]


def server_user(configured: str | None = None) -> str | None:
    """Who runs the server: None (the caller) unless the caller is root."""
    if os.geteuid() != 0:
        return None
    return configured or os.environ.get("SIMHASH_PG_USER") or DEFAULT_USER


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ThrowawayServer:
    """A cluster of the installation in ``bindir``, in ``directory`` (data,
    socket, log); a context manager that initialises it if needed, starts it
    and stops it.  ``user`` is who runs it when the caller is root
    (``os_user`` then; ``user`` is the database superuser, ``postgres``)."""

    def __init__(self, bindir: str | Path, directory: str | Path, *, user: str | None = None,
                 port: int | None = None, postgres_options: str = "") -> None:
        self.bindir = Path(bindir)
        self.directory = Path(directory)
        self.datadir = self.directory / "data"
        self.os_user = server_user(user)
        self.user = "postgres"   # the database superuser
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.postgres_options = postgres_options
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.os_user is not None:
            self._give_directory()

    def _give_directory(self) -> None:
        """The directory the server user's own, below directories it may pass
        through (temporary directories are often private to their owner)."""
        entry = account(self.os_user)
        os.chown(self.directory, entry.pw_uid, entry.pw_gid)
        for parent in self.directory.resolve().parents:
            mode = parent.stat().st_mode
            if not mode & 0o001:
                parent.chmod(mode | 0o001)

    def command(self, program: str | Path, *args: str | Path) -> list[str]:
        """The argv that runs ``program`` (a name in bindir, or a path) as the server's user."""
        path = program if "/" in str(program) else self.bindir / program
        argv = [str(path), *map(str, args)]
        if self.os_user is None:
            return argv
        return [sys.executable, "-m", "pysimhash_sql.server_user", "--cwd", str(self.directory), self.os_user, *argv]

    def run(self, program: str | Path, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess:
        """Runs a PostgreSQL tool (pg_upgrade, pg_dump, psql, ...) as the server's
        user, in its directory; fails with the tool's output if it fails."""
        result = subprocess.run(self.command(program, *args), cwd=self.directory, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise RuntimeError(f"{program} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result

    def initdb(self) -> ThrowawayServer:
        self.run("initdb", "-D", self.datadir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale",
                 "--data-checksums", "--no-sync")
        return self

    def start(self) -> ThrowawayServer:
        options = f"-p {self.port} -k {shlex.quote(str(self.directory))} -c listen_addresses={self.host} "
        self.run("pg_ctl", "start", "-w", "-D", self.datadir, "-l", self.directory / "server.log",
                 "-o", options + self.postgres_options)
        return self

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "stop", "-w", "-D", self.datadir, "-m", mode)

    def running(self) -> bool:
        return self.run("pg_ctl", "status", "-D", self.datadir, check=False).returncode == 0

    def __enter__(self) -> ThrowawayServer:
        if not (self.datadir / "PG_VERSION").exists():
            self.initdb()
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.running():
            self.stop()

    def dsn(self, dbname: str = "postgres", *, tcp: bool = False) -> str:
        """A libpq connection string: the server's Unix socket, or with ``tcp``
        its port on 127.0.0.1 (for URLs, which cannot name a socket directory)."""
        host = self.host if tcp else self.directory
        return f"host={host} port={self.port} user=postgres dbname={dbname}"

    def libpq_env(self, dbname: str = "postgres") -> dict[str, str]:
        """PG* variables that point libpq clients (psql, pg_regress, pysimhash-sql) at the server."""
        return {"PGHOST": str(self.directory), "PGPORT": str(self.port), "PGUSER": "postgres", "PGDATABASE": dbname}

    def connect(self, dbname: str = "postgres"):
        """An autocommit psycopg connection (needs the psycopg extra)."""
        import psycopg

        return psycopg.connect(self.dsn(dbname), autocommit=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pysimhash_sql.throwaway", description=__doc__.splitlines()[0])
    parser.add_argument("--bindir", required=True, help="the PostgreSQL installation's bin directory")
    parser.add_argument("--directory", required=True, help="for the data, the socket and the log (emptied first)")
    parser.add_argument("--postgres-options", default="", help="more server options, e.g. '-c shared_buffers=1GB'")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    shutil.rmtree(args.directory, ignore_errors=True)
    with ThrowawayServer(args.bindir, args.directory, postgres_options=args.postgres_options) as server:
        env = {**os.environ, **server.libpq_env(), "SIMHASH_DSN": server.dsn()}
        return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
