"""The package as users install it: the sdist built from this checkout and the
wheel built from the sdist, installed into a fresh virtual environment with
only the base dependencies and pytest, then each extra in turn.  The pytest
plugin comes with every install (entry point pytest11), so an unrelated test
must pass at every step, and the fixtures must say which extra they need
until it is there (simhash_db needs psycopg, which every extra brings).  The
sdist builds the compiled fingerprint core (setup.py), and so does `pip
install .` from a clean copy of the checkout; with
PYSIMHASH_SQL_PURE_PYTHON=1 it installs without it, and the fingerprints are
the same bits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
import sys
import venv

import pytest
from toolbox import ROOT


UNRELATED_TEST = "def test_unrelated():\n    assert 1 + 1 == 2\n"
FIXTURE_TEST = """
def test_fixture(simhash_db):
    assert simhash_db.execute("SELECT 13893055204574190055::simhash64").fetchone()[0] == 13893055204574190055
"""
EXTRAS = ["psycopg", "psycopg2", "asyncpg", "sqlalchemy", "alembic", "html", "pytest"]


# Which implementation the installed package uses, and a fingerprint of it.
IMPLEMENTATION = ("from pysimhash_sql import hashing; "
                  "print(hashing.IMPLEMENTATION, hashing.simhash_v2('Près d’ici, 近似重复 text') ^ hashing.simhash('a b c d'))")
EXPECTED = "1485970788898885340"


def run(*argv: str | Path, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=None if env is None else {**os.environ, **env})


def checked(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (python -m build without --sdist or --wheel:
    with both it built the wheel from the checkout, and the sdist a third time, in pip)."""
    out = tmp_path_factory.mktemp("dist")
    checked(run(sys.executable, "-m", "build", "--outdir", out, ROOT))
    return {"sdist": next(out.glob("*.tar.gz")), "wheel": next(out.glob("*.whl"))}


def test_every_install_leaves_pytest_working(tmp_path, distributions) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_unrelated.py").write_text(UNRELATED_TEST)
    (tmp_path / "tests" / "test_fixture.py").write_text(FIXTURE_TEST)

    def pytest_run(name: str) -> subprocess.CompletedProcess:
        return run(python, "-m", "pytest", "-p", "no:cacheprovider", f"tests/{name}", cwd=tmp_path)

    # the base install, the wheel built from the sdist (so the sdist is complete: it builds the
    # compiled core, which the installed package then uses), and pytest
    checked(run(python, "-m", "pip", "install", "--quiet", distributions["wheel"], "pytest"))
    assert checked(run(python, "-c", IMPLEMENTATION, cwd=tmp_path)).stdout.split() == ["c", EXPECTED]
    for extra in [None, *EXTRAS]:
        if extra is not None:
            checked(run(python, "-m", "pip", "install", "--quiet", f"{distributions['wheel']}[{extra}]"))
        checked(pytest_run("test_unrelated.py"))
        if extra is None:
            fixture = pytest_run("test_fixture.py")
            assert fixture.returncode == 1 and "pip install 'pysimhash-sql[pytest]'" in fixture.stdout, fixture.stdout
        else:  # the installed plugin runs its server (as root: as an unprivileged user)
            checked(pytest_run("test_fixture.py"))
    installed = checked(run(python, "-c", "import pysimhash_sql; print(pysimhash_sql.__file__)", cwd=tmp_path))
    assert installed.stdout.startswith(str(env)), installed.stdout  # the installed package, not this checkout


def test_pip_install_from_a_clean_copy_builds_the_compiled_core(tmp_path) -> None:
    """`pip install .` from a fresh clone builds and uses the module with the
    system's C compiler; PYSIMHASH_SQL_PURE_PYTHON=1 at build time installs
    the package without it, which then computes the same bits in Python."""
    copy = tmp_path / "clone"
    tracked = checked(run("git", "ls-files", cwd=ROOT)).stdout.splitlines()
    for name in tracked:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    checked(run(python, "-m", "pip", "install", "--quiet", ".", cwd=copy, env={"PYSIMHASH_SQL_PURE_PYTHON": "1"}))
    assert checked(run(python, "-c", IMPLEMENTATION, cwd=tmp_path)).stdout.split() == ["python", EXPECTED]
    assert not list((env / "lib").glob("python*/site-packages/pysimhash_sql/_simhash_core*"))
    checked(run(python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", ".", cwd=copy))
    assert checked(run(python, "-c", IMPLEMENTATION, cwd=tmp_path)).stdout.split() == ["c", EXPECTED]
    version = checked(run(env / "bin" / "pysimhash-sql", "--version", cwd=tmp_path)).stdout
    assert version.endswith("(fingerprint implementation: c)\n"), version
