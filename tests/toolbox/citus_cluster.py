"""A local Citus cluster for tests and benchmarks: a coordinator and workers on
127.0.0.1, each a throwaway server (pysimhash_sql.throwaway) of the private
installation.

Citus is not one of the project's dependencies: it is used when it is
installed into the private installation (its citus.control beside
simhash.control), and the tests that need it are skipped otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from toolbox.servers import pg_config

from pysimhash_sql.throwaway import ThrowawayServer


def private_sharedir(bindir: str) -> Path:
    """The share directory of the private installation whose bindir is bindir."""
    return Path(bindir.removesuffix(pg_config("bindir")) + pg_config("sharedir"))


def citus_missing() -> str | None:
    """Why a Citus cluster cannot be started here, or None when it can."""
    bindir = os.environ.get("SIMHASH_PG_BINDIR")
    if not bindir:
        return "needs the private installation: run through make test or make pytest"
    if not (private_sharedir(bindir) / "extension" / "citus.control").exists():
        return (f"Citus is not installed in the private installation {bindir} "
                "(install Citus 13 there to run these tests: docs/citus.md)")
    return None


class CitusCluster:
    """A coordinator and `workers` workers under workdir; use as a context manager.
    server_options are extra `-c name=value` settings for every node."""

    def __init__(self, workdir: Path, workers: int = 2, server_options: str = "") -> None:
        # Internal connections go over TCP without SSL (Citus asks for SSL by default).
        options = ("-c shared_preload_libraries=citus -c citus.node_conninfo=sslmode=disable "
                   f"-c max_connections=150 {server_options}")
        self.nodes = [ThrowawayServer(os.environ["SIMHASH_PG_BINDIR"], workdir / f"node{i}", postgres_options=options)
                      for i in range(workers + 1)]

    def dsn(self, node: int = 0, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.nodes[node].port} user=postgres dbname={dbname}"

    def connect(self, node: int = 0) -> psycopg.Connection:
        return psycopg.connect(self.dsn(node), autocommit=True)

    def start(self) -> CitusCluster:
        for server in self.nodes:
            if not (server.datadir / "PG_VERSION").exists():
                server.initdb()
            server.start()
        for node in range(len(self.nodes)):
            with self.connect(node) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        with self.connect() as coordinator:
            coordinator.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (self.nodes[0].port,))
            for worker in self.nodes[1:]:
                coordinator.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))
            # Reaches the workers: CREATE EXTENSION is propagated.
            coordinator.execute("CREATE EXTENSION IF NOT EXISTS simhash")
        return self

    def stop(self) -> None:
        for server in self.nodes:
            if server.running():
                server.stop()

    def backend_pids(self) -> list[int]:
        """The postmaster PID of every node (for memory and CPU accounting)."""
        return [int((server.datadir / "postmaster.pid").read_text().split()[0]) for server in self.nodes]

    def __enter__(self) -> CitusCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
