"""Documents to fingerprint or ingest, from files, directories and JSON Lines.

A source is a directory (every file below it, in sorted order, named by its
path relative to the directory), a JSON Lines file (*.jsonl, *.ndjson, or '-'
for stdin: one object per line with an id and a text field), an HTML or WARC
file (its pages' main-content text, with URL and fetch date: cli/pages.py), or
any other file (one document, named by the path as given).

Below a directory, hidden files and directories (names starting with ".",
such as .git) are left out unless asked for.  A file is read as UTF-8, else
in the encoding charset-normalizer detects (or the one given), after
decompressing it if it is compressed (.gz, .bz2, .xz, .zst); a file that is
not text (binary: it has NUL bytes, which PostgreSQL's text cannot hold; or
undecodable) or cannot be read, and a JSON Lines record that is malformed,
are skipped and counted (a summary line on stderr; --verbose: a line each),
and the rest is read (output.skipped).
JSON Lines are UTF-8, as JSON is.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .compression import CorruptData, read_bytes
from .errors import NotText, UserError
from .jsonl import json_value, unicode_text
from .output import skipped
from .pages import is_page_source, is_warc, page_documents

JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class Document:
    name: str
    text: str
    url: str | None = None  # web pages: the URL and the fetch date (ISO 8601) they came with
    fetched_at: str | None = None


def is_jsonl(source: str) -> bool:
    return source == "-" or source.endswith(JSONL_SUFFIXES)


@dataclass(frozen=True)
class Reading:
    """How files are found and read: hidden ones below a directory too?  In
    which encoding ("auto": UTF-8, else detected)?"""

    hidden: bool = False
    encoding: str = "auto"

    def __post_init__(self) -> None:
        if self.encoding != "auto":
            try:
                codecs.lookup(self.encoding)
            except LookupError:
                raise UserError(f"--encoding {self.encoding}: no such encoding") from None


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def directory_files(directory: Path, hidden: bool) -> list[Path]:
    """The files below a directory, without hidden ones (nor anything in a
    hidden directory) unless asked for; sorted."""
    found = []
    for root, dirs, files in os.walk(directory):
        if not hidden:
            dirs[:] = [d for d in dirs if not is_hidden(d)]
            files = [f for f in files if not is_hidden(f)]
        found += [p for p in map(Path(root).joinpath, files) if p.is_file()]
    return sorted(found)


def files_of(source: str, hidden: bool = False) -> list[tuple[str, Path]]:
    """(name, path) of the files a file or directory source holds."""
    path = Path(source)
    if path.is_dir():
        return [(p.relative_to(path).as_posix(), p) for p in directory_files(path, hidden)]
    if path.is_file():
        return [(source, path)]
    raise UserError(f"{source}: not a file or a directory")


def decode(data: bytes, encoding: str) -> str:
    """The text of a file's bytes: in ``encoding``, or ("auto") UTF-8 if they
    are UTF-8, else as charset-normalizer reads them (detected_text); NotText
    if it is binary or does not decode."""
    if b"\x00" in data:
        raise NotText("binary, not text (it has NUL bytes)", "binary")
    if encoding != "auto":
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as e:
            raise NotText(f"not {encoding} text (invalid byte at offset {e.start})", f"not {encoding}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return detected_text(data)


# Among the encodings charset-normalizer finds equally likely (short Western
# text often fits several single-byte ones alike), windows-1252: what text
# labelled Latin-1 is read as (the WHATWG Encoding Standard, browsers).
PREFERRED_AMONG_EQUALS = "cp1252"


def detected_text(data: bytes) -> str:
    from charset_normalizer import from_bytes  # only for files that are not UTF-8

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        raise NotText("not text in any encoding detected (give one with --encoding)")
    score = (best.percent_chaos, best.percent_coherence)
    tied = [m for m in matches if (m.percent_chaos, m.percent_coherence) == score]
    return str(next((m for m in tied if m.encoding == PREFERRED_AMONG_EQUALS), best))


def read_text(path: Path, encoding: str = "auto") -> str:
    """A file's text; a compressed one's (.gz, .bz2, .xz, .zst: compression.py) decompressed."""
    try:
        data = read_bytes(path)
    except OSError as e:
        raise NotText(f"cannot read: {e.strerror}", "unreadable") from None
    except CorruptData as e:
        raise NotText(str(e), "corrupt compressed data") from None
    return decode(data, encoding)


def text_documents(files: list[tuple[str, Path]], encoding: str) -> Iterator[Document]:
    """The documents of text files; those that cannot be read as text are
    reported and skipped."""
    for name, path in files:
        try:
            yield Document(name, read_text(path, encoding))
        except NotText as e:
            skipped(f"{path}: {e}; skipped", e.reason)


def jsonl_documents(source: str, id_field: str, text_field: str) -> Iterator[Document]:
    """The records of a JSON Lines file or stdin; malformed ones are reported and skipped."""
    stream = open_jsonl(source)
    if stream is None:
        return
    with stream:
        for number, line in enumerate(stream, 1):
            try:
                document = jsonl_record(line, id_field, text_field)
            except NotText as e:
                malformed_jsonl(source, number, str(e))
                continue
            if document is not None:
                yield document


def jsonl_where(source: str) -> str:
    return "stdin" if source == "-" else source


def open_jsonl(source: str) -> BinaryIO | None:
    """A JSON Lines file or stdin ('-') to read, or None (reported and skipped) if it cannot be."""
    try:
        return sys.stdin.buffer if source == "-" else open(source, "rb")
    except OSError as e:
        skipped(f"{jsonl_where(source)}: cannot read: {e.strerror}; skipped", "unreadable")
        return None


def malformed_jsonl(source: str, number: int, why: str) -> None:
    skipped(f"{jsonl_where(source)}, line {number}: {why}; skipped", "malformed JSON Lines records")


def jsonl_record(line: bytes, id_field: str, text_field: str) -> Document | None:
    """The document of one JSON Lines line (None for a blank one)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotText(f"not UTF-8 text (invalid byte at offset {e.start})") from None
    if not text or text.isspace():  # blank: not text.strip(), which would copy every line
        return None
    try:
        record, checked = json_value(text, id_field)
    except json.JSONDecodeError as e:
        raise NotText(f"not JSON ({e.msg})") from None
    if not isinstance(record, dict) or id_field not in record or not isinstance(record.get(text_field), str):
        raise NotText(f"need an object with {id_field!r} and a string {text_field!r}")
    name = record[id_field]
    return Document(unicode_text(name, id_field, checked) if isinstance(name, str) else str(name),
                    unicode_text(record[text_field], text_field, checked))


