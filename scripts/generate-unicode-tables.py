#!/usr/bin/env python3
"""Generates the Unicode tables of the text fingerprint version 2
(docs/fingerprint-spec.md §6) from raw Unicode Character Database files:

    pg_ext/src/core/unicode_tables.h          the C copy (the extension's and the module's)
    pysimhash_sql/unicode_tables.py           the Python package's copy

Both come from one run, so C and Python normalise every code point alike.
Usage:

    python3 scripts/generate-unicode-tables.py [UCD_DIR] [--check]

UCD_DIR holds UnicodeData.txt, CaseFolding.txt and Scripts.txt of one Unicode
version (default /usr/share/unicode, Debian's package unicode-data, which
scripts/install-deps.sh installs).  --check writes nothing and exits 1 when the
checked-in files differ from what this run would write.  Python's own
unicodedata is not used: its Unicode version changes with Python's.

Per code point (the spec's definition, §6.2): the fixpoint of NFKD, full case
folding (CaseFolding.txt statuses C and F), NFKD again, with combining marks
(gc Mn, Me, or canonical combining class != 0), format characters (gc Cf) and
U+0640 ARABIC TATWEEL dropped; then each resulting character's class: WORD,
SOLO (a token on its own), SEPARATOR (numbers too) or DROP.  Hangul syllables are decomposed
by the implementations (the algorithm of Unicode §3.12), not by the tables.
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
C_HEADER = ROOT / "pg_ext/src/core/unicode_tables.h"
PY_MODULE = ROOT / "pysimhash_sql/unicode_tables.py"
COMMAND = "python3 scripts/generate-unicode-tables.py"

MAX_CODE_POINT = 0x10FFFF
# Entry kinds (stage-2 values below MAPPED; a mapping's index is value - MAPPED).
WORD, SOLO, SEPARATOR, DROP = 0, 1, 2, 3
MAPPED = 4
KIND_NAMES = ["WORD", "SOLO", "SEPARATOR", "DROP"]
# Scripts written without spaces between words: each letter is a token.
SOLO_SCRIPTS = {"Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar", "Bopomofo"}
TATWEEL = 0x0640
HANGUL_FIRST, HANGUL_COUNT = 0xAC00, 11172
# Code points per stage-2 block: the size that makes the two stages smallest.
BLOCK_SHIFT = 7


def ucd_version(path: Path) -> str:
    """The version in a UCD file's first line, '# Name-15.0.0.txt'."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = re.match(r"#\s*\w+-(\d+\.\d+\.\d+)\.txt", first)
    if not match:
        sys.exit(f"{path}: no version in its first line ({first!r})")
    return match.group(1)


def data_lines(path: Path):
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            yield [field.strip() for field in line.split(";")]


def code_range(field: str) -> range:
    first, _, last = field.partition("..")
    return range(int(first, 16), int(last or first, 16) + 1)


def read_ucd(ucd: Path):
    category = ["Cn"] * (MAX_CODE_POINT + 1)
    combining = [0] * (MAX_CODE_POINT + 1)
    decomposition: dict[int, list[int]] = {}
    range_start = None
    for fields in data_lines(ucd / "UnicodeData.txt"):
        cp, name, gc, ccc, decomp = int(fields[0], 16), fields[1], fields[2], int(fields[3]), fields[5]
        if name.endswith(", First>"):
            range_start = cp
            continue
        for c in range(range_start if name.endswith(", Last>") else cp, cp + 1):
            category[c] = gc
            combining[c] = ccc
        range_start = None
        if decomp:
            decomposition[cp] = [int(x, 16) for x in decomp.split() if not x.startswith("<")]
    folding = {}
    for fields in data_lines(ucd / "CaseFolding.txt"):
        if fields[1] in ("C", "F"):
            folding[int(fields[0], 16)] = [int(x, 16) for x in fields[2].split()]
    script = {}
    for fields in data_lines(ucd / "Scripts.txt"):
        for c in code_range(fields[0]):
            script[c] = fields[1]
    return category, combining, decomposition, folding, script


