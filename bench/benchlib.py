"""What the benchmarks share (a library, not a benchmark: scripts/bench.sh runs bench_*.py)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
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


def quick_run(description: str) -> bool:
    """Whether the benchmark was asked for a --quick run (other flags are other benchmarks')."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    return parser.parse_known_args()[0].quick
