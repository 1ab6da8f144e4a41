"""The package as users install it: the sdist and wheel built from this
checkout, installed into a fresh virtual environment with only the base
dependencies and pytest, then each extra in turn.  The pytest plugin comes
with every install (entry point pytest11), so an unrelated test must pass at
every step, and the fixtures must say which extra they need until it is there
(simhash_db needs psycopg, which every extra brings).
"""

from __future__ import annotations

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


def run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=900)


def checked(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (python -m build)."""
    out = tmp_path_factory.mktemp("dist")
    checked(run(sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out, ROOT))
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

    # the base install, from the sdist (so the sdist is complete), and pytest
    checked(run(python, "-m", "pip", "install", "--quiet", distributions["sdist"], "pytest"))
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
