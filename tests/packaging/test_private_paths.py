"""Tests never share fixed paths: two users, or two runs, on one machine must
not collide.  Every test, pytest and pg_regress alike, writes below a private
temporary directory (pytest's tmp_path, tempfile, the server's own data
directory), so no test file may name a fixed path in the system's temporary
directory."""

from __future__ import annotations

import re
import subprocess

from toolbox import ROOT

# "/tmp/" followed by a name: a path every user and run would share.  Spelt in
# two pieces so that this file does not match itself.
FIXED_TEMP_PATH = re.compile("/" + r"tmp/[\w.-]")
TEST_SOURCES = ("tests", "pg_ext/test")


def test_no_test_names_a_fixed_temporary_path() -> None:
    files = subprocess.run(["git", "ls-files", *TEST_SOURCES], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    assert files, "no test sources found"
    offenders = [f"{name}:{number}: {line.strip()}"
                 for name in files if (ROOT / name).suffix in {".py", ".sql", ".out", ".sh"}
                 for number, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
                 if FIXED_TEMP_PATH.search(line)]
    assert offenders == []
