"""The fingerprint core (pg_ext/src/core) is portable C: it includes no
PostgreSQL header (only its own, the C library's and xxhash.h), and each of
its files compiles alone with a plain C11 compiler, every warning an error,
as the Python module's build compiles them (setup.py)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from toolbox import ROOT

CORE = ROOT / "pg_ext" / "src" / "core"
INCLUDE = re.compile(r"^\s*#\s*include\s*([<\"])([^>\"]+)[>\"]", re.M)
# The C library's headers the core may use, and the one library it needs.
ALLOWED_SYSTEM = {"assert.h", "math.h", "stdbool.h", "stddef.h", "stdint.h", "string.h", "xxhash.h"}


def core_files() -> list:
    files = sorted(CORE.glob("*.[ch]"))
    assert any(path.suffix == ".c" for path in files)
    return files


@pytest.mark.parametrize("path", core_files(), ids=lambda path: path.name)
def test_the_core_includes_only_itself_and_the_c_library(path) -> None:
    for kind, header in INCLUDE.findall(path.read_text(encoding="utf-8")):
        if kind == '"':
            assert header.startswith("core/") and (ROOT / "pg_ext" / "src" / header).exists(), header
        else:
            assert header in ALLOWED_SYSTEM, f"{path.name} includes <{header}>"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
@pytest.mark.parametrize("path", [p for p in core_files() if p.suffix == ".c"], ids=lambda path: path.name)
def test_each_core_file_compiles_with_plain_c11(path, tmp_path) -> None:
    run = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", f"-I{ROOT / 'pg_ext' / 'src'}",
                          "-c", str(path), "-o", str(tmp_path / "out.o")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
