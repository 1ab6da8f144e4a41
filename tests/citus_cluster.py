"""A local Citus cluster for tests and benchmarks: a coordinator and workers on
127.0.0.1, each a throwaway server of the private installation (run through
scripts/pg_ctl, as the unprivileged harness user when run as root).

Citus is not one of the project's dependencies: it is used when it is
installed into the private installation (its citus.control beside
simhash.control), and the tests that need it are skipped otherwise.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
PG_CONFIG = os.environ.get("PG_CONFIG", "pg_config")


def private_sharedir(bindir: str) -> Path:
    """The share directory of the private installation whose bindir is bindir."""
    def config(option: str) -> str:
        return subprocess.run([PG_CONFIG, f"--{option}"], check=True, capture_output=True, text=True).stdout.strip()

    return Path(bindir.removesuffix(config("bindir")) + config("sharedir"))


def citus_missing() -> str | None:
    """Why a Citus cluster cannot be started here, or None when it can."""
    bindir = os.environ.get("SIMHASH_PG_BINDIR")
    if not bindir:
        return "needs the private installation: run through make test or make pytest"
    if not (private_sharedir(bindir) / "extension" / "citus.control").exists():
        return (f"Citus is not installed in the private installation {bindir} "
                "(install Citus 13 there to run these tests: docs/citus.md)")
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CitusCluster:
    """A coordinator and `workers` workers under workdir; use as a context manager.
    server_options are extra `-c name=value` settings for every node."""

    def __init__(self, workdir: Path, workers: int = 2, server_options: str = "") -> None:
        self.bindir = os.environ["SIMHASH_PG_BINDIR"]
        self.nodes = [(workdir / f"node{i}", free_port()) for i in range(workers + 1)]
        self.server_options = server_options
        self.env = {**os.environ, "SIMHASH_PG_BINDIR": self.bindir}

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run([str(ROOT / "scripts" / "pg_ctl"), *args], check=True, env=self.env,
                       stdout=subprocess.DEVNULL)

    def dsn(self, node: int = 0, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.nodes[node][1]} user=postgres dbname={dbname}"

    def connect(self, node: int = 0) -> psycopg.Connection:
        return psycopg.connect(self.dsn(node), autocommit=True)

    def start(self) -> CitusCluster:
        for directory, port in self.nodes:
            data = directory / "data"
            if not data.exists():
                self._pg_ctl("initdb", "-D", str(data), "-s", "-o", "-U postgres -A trust -E UTF8 --no-locale")
            # Internal connections go over TCP without SSL (Citus asks for SSL by default).
            options = (f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 "
                       "-c shared_preload_libraries=citus -c citus.node_conninfo=sslmode=disable "
                       f"-c max_connections=150 {self.server_options}")
            self._pg_ctl("start", "-D", str(data), "-w", "-l", str(directory / "server.log"), "-o", options)
        for node in range(len(self.nodes)):
            with self.connect(node) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        with self.connect() as coordinator:
            coordinator.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (self.nodes[0][1],))
            for _, port in self.nodes[1:]:
                coordinator.execute("SELECT citus_add_node('127.0.0.1', %s)", (port,))
            # Reaches the workers: CREATE EXTENSION is propagated.
            coordinator.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        return self

    def stop(self) -> None:
        for directory, _ in self.nodes:
            if (directory / "data" / "postmaster.pid").exists():
                self._pg_ctl("stop", "-D", str(directory / "data"), "-m", "fast", "-w")

    def backend_pids(self) -> list[int]:
        """The postmaster PID of every node (for memory and CPU accounting)."""
        return [int((directory / "data" / "postmaster.pid").read_text().split()[0]) for directory, _ in self.nodes]

    def __enter__(self) -> CitusCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
