"""The HTML responses of WARC files (.warc, .warc.gz), read with FastWARC.

A record that cannot be parsed is reported and skipped: reading goes on at the
next place in the file where a record starts (a line beginning "WARC/1." in a
plain file, a gzip member in a compressed one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from fastwarc.warc import ArchiveIterator, WarcRecordType

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
GZIP_MAGIC = b"\x1f\x8b\x08"
WARC_MAGIC = b"WARC/1."
_SCAN_CHUNK = 1 << 20


@dataclass(frozen=True)
class Response:
    """An HTML response: its record id, URL, fetch date (WARC-Date in ISO 8601, None
    when it is not a date), HTTP charset and body (content and transfer encodings undone)."""

    record_id: str
    url: str | None
    date: str | None
    charset: str | None
    body: bytes


def html_responses(path: Path, report: Callable[[str], None]) -> Iterator[Response]:
    """The HTML responses in a WARC file, in order; report() hears of each place
    where unreadable data was skipped (and of a file that cannot be opened)."""
    try:
        stream = open(path, "rb")
    except OSError as e:
        report(f"cannot read {path}: {e.strerror}; skipped")
        return
    with stream:
        magic = GZIP_MAGIC if stream.read(2) == GZIP_MAGIC[:2] else WARC_MAGIC
        position = 0
        while position is not None:
            last = position  # the offset of the last record read (resync starts after it)
            stream.seek(position)
            try:
                for record in ArchiveIterator(stream, record_types=WarcRecordType.response, auto_decode="all"):
                    last = record.stream_pos
                    if (record.http_content_type or "").lower() in HTML_TYPES:
                        yield _response(record)
                return
            except Exception as e:  # whatever the parser raises about bad data
                position = _next_start(stream, last + 1, magic)
                resume = f"resuming at byte {position}" if position is not None else "nothing readable follows"
                report(f"{path}: unreadable WARC record after byte {last} ({e}); {resume}")


def _response(record) -> Response:
    date = record.record_date
    return Response(
        record_id=record.record_id or f"#{record.stream_pos}",
        url=record.headers.get("WARC-Target-URI"),
        date=date and date.isoformat(),
        charset=record.http_charset,
        body=record.reader.read(),
    )


def _next_start(stream: BinaryIO, start: int, magic: bytes) -> int | None:
    """The offset of the first place at or after start where a record may begin."""
    stream.seek(start)
    offset, tail = start, b""
    while chunk := stream.read(_SCAN_CHUNK):
        data = tail + chunk
        found = _find_start(data, magic, at_file_start=offset - len(tail) == 0)
        if found >= 0:
            return offset - len(tail) + found
        tail = data[-len(magic) - 1:]
        offset += len(chunk)
    return None


def _find_start(data: bytes, magic: bytes, at_file_start: bool) -> int:
    if magic == GZIP_MAGIC or (at_file_start and data.startswith(magic)):
        return data.find(magic)
    found = data.find(b"\n" + magic)
    return found + 1 if found >= 0 else -1
