"""pysimhash_sql.cli.jsonl: JSON Lines in blocks of whole lines, each parsed
and fingerprinted by a worker, in order: the very records, fingerprints and
malformed lines (with their numbers) that reading one line at a time gives,
whatever the block size (lines longer than a block, CRLF, no final line end,
blank lines, bytes that are not UTF-8, a malformed line at a block's edge)
and the number of cores; and json_loads, orjson where it gives json's values."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from functools import partial

import pytest

from pysimhash_sql import hashing
from pysimhash_sql.cli import dedupe
from pysimhash_sql.cli.documents import jsonl_text_and_name
from pysimhash_sql.cli.jsonl import (BLOCK_BYTES, JSON_PARSER, LONE_SURROGATE, blocks, json_loads, json_value,
                                     parsed_block, parsed_blocks)

pytestmark = pytest.mark.major_independent

ODD_LINES = [
    b'{"id": 1, "text": "the quick brown fox jumps over the lazy dog"}',
    b'{"id": 2, "text": "unterminated',
    b"",
    b'{"id": 3, "text": "a line ending in CR LF"}\r',
    b'{"id": 4}',
    '{"id": 5, "text": "caf\xe9 in Latin-1"}'.encode("latin-1"),
    b"   \t",
    b'["not", "an", "object"]',
    b'{"id": 6, "text": "' + b"a long line, longer than a block " * 40 + b'"}',
    b'{"id": 123456789012345678901234567890, "text": "an id beyond 64 bits"}',
    b'{"id": -9223372036854775809, "text": "below the signed range"}',
    b'{"id": 1e400, "text": "an id out of the float range"}',
    b'{"id": NaN, "text": "NaN, which json reads"}',
    b'{"id": [1, 2.5e20], "text": "a list id", "id": {"a": 7}}',
    b'\xef\xbb\xbf{"id": 7, "text": "a byte order mark"}',
    '{"id": 8, "text": "日本語のテキスト, \\u00e9 escaped"}'.encode(),
    b'{"id": 9, "text": "last line, no line end"}',
]


def odd_jsonl() -> bytes:
    return b"\n".join(ODD_LINES)


def line_by_line(data: bytes, parse) -> tuple[list, list, list]:
    """What reading one line at a time gives, each line a block of its own
    numbered as it comes: (texts, kept, malformed (number, why, stops))."""
    texts, kept, malformed = [], [], []
    for number, line in enumerate(io.BytesIO(data), 1):
        block = parsed_block(parse, 2, None, line)
        texts += block.texts
        kept += block.kept
        malformed += [(number, why, stops) for _, why, stops in block.malformed]
        if malformed and malformed[-1][2]:
            break
    return texts, kept, malformed


def by_blocks(data: bytes, parse, size: int, jobs: int, version: int = 2, shingle_size=None) -> tuple[list, ...]:
    texts, kept, fps, malformed = [], [], [], []
    for first, block in parsed_blocks(blocks(io.BytesIO(data), size), parse, version, shingle_size, jobs):
        texts += block.texts
        kept += block.kept
        fps += block.fingerprints
        malformed += [(first + index, why, stops) for index, why, stops in block.malformed]
        if any(stops for _, _, stops in block.malformed):
            break
    return texts, kept, fps, malformed


@pytest.mark.parametrize("data", [b"", b"\n", b"a", b"a\n", b"a\r\nbb\n\nccc", b"\n\n\nx\n", b"one long line " * 30 + b"\n"])
def test_blocks_are_whole_lines(data: bytes) -> None:
    for size in (1, 2, 3, 7, 64, 1 << 19):
        got = list(blocks(io.BytesIO(data), size))
        assert b"".join(got) == data and all(got)
        assert all(block.endswith(b"\n") for block in got[:-1])
        assert all(b"\n" not in block[:-1] for block in got if len(block) > size)  # longer: one line


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_blocks_parse_as_lines_do_at_every_block_size(jobs: int) -> None:
    """The fingerprint command's records (id and text) and dedupe's (text and
    keep value; --mark's refusal stops at its line), block by block as line
    by line, the malformed lines at their numbers whatever block edge they
    fall on."""
    data = odd_jsonl()
    parses = [partial(jsonl_text_and_name, id_field="id", text_field="text"),
              partial(dedupe.jsonl_record, text_field="text", keep="id", mark=False),
              partial(dedupe.jsonl_record, text_field="text", keep=None, mark=True)]
    marked = data.replace(b'{"id": 8,', b'{"kept": true, "id": 8,')
    for parse, source in zip(parses, [data, data, marked]):
        texts, kept, malformed = line_by_line(source, parse)
        assert texts and malformed
        expected = (texts, kept, [int(fp) for fp in hashing.fingerprints(texts, version=2)], malformed)
        for size in (1, 5, 40, 41, 97, 300, len(source), 1 << 19):
            got = by_blocks(source, parse, size, jobs)
            assert [got[0], got[1], [int(fp) for fp in got[2]], got[3]] == list(expected), (parse, size)
    assert [number for number, _, _ in line_by_line(data, parses[0])[2]] == [2, 5, 6, 8, 15]
    assert line_by_line(marked, parses[2])[2][-1][2]  # the refusal stops the reading


def test_version_one_and_its_shingle_size() -> None:
    data = b"".join(json.dumps({"id": i, "text": f"words of document {i} " * (i % 7)}).encode() + b"\n"
                    for i in range(60))
    parse = partial(jsonl_text_and_name, id_field="id", text_field="text")
    texts = line_by_line(data, parse)[0]
    for size in (100, 1 << 19):
        assert by_blocks(data, parse, size, 2, 1, 2)[2] == [hashing.simhash(t, 2) for t in texts]


ODD_JSON = [
    b'{"a": 1, "a": 2}', b'{"a": 123456789012345678901234567890}', b'{"a": -9223372036854775809}',
    b'{"a": 18446744073709551615}', b'{"a": 18446744073709551616}', b'{"a": 1e400}', b'{"a": -1e400}',
    b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}', b'{"a": 1.5e20}', b'{"a": 9.3e18}', b'{"a": -0}',
    b'{"a": -0.0}', b'{"a": 0.1}', b'{"a": 5e-324}', b'{"a": "\\ud800"}', b'{"a": "\\udc00x"}',
    b'{"a": "\\ud83d\\ude00"}', b'{"a": "\xed\xa0\x80"}', b'\xef\xbb\xbf{"a": 1}', b'{"a": "\xff"}',
    b'{"a": [1, 123456789012345678901234567890]}', b'{"a": {"b": 1e400}}', b'{"a": "x\\u0000y"}',
    b'{"a": 1}\r\n', b' {"a": true} ', b'{"a": null}', b'{"a": 1,}', b'{"a": 01}', b"[1, 2]", b"7", b'"s"',
    b"", b"{", b'{"a": "\x01"}', b'{"a": 1} x', '{"a": "é"}'.encode("utf-16"), b'{"a": "\t"}',
]


def outcome(load, data) -> tuple:
    try:
        value = load(data)
    except Exception as e:  # noqa: BLE001 - the class and message are the outcome compared
        return "error", type(e), str(e)
    return "value", repr(value), type(value)


@pytest.mark.parametrize("data", ODD_JSON)
def test_json_loads_gives_json_s_values_and_errors(data: bytes) -> None:
    """json_loads (orjson where installed) reads what json reads, as json
    reads it (duplicate keys, integers past 64 bits, NaN, lone surrogates,
    byte order marks, UTF-8 that is not), the fields a caller uses included,
    and refuses what json refuses with json's error."""
    inputs = [data]
    try:
        inputs.append(data.decode("utf-8"))  # the fingerprint command parses a decoded line
    except UnicodeDecodeError:
        pass
    for raw in inputs:
        assert outcome(lambda d: json_loads(d, "a"), raw) == outcome(json.loads, raw)
        if outcome(json.loads, raw)[2] is not dict:  # values of fields not named: not compared
            assert outcome(json_loads, raw) == outcome(json.loads, raw)


def strings_of(value) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings_of(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize("data", ODD_JSON)
def test_json_value_says_its_strings_are_unicode_text_only_when_they_are(data: bytes) -> None:
    """json_value's second part (unicode_text then skips its search) is true
    only for a value with no lone surrogate in any of its strings, and is
    true for what orjson reads (the tests' environment has it)."""
    for raw in [data, *([data.decode("utf-8")] if data.isascii() else [])]:
        try:
            value, checked = json_value(raw, "a")
        except ValueError:
            continue
        if checked:
            assert not any(LONE_SURROGATE.search(s) for s in strings_of(value))
    assert json_value(b'{"a": "\\ud83d\\ude00 \xc3\xa9"}') == ({"a": "\U0001f600 \xe9"}, True)
    assert json_value(b'{"a": "\\ud800"}') == ({"a": "\ud800"}, False)


def test_the_parser_in_use_and_the_standard_library_s_alone() -> None:
    """orjson is used where it is installed (the tests' environment has it),
    unless PYSIMHASH_SQL_STDLIB_JSON=1."""
    assert JSON_PARSER == "orjson"
    program = "from pysimhash_sql.cli.jsonl import JSON_PARSER; print(JSON_PARSER)"
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYSIMHASH_SQL_STDLIB_JSON": "1"})
    assert run.stdout == "json\n"


BLOCKS_CHURN = """
import resource, sys
from pysimhash_sql.cli import jsonl
kept = jsonl.keep_freed_block_memory() if sys.argv[1] == "keep" else None
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
held = [bytearray(jsonl.BLOCK_BYTES) for _ in range(8)]  # the heap grown once
del held
before = faults()
for _ in range(40):  # blocks in flight, freed, read again
    held = [bytearray(jsonl.BLOCK_BYTES) for _ in range(8)]
    del held
print(kept, faults() - before)
"""


def test_the_fingerprint_commands_blocks_reuse_freed_memory_on_glibc() -> None:
    """keep_freed_block_memory: blocks freed and allocated again come from the
    memory kept, not pages faulted in afresh each time (glibc; elsewhere it
    says False and changes nothing)."""
    def churn(mode: str) -> tuple[str, int]:
        out = subprocess.run([sys.executable, "-c", BLOCKS_CHURN, mode], check=True, capture_output=True,
                             text=True).stdout.split()
        return out[0], int(out[1])

    kept, faults_kept = churn("keep")
    if kept == "False":
        pytest.skip("no glibc malloc here")
    assert kept == "True"
    _, faults_default = churn("default")
    pages = 40 * 8 * -(-BLOCK_BYTES // os.sysconf("SC_PAGE_SIZE"))
    assert faults_default > pages // 4  # glibc's defaults: most blocks faulted in again
    assert faults_kept < pages // 20, (faults_kept, faults_default)
