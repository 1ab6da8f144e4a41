"""What the benchmarks share (a library, not a benchmark: scripts/bench.sh runs bench_*.py)."""

from __future__ import annotations

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
