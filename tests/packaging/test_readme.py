"""The model-to-query example runs as written (so it cannot rot); the README's
folder map names every folder and docs/layout.md names every module; every
doc the README points to exists."""

from __future__ import annotations

import re
import subprocess

from pathlib import Path

from toolbox import ROOT
from toolbox.readme import readme_example, readme_section


def git_files(*directories: str) -> list[str]:
    return subprocess.run(["git", "ls-files", *directories], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.split()


def test_readme_example_runs(simhash_db, simhash_url, monkeypatch, capsys) -> None:
    simhash_db.execute("DROP EXTENSION simhash")  # the migration creates it
    monkeypatch.setenv("SIMHASH_DATABASE_URL", simhash_url.render_as_string(hide_password=False))
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    exec(compile(readme_example(), "docs/python.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.splitlines() == ["https://example.org/a 0", "https://example.org/b 0"]


MAPPED = ("pg_ext", "pysimhash_sql", "tests", "bench", "scripts", "migrations", "docker", "examples", "docs")


def test_folder_map_names_every_folder() -> None:
    """A newcomer finds every subsystem from the README's folder map: each
    folder holding tracked files is named there (as `name/`, at its depth)."""
    layout = readme_section("Where things live")
    folders = {Path(name).parent for name in git_files(*MAPPED)} - {Path(".")}
    folders = {folder for folder in folders if folder.parent.name != "corpus" and folder.name != "corpus"}
    missing = sorted(str(folder) for folder in folders
                     if not re.search(rf"(?<![\w.-]){re.escape(folder.name)}/", layout))
    assert missing == []


def test_file_map_names_every_module() -> None:
    """docs/layout.md names every C file, Python module, test folder, shared
    test helper, benchmark and harness script (a C header is named by its .c
    file, which it sits beside)."""
    layout = (ROOT / "docs/layout.md").read_text()
    tracked = [ROOT / name for name in git_files("pg_ext/src", "pysimhash_sql", "tests", "bench", "scripts")]
    headers_of_c = {path.with_suffix(".h") for path in tracked if path.suffix == ".c"}
    named_by = {path: path.name for path in tracked if path not in headers_of_c and not path.name.startswith("test_")}
    named_by.update({path.parent: f"{path.parent.name}/" for path in tracked if path.name.startswith("test_")})
    missing = sorted(str(path.relative_to(ROOT)) for path, name in named_by.items() if name not in layout)
    assert missing == []


def test_every_linked_doc_exists() -> None:
    for document in ["README.md", *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]:
        base = (ROOT / document).parent
        for link in re.findall(r"\]\(([^)#]+\.md)\)", (ROOT / document).read_text()):
            assert (base / link).is_file(), f"{document} links to {link}, which does not exist"
