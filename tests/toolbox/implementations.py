"""Every implementation of the text fingerprints the package has: the pure-
Python reference (hashing.PURE_PYTHON) and the compiled core
(hashing.COMPILED, pysimhash_sql/_core.c), which the tests' environment
always builds (tests/package/test_core.py checks it is in use).  The tests
that compare Python with SQL compare every one of them; the compiled core's
other copies (every SIMD level, the package without it) run in a fresh
interpreter, since the choice is made at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pysimhash_sql import hashing

from . import ROOT

IMPLEMENTATIONS = {impl.name: impl for impl in (hashing.PURE_PYTHON, hashing.COMPILED) if impl is not None}
# The compiled core's vector code, by PYSIMHASH_SQL_SIMD (a level this CPU lacks runs the best it has).
SIMD_LEVELS = ("avx512", "avx2", "none")


def fingerprint_by_implementation(text, version: int, shingle_size: int = 3) -> dict[str, int]:
    """The fingerprint of text by each implementation, by its name."""
    return {name: impl.simhash(text, shingle_size) if version == 1
            else impl.simhash_v2(text) if version == 2 else impl.simhash_v3(text)
            for name, impl in IMPLEMENTATIONS.items()}


def assert_every_implementation_gives(expected: int, text, version: int, shingle_size: int = 3) -> None:
    got = fingerprint_by_implementation(text, version, shingle_size)
    assert got == dict.fromkeys(got, expected), repr(text)[:300]


def outcome(function, *args) -> tuple[str, object]:
    """("value", what function(*args) returns) or ("error", the class of what it raises)."""
    try:
        return "value", function(*args)
    except Exception as error:  # noqa: BLE001 - the class is the outcome compared
        return "error", type(error)


def fingerprints_in_fresh_interpreter(texts: list[str], version: int, env: dict[str, str]) -> dict:
    """hashing.IMPLEMENTATION, the compiled core's SIMD level and
    hashing.fingerprints(texts) in a new Python with these environment
    variables set (PYSIMHASH_SQL_SIMD, PYSIMHASH_SQL_PURE_PYTHON)."""
    program = (
        "import json, sys\n"
        "from pysimhash_sql import hashing\n"
        "texts = json.load(sys.stdin)\n"
        "level = hashing.COMPILED.core.SIMD_LEVEL if hashing.COMPILED else None\n"
        f"values = [int(v) for v in hashing.fingerprints(texts, version={version}, jobs=2)]\n"
        "json.dump({'implementation': hashing.IMPLEMENTATION, 'simd': level, 'values': values}, sys.stdout)\n"
    )
    run = subprocess.run([sys.executable, "-c", program], input=json.dumps(texts), capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, **env}, check=True)
    return json.loads(run.stdout)
