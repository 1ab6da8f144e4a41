"""The README's model-to-query example runs as written (so it cannot rot), and its
layout map names every module."""

from __future__ import annotations

import subprocess

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
    exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.splitlines() == ["https://example.org/a 0", "https://example.org/b 0"]


def test_layout_map_names_every_module() -> None:
    """A newcomer finds every C file, Python module, test directory, shared test
    helper, benchmark and harness script in the README's layout map (a C
    header is named by its .c file, which it sits beside)."""
    layout = readme_section("Layout")
    tracked = [ROOT / name for name in git_files("pg_ext/src", "pysimhash_sql", "tests", "bench", "scripts")]
    headers_of_c = {path.with_suffix(".h") for path in tracked if path.suffix == ".c"}
    named_by = {path: path.name for path in tracked if path not in headers_of_c and not path.name.startswith("test_")}
    named_by.update({path.parent: f"{path.parent.name}/" for path in tracked if path.name.startswith("test_")})
    missing = sorted(str(path.relative_to(ROOT)) for path, name in named_by.items() if name not in layout)
    assert missing == []
