"""The benchmarks' libraries (bench/*.py, not a package) importable by their tests."""

from __future__ import annotations

import sys

from toolbox import ROOT

sys.path.insert(0, str(ROOT / "bench"))
