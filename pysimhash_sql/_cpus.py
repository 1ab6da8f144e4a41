"""How many threads work by default: the CPUs this process may run on."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says):
    the default number of threads that fingerprint (hashing) and that search
    for pairs (_find_all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
