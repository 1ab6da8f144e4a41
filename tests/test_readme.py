"""The README's model-to-query example runs as written (so it cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- readme-example -->"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(re.escape(MARKER) + r"\s*```python\n(.*?)```", text, re.S)
    assert match, f"README.md lost its {MARKER} block"
    return match.group(1)


def test_readme_example_runs(simhash_db, simhash_url, monkeypatch, capsys) -> None:
    simhash_db.execute("DROP EXTENSION simhash")  # the migration creates it
    monkeypatch.setenv("SIMHASH_DATABASE_URL", simhash_url.render_as_string(hide_password=False))
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.splitlines() == ["https://example.org/a 0", "https://example.org/b 0"]
