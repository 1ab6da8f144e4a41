"""docker/: what can be checked without a Docker engine.

The build stage is replayed here: its build context (as
docker/Dockerfile.dockerignore filters it) gets the files its COPY
instructions take, and its build command runs on them, so a file the build
needs but the image does not copy, or a build product that leaks into the
context, fails here.  The init script runs the way the image's entrypoint runs
it, with psql against a fresh cluster.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import psycopg
from toolbox.readme import readme_blocks
from toolbox.servers import ScratchInstall, pg_config, supported_majors

from pysimhash_sql.throwaway import ThrowawayServer
from toolbox import ROOT

DOCKER = ROOT / "docker"
BUILD_COMMAND = "DESTDIR=/staging scripts/build-extension.sh install"


def instructions(stage: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the named stage of docker/Dockerfile."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        keyword, _, args = line.strip().partition(" ")
        if keyword.upper() == "FROM":
            name = args.split(" AS ")[1].strip() if " AS " in args else "final"
            current = stages.setdefault(name, [])
        current.append((keyword.upper(), args.strip()))
    return stages[stage]


def context_files() -> list[Path]:
    """The files of the build context that docker/Dockerfile.dockerignore lets through
    (the patterns it uses: '*', '!path' and '**/*.suffix'; the last match wins)."""
    rules = [
        line.strip() for line in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    kept = []
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT).as_posix()
        if not path.is_file() or relative.startswith((".git/", ".venv/", "build/")):
            continue
        included = False
        for rule in rules:
            negated, pattern = rule.startswith("!"), rule.lstrip("!")
            if pattern.startswith("**/"):
                matches = fnmatch.fnmatch(path.name, pattern[3:])
            else:
                matches = fnmatch.fnmatch(relative, pattern) or relative.startswith(pattern + "/")
            if matches:
                included = negated
        if included:
            kept.append(path)
    return kept


def test_image_builds_with_the_script_make_install_runs() -> None:
    build = instructions("build")
    assert build[0][1] == "postgres:${PG_MAJOR} AS build"
    assert ("RUN", BUILD_COMMAND) in build
    final = instructions("final")
    assert final[0] == ("FROM", "postgres:${PG_MAJOR}")
    assert ("COPY", "--from=build /staging/ /") in final
    assert not any(keyword == "RUN" for keyword, _ in final)  # no compiler or headers in the image
    kept = {path.relative_to(ROOT).as_posix() for path in context_files()}
    assert "docker/initdb.d/10-simhash.sql" in kept  # the final stage's other COPY
    compose = (DOCKER / "compose.yaml").read_text()
    assert "context: ..\n" in compose and "dockerfile: docker/Dockerfile\n" in compose
    makefile = (ROOT / "Makefile").read_text()
    assert "install: deps\n\tscripts/build-extension.sh install\n" in makefile
    assert '"$ROOT/scripts/build-extension.sh" install' in (ROOT / "scripts" / "temp-install.sh").read_text()


def test_default_major_is_one_the_tests_build_and_data_lands_in_the_volume() -> None:
    """The image and compose default to the newest major `make test-all` runs;
    PGDATA is where the volume is mounted, which every major's image accepts
    (the 18+ images refuse a volume at /var/lib/postgresql/data otherwise)."""
    newest = supported_majors()[-1]
    dockerfile = (DOCKER / "Dockerfile").read_text()
    compose = (DOCKER / "compose.yaml").read_text()
    assert re.search(r"^ARG PG_MAJOR=(\d+)$", dockerfile, re.M).group(1) == str(newest)
    assert set(re.findall(r"\$\{PG_MAJOR:-(\d+)\}", compose)) == {str(newest)}
    pgdata = re.search(r"^\s+PGDATA: (\S+)$", compose, re.M).group(1)
    assert re.search(r"^\s+- pgdata:(\S+)$", compose, re.M).group(1) == pgdata


def replay_copy(args: str, context: Path, workdir: Path) -> None:
    """A COPY instruction: directories copy their contents, files go into the target directory."""
    *sources, destination = shlex.split(args)
    target = workdir / destination
    for source in sources:
        path = context / source
        assert path.exists(), f"COPY {source}: not in the build context"
        if path.is_dir():
            shutil.copytree(path, target, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def test_build_context_leaves_out_local_build_products() -> None:
    kept = context_files()
    assert any(path.name == "simhash.control" for path in kept)
    assert not [path for path in kept if path.suffix in {".o", ".so", ".bc"}]


def test_build_stage_replayed_on_its_context_installs_only_runtime_files(tmp_path: Path) -> None:
    context = tmp_path / "context"
    for path in context_files():
        target = context / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    workdir = tmp_path / "src"  # the stage's WORKDIR
    for keyword, args in instructions("build"):
        if keyword == "COPY":
            replay_copy(args, context, workdir)

    staging = tmp_path / "staging"
    # As in the image: PG_MAJOR is set (a build argument, and the base image's
    # ENV) and means the installation pg_config names.
    env = {key: value for key, value in os.environ.items() if key != "SIMHASH_PG_MAJOR"}
    env["PG_MAJOR"] = pg_config("version").split()[1].split(".")[0]
    subprocess.run(
        BUILD_COMMAND.replace("/staging", str(staging)), shell=True, cwd=workdir, env=env, check=True,
        capture_output=True,
    )

    installed = {p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()}
    extension_dir = pg_config("sharedir").lstrip("/") + "/extension"
    pkglibdir = pg_config("pkglibdir").lstrip("/")
    assert f"{extension_dir}/simhash.control" in installed
    assert f"{extension_dir}/simhash--1.0.sql" in installed
    assert f"{pkglibdir}/simhash.so" in installed
    assert all(p.startswith((f"{extension_dir}/simhash", f"{pkglibdir}/")) for p in installed), installed


def test_init_script_creates_the_extension_as_the_entrypoint_runs_it(tmp_path: Path) -> None:
    install = ScratchInstall(tmp_path / "install")
    with ThrowawayServer(install.path("bindir"), tmp_path) as server:
        with server.connect() as admin:
            admin.execute("CREATE DATABASE simhash")
        # docker-entrypoint.sh runs each *.sql file in /docker-entrypoint-initdb.d like this.
        for script in sorted((DOCKER / "initdb.d").glob("*.sql")):
            subprocess.run(
                [str(install.path("bindir") / "psql"), "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-q",
                 "--dbname", server.dsn("simhash"), "-f", str(script)],
                check=True, capture_output=True,
            )
        with server.connect() as admin:
            admin.execute("CREATE DATABASE created_later")
        for dbname in ["simhash", "created_later"]:
            with server.connect(dbname) as conn:
                assert conn.execute("SELECT simhash('hello world') = simhash('Hello, World!')").fetchone() == (True,)


def test_readme_docker_examples_agree_with_the_docker_files(shared_db: psycopg.Connection) -> None:
    """No Docker engine here: docs/install.md's commands are checked against the files
    they name, and the SQL they run is run on the test server."""
    text = "\n".join(readme_blocks("Docker", document="docs/install.md"))
    for path in re.findall(r" -f (\S+)", text):
        assert (ROOT / path).is_file(), path
    dockerfile = (DOCKER / "Dockerfile").read_text()
    for name in re.findall(r"--build-arg (\w+)=", text):
        assert f"ARG {name}" in dockerfile
    user, password, port, dbname = re.search(r"postgresql://(\w+):([\w-]+)@localhost:(\d+)/(\w+)", text).groups()
    compose = (DOCKER / "compose.yaml").read_text()
    assert (user, f"POSTGRES_DB: {dbname}", f"POSTGRES_PASSWORD: {password}") == (
        "postgres", *re.findall(r"POSTGRES_(?:DB|PASSWORD): [\w-]+", compose))
    assert f"${{SIMHASH_DB_PORT:-{port}}}:5432" in compose
    query = re.search(r'psql "[^"]+" -c "([^"]+)"', text).group(1)
    assert shared_db.execute(query).fetchone() == (0,)
