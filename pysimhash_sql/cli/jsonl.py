"""JSON Lines read in blocks, each parsed and fingerprinted on a core of its own.

A JSON Lines stream is read in blocks of about BLOCK_BYTES cut at line ends
(a longer line makes a longer block), and each block's lines are parsed,
checked and their texts fingerprinted together by one worker
(hashing.in_order: threads over the compiled core, worker processes for the
pure-Python code), while the main thread reads the next blocks and writes
the results, in input order.  At most 2 × jobs blocks are in flight.  Only
the reading (and decompressing) stays in the main thread: parsing JSON
holds the GIL, but one thread parses while the others fingerprint.

The lines are the stream's own, split at b"\\n" only, as iterating over a
binary file splits them: line numbers are a text editor's, and a line is
parsed with its line end, as it was read one line at a time.  Each command
says how a line becomes a record (``parse``: its text and what the command
keeps of it, None for a line to pass over, NotText for a malformed one, a
UserError for one that stops the command); the first line a UserError
stops is the last one parsed in its block.

JSON is parsed by orjson where it is installed and gives the very values
the standard library's json gives (json_loads), else by json.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO

from .. import hashing
from .errors import NotText, UserError

# Bytes of JSON Lines a worker takes at a time: enough that handing a block over
# and back costs little beside parsing and fingerprinting it (a block's texts
# are one batch of the core), and small enough that glibc's malloc serves it
# from its heap rather than mapping a block afresh, its pages faulted in each
# time: read at 2.4 GB a CPU-second in blocks of 512 KiB, 0.5 in blocks of 2 MiB
# (measured when dedupe set malloc's mmap threshold to 1 MiB; it no longer sets
# it: corpus_dedupe.release_free_memory).
BLOCK_BYTES = 1 << 19

# glibc's malloc thresholds while the fingerprint command reads blocks: the
# blocks in flight (2 x jobs x BLOCK_BYTES) and their texts are freed and
# allocated again all the time, and by default glibc gives the top of its heap
# back once 1 MiB of it is free (its trim threshold, twice the largest block
# freed from a mapping), so their pages are faulted in afresh: 40,000-50,000
# minor faults over 400 MB.  Keeping up to KEEP_TRIM_THRESHOLD free (and mapping
# only blocks past KEEP_MMAP_THRESHOLD) took --jobs 2 from 252 to 260-264 MB/s on idle
# cores (CPU 2.97 to 2.85 s).  Not dedupe's: its peak memory is its figure.
KEEP_MMAP_THRESHOLD = 4 << 20
KEEP_TRIM_THRESHOLD = 32 << 20
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def keep_freed_block_memory() -> bool:
    """Sets glibc's thresholds above (for the process's life); False where
    there is no glibc (musl, macOS: their allocators as they are)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD))


# A line's record as a command reads it: (its text, what the command keeps of
# it) or None (a line to pass over); NotText(why) when it is malformed; a
# UserError (why, without the line's place) when it stops the command.
Parse = Callable[[bytes], "tuple[str, Any] | None"]


