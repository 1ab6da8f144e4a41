"""fingerprint: documents in, (id, fingerprint) out, computed in Python by
pysimhash_sql.hashing, which is bit for bit SQL's simhash_v3(text) (the
default, text spec version 3: TEXT_SPEC_VERSION_LATEST), simhash_v2(text)
(--spec-version 2) or simhash(text) (--spec-version 1).  Web pages
(HTML and WARC files) are fingerprinted by their main-content text, and their
URL and fetch date are two more columns.  ``text_spec_of`` is the one place
the commands that fingerprint text (fingerprint, ingest, report, dedupe) turn
--spec-version and --shingle-size into a spec, ``jobs_of`` --jobs into a
number of cores; ``fingerprinted_sources`` fingerprints the sources'
documents on them while they are read (JSON Lines parsed on those cores
too: cli/jsonl.py), ``fingerprinter`` one text at a time."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from itertools import groupby, islice

from .. import hashing
from ..text_spec import TEXT_SPEC_VERSION_LATEST
from .documents import (Document, Reading, has_pages, is_jsonl, jsonl_text_and_name, list_sources, malformed_jsonl,
                        open_jsonl, source_documents)
from .errors import UserError
from .jsonl import blocks, keep_freed_block_memory, parsed_blocks
from .output import open_output, progress, write_records

DEFAULT_SHINGLE_SIZE = 3  # version 1's, as simhash(text)


def text_spec_of(args, version: int | None = None) -> tuple[int, int | None]:
    """The text spec version (default: --spec-version, else the latest) and
    version 1's shingle size (--shingle-size, default 3; None for later
    versions); UserError for a shingle size with a version that has none."""
    version = version or args.spec_version or TEXT_SPEC_VERSION_LATEST
    if version == 1:
        size = DEFAULT_SHINGLE_SIZE if args.shingle_size is None else args.shingle_size
        if size < 1:
            raise UserError(f"--shingle-size must be at least 1, got {size}")
        return version, size
    if args.shingle_size is not None:
        raise UserError(f"--shingle-size is a parameter of text spec version 1, not of version {version} "
                        "(add --spec-version 1 to use it)")
    return version, None


def fingerprinter(args, version: int | None = None) -> Callable[[str], int]:
    """The text fingerprint of text_spec_of(args, version) as a function of one text."""
    version, size = text_spec_of(args, version)
    if version == 1:
        return partial(hashing.simhash, shingle_size=size)
    return partial(hashing.fingerprint, version=version)


def jobs_of(args) -> int | None:
    """--jobs: how many cores compute fingerprints here (None: every one)."""
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    return args.jobs


# Documents (not JSON Lines: those go in blocks, cli/jsonl.py) handed to a core
# at a time by documents_fingerprinted(): enough that handing them over costs
# little beside fingerprinting them, few enough that every core gets some of a
# small input.
BATCH_DOCUMENTS = 32


def documents_fingerprinted(docs: Iterator[Document], version: int, size: int | None,
                            jobs: int | None) -> Iterator[tuple[Document, int]]:
    """Each document with its fingerprint, in order, computed on ``jobs`` cores
    while the next documents are read."""
    batches = iter(lambda: list(islice(docs, BATCH_DOCUMENTS)), [])
    pending: deque[list[Document]] = deque()

    def texts() -> Iterator[list[str]]:
        for batch in batches:
            pending.append(batch)
            yield [doc.text for doc in batch]

    for fps in hashing.fingerprint_batches(texts(), version=version, shingle_size=size, jobs=jobs):
        yield from zip(pending.popleft(), fps)


def fingerprinted_sources(args, version: int | None = None) -> tuple[Iterator[tuple[Document, int]], int | None]:
    """The documents of args.sources, each with its fingerprint
    (text_spec_of(args, version)), in order, computed on --jobs cores while
    the next ones are read, and how many there are (None: unknown until
    read; read_documents's).  JSON Lines are parsed on those cores too, a
    block of lines at a time (cli/jsonl.py); the other sources are read here.
    Missing sources and mistakes in the options are a UserError at once."""
    version, size = text_spec_of(args, version)
    jobs = jobs_of(args)
    reading = Reading(args.hidden, args.encoding)
    listed, total = list_sources(args.sources, reading)

    def documents() -> Iterator[tuple[Document, int]]:
        # Sources a run of a kind at a time: a JSON Lines source's malformed
        # lines are reported before the next sources are read, as they are read.
        for lines, run in groupby(args.sources, is_jsonl):
            if lines:
                for source in run:
                    yield from jsonl_fingerprinted(source, args.id_field, args.text_field, version, size, jobs)
            else:
                read = source_documents(list(run), listed, args.id_field, args.text_field, reading.encoding)
                yield from documents_fingerprinted(read, version, size, jobs)

    return documents(), total


def jsonl_fingerprinted(source: str, id_field: str, text_field: str, version: int, size: int | None,
                        jobs: int | None) -> Iterator[tuple[Document, int]]:
    """The records of a JSON Lines file or stdin with their fingerprints, in
    order, parsed and fingerprinted in blocks on ``jobs`` cores (cli/jsonl.py);
    malformed ones reported and skipped, as jsonl_documents does."""
    stream = open_jsonl(source)
    if stream is None:
        return
    parse = partial(jsonl_text_and_name, id_field=id_field, text_field=text_field)
    keep_freed_block_memory()
    with stream:
        for first, block in parsed_blocks(blocks(stream), parse, version, size, jobs):
            for index, why, _ in block.malformed:
                malformed_jsonl(source, first + index, why)
            yield from zip(map(Document, block.kept, block.texts), block.fingerprints)


def fingerprint_command(args) -> None:
    documents, total = fingerprinted_sources(args)
    fields = ["id", "fingerprint", "url", "fetched_at"] if has_pages(args.sources, args.hidden) else ["id", "fingerprint"]
    rows = ((doc.name, fp, doc.url, doc.fetched_at)[: len(fields)] for doc, fp in progress(documents, "doc", total))
    with open_output(args.output) as out:
        write_records(out, fields, rows, args.format)
