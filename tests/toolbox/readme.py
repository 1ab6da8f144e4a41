"""The examples of the README and of docs/, for the tests that run them (doc
examples must not rot)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from toolbox import ROOT

VENV_BIN = Path(sys.executable).parent  # pysimhash-sql and pgxn
EXAMPLE_MARKER = "<!-- readme-example -->"  # before the model-to-query example (docs/python.md)


def readme_section(heading: str, document: str = "README.md") -> str:
    """The text of the section "## heading" of the README (or another document
    of the checkout)."""
    text = (ROOT / document).read_text()
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert section, f"{document} has no section {heading!r}"
    return section.group(1)


def readme_blocks(heading: str, language: str = "sh", document: str = "README.md") -> list[str]:
    """The ```language blocks of the section "## heading", in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", readme_section(heading, document), re.S | re.M)


def readme_example(document: str = "docs/python.md") -> str:
    """The model-to-query example: the ```python block after EXAMPLE_MARKER."""
    text = (ROOT / document).read_text()
    match = re.search(re.escape(EXAMPLE_MARKER) + r"\s*```python\n(.*?)```", text, re.S)
    assert match, f"{document} lost its {EXAMPLE_MARKER} block"
    return match.group(1)


def run_example(script: str, cwd: Path, env: dict[str, str], path: list[Path]) -> str:
    """Runs a README block in bash (stopping at the first failing command) with
    the given directories first on PATH; returns its stdout."""
    env = {**os.environ, **env, "PATH": os.pathsep.join([*map(str, path), VENV_BIN.as_posix(), os.environ["PATH"]])}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"README example failed:\n{script}\n{result.stderr}"
    return result.stdout