def build(ucd: Path):
    category, combining, decomposition, folding, script = read_ucd(ucd)

    def kind(c: int) -> int:
        gc = category[c]
        if gc in ("Mn", "Me", "Cf") or combining[c] != 0 or c == TATWEEL:
            return DROP
        # Numbers (N*) separate: dates, times and counts change between crawls.
        if gc[0] == "L" or gc in ("Mc", "Cn"):
            return SOLO if script.get(c) in SOLO_SCRIPTS else WORD
        return SEPARATOR

    def nfkd(c: int) -> list[int]:
        # No canonical reordering: every character it would move is dropped.
        if HANGUL_FIRST <= c < HANGUL_FIRST + HANGUL_COUNT:
            s = c - HANGUL_FIRST
            jamo = [0x1100 + s // 588, 0x1161 + s % 588 // 28]
            return jamo + ([0x11A7 + s % 28] if s % 28 else [])
        if c in decomposition:
            return [d for part in decomposition[c] for d in nfkd(part)]
        return [c]

    def step(seq: list[int]) -> list[int]:
        seq = [d for c in seq for d in nfkd(c)]
        seq = [f for c in seq for f in folding.get(c, [c])]
        seq = [d for c in seq for d in nfkd(c)]
        return [c for c in seq if kind(c) != DROP]

    values = [0] * (MAX_CODE_POINT + 1)
    mappings: list[tuple[int, ...]] = []
    mapping_index: dict[tuple[int, ...], int] = {}
    for c in range(MAX_CODE_POINT + 1):
        if 0xD800 <= c <= 0xDFFF or HANGUL_FIRST <= c < HANGUL_FIRST + HANGUL_COUNT:
            values[c] = SEPARATOR if c < HANGUL_FIRST else WORD  # never looked up
            continue
        seq = [c]
        while (following := step(seq)) != seq:
            seq = following
        if seq == [c]:
            values[c] = kind(c)
        elif not seq:
            values[c] = DROP
        else:
            key = tuple(seq)
            if key not in mapping_index:
                mapping_index[key] = len(mappings)
                mappings.append(key)
            values[c] = MAPPED + mapping_index[key]
    # Every character a mapping produces maps to itself: one lookup suffices.
    for seq in mappings:
        for c in seq:
            assert values[c] in (WORD, SOLO, SEPARATOR), (hex(c), values[c])
    assert MAPPED + len(mappings) < 1 << 16
    # Two stages: stage1[c >> BLOCK_SHIFT] is a block, stage2[block][c & mask] the value.
    size = 1 << BLOCK_SHIFT
    blocks: dict[tuple[int, ...], int] = {}
    stage1, stage2 = [], []
    for start in range(0, MAX_CODE_POINT + 1, size):
        block = tuple(values[start : start + size])
        if block not in blocks:
            blocks[block] = len(blocks)
            stage2.extend(block)
        stage1.append(blocks[block])
    # The mapping pool: code point | kind << 24 per produced character.
    offsets, pool = [0], []
    for seq in mappings:
        pool.extend(c | values[c] << 24 for c in seq)
        offsets.append(len(pool))
    max_mapping = max(map(len, mappings))
    # The C and Python types of the tables below.
    assert len(blocks) <= 1 << 8 and len(pool) < 1 << 16
    return stage1, stage2, offsets, pool, max_mapping


def c_array(ctype: str, name: str, values: list[int]) -> str:
    lines, line = [], ""
    for v in values:
        item = f"{v},"
        if len(line) + len(item) > 96:
            lines.append(line)
            line = ""
        line += item
    lines.append(line)
    body = "\n".join("\t" + line for line in lines)
    return f"static const {ctype} {name}[{len(values)}] = {{\n{body}\n}};\n"


def c_header(version: str, stage1, stage2, offsets, pool, max_mapping) -> str:
    kinds = "".join(f"#define UNICODE_{name} {i}\n" for i, name in enumerate(KIND_NAMES))
    return f"""/*
 * unicode_tables.h — GENERATED by `{COMMAND}` from the Unicode {version}
 * Character Database (UnicodeData.txt, CaseFolding.txt, Scripts.txt); do not
 * edit.  The normalisation of the text fingerprint version 2, one entry per
 * code point (docs/fingerprint-spec.md §6.2); pysimhash_sql/unicode_tables.py
 * holds the same tables.
 *
 * value = unicode_stage2[(unicode_stage1[c >> UNICODE_BLOCK_SHIFT] << UNICODE_BLOCK_SHIFT)
 *                        | (c & UNICODE_BLOCK_MASK)]
 * A value below UNICODE_MAPPED is the kind of c, which stands for itself; else
 * c becomes the characters unicode_pool[unicode_mapping_offsets[m]] up to
 * unicode_pool[unicode_mapping_offsets[m + 1]] (m = value - UNICODE_MAPPED),
 * each (code point | kind << 24).  Hangul syllables are decomposed in code.
 */
#ifndef SIMHASH_UNICODE_TABLES_H
#define SIMHASH_UNICODE_TABLES_H

#define UNICODE_TABLES_VERSION "{version}"
#define UNICODE_BLOCK_SHIFT {BLOCK_SHIFT}
#define UNICODE_BLOCK_MASK {(1 << BLOCK_SHIFT) - 1}
{kinds}#define UNICODE_MAPPED {MAPPED}
/* The most characters one code point becomes. */
#define UNICODE_MAX_MAPPING {max_mapping}

{c_array("uint8_t", "unicode_stage1", stage1)}
{c_array("uint16_t", "unicode_stage2", stage2)}
{c_array("uint16_t", "unicode_mapping_offsets", offsets)}
{c_array("uint32_t", "unicode_pool", pool)}
#endif							/* SIMHASH_UNICODE_TABLES_H */
"""


def py_blob(name: str, typecode: str, values: list[int]) -> str:
    data = array(typecode, values)
    if sys.byteorder != "little":
        data.byteswap()
    text = base64.b64encode(data.tobytes()).decode("ascii")
    lines = "\n".join(f'    "{text[i : i + 96]}"' for i in range(0, len(text), 96))
    return f'{name} = _array("{typecode}", (\n{lines}\n))\n'


def py_module(version: str, stage1, stage2, offsets, pool, max_mapping) -> str:
    kinds = "".join(f"{name} = {i}\n" for i, name in enumerate(KIND_NAMES))
    return f'''"""GENERATED by `{COMMAND}` from the Unicode {version} Character
Database (UnicodeData.txt, CaseFolding.txt, Scripts.txt); do not edit.

The normalisation of the text fingerprint version 2, one entry per code point
(docs/fingerprint-spec.md §6.2), as numpy arrays; pg_ext/src/core/
unicode_tables.h holds the same tables (its comment explains them).
"""

import base64 as _base64

import numpy as _np


def _array(typecode, chunks):
    dtype = {{"B": "u1", "H": "<u2", "I": "<u4"}}[typecode]
    return _np.frombuffer(_base64.b64decode("".join(chunks)), dtype=dtype)


UNICODE_VERSION = "{version}"
BLOCK_SHIFT = {BLOCK_SHIFT}
BLOCK_MASK = {(1 << BLOCK_SHIFT) - 1}
{kinds}MAPPED = {MAPPED}
MAX_MAPPING = {max_mapping}

{py_blob("STAGE1", "B", stage1)}
{py_blob("STAGE2", "H", stage2)}
{py_blob("MAPPING_OFFSETS", "H", offsets)}
{py_blob("POOL", "I", pool)}'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ucd", nargs="?", default="/usr/share/unicode", type=Path)
    parser.add_argument("--check", action="store_true", help="compare with the checked-in files, write nothing")
    args = parser.parse_args()
    names = ("UnicodeData.txt", "CaseFolding.txt", "Scripts.txt")
    versions = {ucd_version(args.ucd / n) for n in names[1:]}
    if len(versions) != 1:
        sys.exit(f"{args.ucd}: files of different Unicode versions: {sorted(versions)}")
    version = versions.pop()
    tables = build(args.ucd)
    outputs = {C_HEADER: c_header(version, *tables), PY_MODULE: py_module(version, *tables)}
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from what {COMMAND} {args.ucd} writes", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)} ({len(text.encode())} bytes, Unicode {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
