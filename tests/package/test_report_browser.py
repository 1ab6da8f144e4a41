"""The near-duplicate report opened in a real browser: Debian's headless Chromium
(scripts/install-deps.sh installs it where it can; elsewhere this test is skipped
and says why)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report import HOSTILE, WORDS, make_table, report, variant

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/install-deps.sh installs Debian's "
                                                         "package as root (apt-get install chromium)")


def chromium(*args: str, home: Path) -> subprocess.CompletedProcess:
    """Headless Chromium, its profile in home, console messages on stderr."""
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
               f"--user-data-dir={home}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env={"HOME": str(home)})


def console_errors(stderr: str) -> list[str]:
    """The page's console messages and uncaught errors, as Chromium logs them."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def test_the_report_opens_in_a_browser(db, tmp_path: Path) -> None:
    from PIL import Image

    texts = []
    for group in range(4):
        base = [f"{w}{group}" for w in WORDS] + HOSTILE[group % 3].split()
        texts += [(variant(base, changes, group), HOSTILE[group % 3]) for changes in range(4)]
    make_table(db, texts)
    report(db, tmp_path, "--table", "docs", "--scope", "domain")
    page = (tmp_path / "report.html").as_uri()

    dom = chromium("--dump-dom", page, home=tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr
    assert console_errors(dom.stderr) == []
    html = dom.stdout
    # the charts drew themselves (plotly's SVG), the pairs' differences are there
    assert len(re.findall(r'<svg class="main-svg"', html)) >= 2
    assert html.count('class="pair"') >= 4 and "<del>" in html and "<ins>" in html
    # nothing from the data ran: the title is the report's, no <img> from a text
    assert "<title>Near-duplicates in docs</title>" in html and "pwned" not in html.split("<body", 1)[0]
    assert "<img" not in html

    shot = tmp_path / "report.png"
    result = chromium(f"--screenshot={shot}", "--window-size=1200,1400", page, home=tmp_path / "profile")
    assert result.returncode == 0 and shot.exists(), result.stderr
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is None or len(colours) > 50  # text and bars, not one blank colour


def test_console_errors_are_seen(tmp_path: Path) -> None:
    """The check above can fail: a page that logs an error and throws is caught."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><script>console.error("boom"); no_such_function();</script></body></html>')
    errors = console_errors(chromium("--dump-dom", page.as_uri(), home=tmp_path / "profile").stderr)
    assert len(errors) == 2 and "boom" in errors[0] and "no_such_function" in errors[1]