def blocks(stream: BinaryIO, size: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The stream in blocks of whole lines (the last one without its line end
    if the stream ends without one), about size bytes each or one longer
    line.  Their lines are numbered by whoever splits them (parsed_block's
    count), not here: the main thread only reads."""
    pending: list[bytes] = []
    while data := stream.read(size):
        cut = data.rfind(b"\n") + 1
        if not cut:  # within a line longer than size
            pending.append(data)
            continue
        # Joined from a view: the block is copied once, not sliced and then joined.
        yield b"".join([*pending, memoryview(data)[:cut]]) if pending else data[:cut]
        pending = [data[cut:]] if cut < len(data) else []
    if pending:
        yield b"".join(pending)


@dataclass(frozen=True)
class Block:
    """What a worker makes of a block: each good record's text, what the
    command keeps of it and its fingerprint, in line order; and each line
    that is not one: (its place in the block, from 0; why; whether it stops
    the command)."""

    texts: list[str]
    kept: list[Any]
    fingerprints: list[int]
    malformed: list[tuple[int, str, bool]]
    lines: int  # the lines read (all of the block's, unless one stopped the command)


def parsed_block(parse: Parse, version: int, shingle_size: int | None, block: bytes) -> Block:
    """A block's lines parsed and its texts fingerprinted (a worker's task)."""
    texts, kept, malformed = [], [], []
    index = -1
    for index, line in enumerate(io.BytesIO(block)):
        try:
            record = parse(line)
        except NotText as e:
            malformed.append((index, str(e), False))
            continue
        except UserError as e:
            malformed.append((index, str(e), True))
            break
        if record is not None:
            texts.append(record[0])
            kept.append(record[1])
    fps = hashing.fingerprint_values(texts, version=version, shingle_size=shingle_size)
    return Block(texts, kept, fps, malformed, index + 1)


def parsed_blocks(contents: Iterable[bytes], parse: Parse, version: int, shingle_size: int | None,
                  jobs: int | None) -> Iterator[tuple[int, Block]]:
    """Each block parsed and fingerprinted (parsed_block), in order, on ``jobs``
    cores (None: every one), with the number of its first line (from 1)."""
    number = 1
    for block in hashing.in_order(partial(parsed_block, parse, version, shingle_size), contents, jobs=jobs):
        yield number, block
        number += block.lines


# -- JSON: orjson where it gives json's values -------------------------------------------

# orjson gives json's values for every document it parses but one: an integer
# outside -2**63 .. 2**64-1 becomes a float.  A record whose value a caller
# reads is not one of these (or such a float) is read again by json.
ORJSON_SAFE = (str, int, bool, type(None))
ORJSON_SAFE_FLOAT = float(2**63)


# A lone surrogate (a JSON escape such as "\\ud800" without its pair) makes a str
# that is not Unicode text: no fingerprint or output can encode it.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_text(value: str, field: str, checked: bool = False) -> str:
    """value, a record's string field; NotText where it holds a lone surrogate
    (unless ``checked``: json_value found it Unicode text already)."""
    if not checked and not value.isascii() and (found := LONE_SURROGATE.search(value)):
        raise NotText(f"{field!r} holds a lone surrogate (\\u{ord(found.group()):04x}), not Unicode text")
    return value


def _orjson():
    """orjson's loads, unless it is missing or PYSIMHASH_SQL_STDLIB_JSON=1."""
    if os.environ.get("PYSIMHASH_SQL_STDLIB_JSON") == "1":
        return None
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


ORJSON_LOADS = _orjson()
# Which parser reads JSON Lines records: "orjson" or "json".
JSON_PARSER = "json" if ORJSON_LOADS is None else "orjson"


def json_loads(data: bytes | str, *read: str) -> Any:
    """json.loads(data) (json_value's value)."""
    return json_value(data, *read)[0]


def json_value(data: bytes | str, *read: str) -> tuple[Any, bool]:
    """json.loads(data), faster by orjson where installed: the same
    exception, or the same value but in the fields of an object the caller
    does not read (orjson refuses what json reads otherwise: NaN, Infinity,
    numbers out of a float's range, lone surrogates, a byte order mark, UTF-8
    that is not; json then reads it).  ``read``: the fields whose values the
    caller uses; one that orjson could have read differently (a float that
    was an integer past 64 bits, a list, an object) has json read the record
    again.  With it, whether every string in the value is Unicode text
    already (orjson read it: it refuses lone surrogates), which unicode_text
    then need not search."""
    if ORJSON_LOADS is not None:
        try:
            value = ORJSON_LOADS(data)
        except ValueError:  # orjson.JSONDecodeError: json says why, or reads it
            pass
        else:
            if not read or not isinstance(value, dict) or all(_orjson_safe(value.get(name)) for name in read):
                return value, True
    return json.loads(data), False


def _orjson_safe(value: Any) -> bool:
    return isinstance(value, ORJSON_SAFE) or (isinstance(value, float) and -ORJSON_SAFE_FLOAT < value < ORJSON_SAFE_FLOAT)
