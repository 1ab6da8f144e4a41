"""What the benchmarks share (a library, not a benchmark: scripts/bench.sh runs bench_*.py)."""

from __future__ import annotations

import argparse
import gzip
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def best_of(repeat: int, run: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """The fastest of `repeat` runs of run(), in seconds of `clock`, and the last result."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        result = run()
        best = min(best, clock() - start)
    return best, result


def cpu_clock(pid: int) -> Callable[[], float] | None:
    """A clock of the CPU time process pid (a backend of a server on this
    machine) has used, in seconds, nanosecond-fine (/proc/<pid>/schedstat);
    None where /proc won't say.  Other load on the machine disturbs it far less
    than the wall clock."""
    path = Path(f"/proc/{pid}/schedstat")

    def clock() -> float:
        return int(path.read_text().split()[0]) / 1e9

    try:
        clock()
    except (OSError, ValueError, IndexError):
        return None
    return clock


def quick_run(description: str) -> bool:
    """Whether the benchmark was asked for a --quick run (other flags are other benchmarks')."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    return parser.parse_known_args()[0].quick


# Debian's Chinese manual pages (manpages-zh, which `make bench` installs): real Chinese text.
CHINESE_MAN_PAGES = Path("/usr/share/man/zh_CN")
# A roff request line, and the font and character escapes within a line.
ROFF_REQUEST = re.compile(r"^[.'].*$", re.M)
ROFF_ESCAPE = re.compile(r"\\(f[BIRP]|f\(..|\(..|[-&e])")
HAS_CHINESE = re.compile("[\u3000-\u9fff]")


def chinese_text() -> str | None:
    """Debian's Chinese manual pages as plain text, the lines with Chinese; None without them."""
    lines = []
    for page in sorted(CHINESE_MAN_PAGES.glob("man*/*.gz")):
        text = ROFF_ESCAPE.sub("", ROFF_REQUEST.sub("", gzip.decompress(page.read_bytes()).decode(errors="replace")))
        lines.extend(line for line in text.splitlines() if HAS_CHINESE.search(line))
    return "\n".join(lines) if len(lines) > 1000 else None


# The English of the fingerprint benchmarks: the license texts in examples/corpus.
EXAMPLES_CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"


def documents(text: str, total_bytes: int, doc_chars: int) -> list[str]:
    """Slices of text, doc_chars long, from spread-out offsets, total_bytes of UTF-8 in all."""
    docs, offset, size = [], 0, 0
    while size < total_bytes:
        start = offset % (len(text) - doc_chars)
        docs.append(text[start : start + doc_chars])
        size += len(docs[-1].encode())
        offset += 7919
    return docs


def english_text() -> str:
    """The license texts in examples/corpus (real English prose)."""
    return " ".join(p.read_text(errors="replace") for p in sorted(EXAMPLES_CORPUS.glob("*.license.txt")))
