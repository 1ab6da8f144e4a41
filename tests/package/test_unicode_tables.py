"""The generated Unicode tables of the text fingerprint version 2
(pysimhash_sql/unicode_tables.py, pg_ext/src/core/unicode_tables.h):
one run of scripts/generate-unicode-tables.py made both, it reproduces them
from the UCD files, and they say what the spec (§6.2) says."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from pysimhash_sql import unicode_tables as ut
from toolbox import ROOT

UCD = Path("/usr/share/unicode")  # Debian's unicode-data (scripts/install-deps.sh)
C_HEADER = ROOT / "pg_ext/src/core/unicode_tables.h"


def c_arrays() -> dict[str, list[int]]:
    text = C_HEADER.read_text(encoding="utf-8")
    return {
        name: [int(v) for v in body.split(",") if v.strip()]
        for name, body in re.findall(r"static const \w+ (\w+)\[\d+\] = \{(.*?)\};", text, re.S)
    }


def test_c_header_and_python_module_hold_the_same_tables():
    arrays = c_arrays()
    assert arrays["unicode_stage1"] == ut.STAGE1.tolist()
    assert arrays["unicode_stage2"] == ut.STAGE2.tolist()
    assert arrays["unicode_mapping_offsets"] == ut.MAPPING_OFFSETS.tolist()
    assert arrays["unicode_pool"] == ut.POOL.tolist()
    header = C_HEADER.read_text(encoding="utf-8")
    assert f'#define UNICODE_TABLES_VERSION "{ut.UNICODE_VERSION}"' in header
    assert f"#define UNICODE_MAX_MAPPING {ut.MAX_MAPPING}" in header


@pytest.mark.skipif(not (UCD / "CaseFolding.txt").exists(), reason=f"no UCD files in {UCD} (Debian: unicode-data)")
def test_generator_reproduces_the_checked_in_tables():
    version = (UCD / "CaseFolding.txt").read_text(encoding="utf-8").split("\n", 1)[0]
    if ut.UNICODE_VERSION not in version:
        pytest.skip(f"{UCD} holds another Unicode version: {version}")
    run = subprocess.run([sys.executable, "scripts/generate-unicode-tables.py", str(UCD), "--check"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def table_value(c: int) -> list[tuple[int, int]]:
    value = int(ut.STAGE2[(int(ut.STAGE1[c >> ut.BLOCK_SHIFT]) << ut.BLOCK_SHIFT) | (c & ut.BLOCK_MASK)])
    if value < ut.MAPPED:
        return [(c, value)] if value != ut.DROP else []
    m = value - ut.MAPPED
    return [(int(e) & 0xFFFFFF, int(e) >> 24) for e in ut.POOL[ut.MAPPING_OFFSETS[m] : ut.MAPPING_OFFSETS[m + 1]]]


def test_every_produced_character_stands_for_itself():
    """One lookup is all an implementation needs: what a mapping produces is
    normalised already, and never dropped."""
    for entry in ut.POOL.tolist():
        c, kind = entry & 0xFFFFFF, entry >> 24
        assert kind in (ut.WORD, ut.SOLO, ut.SEPARATOR)
        assert table_value(c) == [(c, kind)]


@pytest.mark.skipif(unicodedata.unidata_version != ut.UNICODE_VERSION,
                    reason=f"Python's unicodedata is Unicode {unicodedata.unidata_version}, the tables {ut.UNICODE_VERSION}")
def test_tables_match_pythons_unicodedata_of_the_same_version():
    """An independent derivation: NFKD, casefold(), NFKD to a fixpoint, marks,
    format characters and tatweel dropped (Hangul syllables aside: code does them)."""

    def dropped(ch: str) -> bool:
        return unicodedata.category(ch) in ("Mn", "Me", "Cf") or unicodedata.combining(ch) != 0 or ch == "\u0640"

    def step(s: str) -> str:
        s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", s).casefold())
        return "".join(ch for ch in s if not dropped(ch))

    mismatches = []
    for c in np.r_[0:0xAC00, 0xAC00 + 11172 : 0xD800, 0xE000:0x110000].tolist():
        s = chr(c)
        while (t := step(s)) != s:
            s = t
        got = "".join(chr(p) for p, _ in table_value(c))
        if got != s:
            mismatches.append(hex(c))
    assert mismatches == []
