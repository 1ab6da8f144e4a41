"""Documents to fingerprint or ingest, from files, directories and JSON Lines.

A source is a directory (every file below it, in sorted order, named by its
path relative to the directory), a JSON Lines file (*.jsonl, *.ndjson, or '-'
for stdin: one object per line with an id and a text field), an HTML or WARC
file (its pages' main-content text, with URL and fetch date: cli/pages.py), or
any other file (one document, named by the path as given).  Text files must be
UTF-8, as they would be for PostgreSQL's text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
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


def files_of(source: str) -> list[tuple[str, Path]]:
    """(name, path) of the files a file or directory source holds."""
    path = Path(source)
    if path.is_dir():
        return [(p.relative_to(path).as_posix(), p) for p in sorted(path.rglob("*")) if p.is_file()]
    if path.is_file():
        return [(source, path)]
    raise UserError(f"{source}: not a file or a directory")


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (invalid byte at offset {e.start})") from None
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None


def jsonl_documents(source: str, id_field: str, text_field: str) -> Iterator[Document]:
    where = "stdin" if source == "-" else source
    try:
        yield from jsonl_records(source, where, id_field, text_field)
    except UnicodeDecodeError:
        raise UserError(f"{where}: not UTF-8 text") from None


def jsonl_records(source: str, where: str, id_field: str, text_field: str) -> Iterator[Document]:
    stream = sys.stdin if source == "-" else open(source, encoding="utf-8")
    with stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise UserError(f"{where}, line {number}: not JSON ({e.msg})") from None
            if not isinstance(record, dict) or id_field not in record or not isinstance(record.get(text_field), str):
                raise UserError(f"{where}, line {number}: need an object with {id_field!r} and a string {text_field!r}")
            yield Document(str(record[id_field]), record[text_field])


def has_pages(sources: list[str]) -> bool:
    """Whether the sources include web pages (HTML or WARC files), whose URL and
    fetch date the output then carries."""
    return any(is_page_source(path) for source in sources if not is_jsonl(source) and Path(source).exists()
               for _, path in files_of(source))


def read_documents(sources: list[str], id_field: str, text_field: str) -> tuple[Iterator[Document], int | None]:
    """The documents of the sources, in order, and how many there are (None
    when JSON Lines make that unknown until read).  Missing sources are
    reported before any document is read."""
    for source in sources:
        if source != "-" and not Path(source).exists():
            raise UserError(f"{source}: no such file or directory")
    listed = {source: files_of(source) for source in sources if not is_jsonl(source)}
    files = [path for found in listed.values() for _, path in found]
    total = None if any(map(is_jsonl, sources)) or any(map(is_warc, files)) else len(files)

    def documents() -> Iterator[Document]:
        for source in sources:
            if is_jsonl(source):
                yield from jsonl_documents(source, id_field, text_field)
            else:
                for name, path in listed[source]:
                    if is_page_source(path):
                        yield from (Document(*page) for page in page_documents(name, path))
                    else:
                        yield Document(name, read_text(path))

    return documents(), total