def jsonl_text_and_name(line: bytes, id_field: str, text_field: str) -> tuple[str, str] | None:
    """jsonl_record as cli/jsonl.py's workers parse a line: (text, name)."""
    document = jsonl_record(line, id_field, text_field)
    return None if document is None else (document.text, document.name)


def has_pages(sources: list[str], hidden: bool = False) -> bool:
    """Whether the sources include web pages (HTML or WARC files), whose URL and
    fetch date the output then carries."""
    return any(is_page_source(path) for source in sources if not is_jsonl(source) and Path(source).exists()
               for _, path in files_of(source, hidden))


def read_documents(sources: list[str], id_field: str, text_field: str,
                   reading: Reading = Reading()) -> tuple[Iterator[Document], int | None]:
    """The documents of the sources, in order, and how many there are (None
    when JSON Lines make that unknown until read).  Missing sources are
    reported before any document is read."""
    listed, total = list_sources(sources, reading)
    return source_documents(sources, listed, id_field, text_field, reading.encoding), total


def list_sources(sources: list[str], reading: Reading = Reading()) -> tuple[dict[str, list[tuple[str, Path]]], int | None]:
    """The files of each source that is not JSON Lines (files_of), and how
    many documents the sources hold (None when JSON Lines or WARC files make
    that unknown until read); UserError for a missing source."""
    for source in sources:
        if source != "-" and not Path(source).exists():
            raise UserError(f"{source}: no such file or directory")
    listed = {source: files_of(source, reading.hidden) for source in sources if not is_jsonl(source)}
    files = [path for found in listed.values() for _, path in found]
    total = None if any(map(is_jsonl, sources)) or any(map(is_warc, files)) else len(files)
    return listed, total


def source_documents(sources: list[str], listed: dict[str, list[tuple[str, Path]]], id_field: str, text_field: str,
                     encoding: str) -> Iterator[Document]:
    """The documents of the sources, in order (listed: list_sources's)."""
    for source in sources:
        if is_jsonl(source):
            yield from jsonl_documents(source, id_field, text_field)
        else:
            for name, path in listed[source]:
                if is_page_source(path):
                    yield from (Document(*page) for page in page_documents(name, path))
                else:
                    yield from text_documents([(name, path)], encoding)
