"""fingerprint: documents in, (id, fingerprint) out, computed in Python by
pysimhash_sql.hashing, which is bit for bit SQL's simhash_v3(text) (the
default, text spec version 3: TEXT_SPEC_VERSION_LATEST), simhash_v2(text)
(--spec-version 2) or simhash(text) (--spec-version 1).  Web pages
(HTML and WARC files) are fingerprinted by their main-content text, and their
URL and fetch date are two more columns.  ``text_spec_of`` is the one place
the commands that fingerprint text (fingerprint, ingest, report, dedupe) turn
--spec-version and --shingle-size into a spec, ``jobs_of`` --jobs into a
number of cores; ``fingerprinted`` fingerprints a stream of documents on them
while it is read, ``fingerprinter`` one text at a time."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import islice

from .. import hashing
from ..text_spec import TEXT_SPEC_VERSION_LATEST
from .documents import Document, Reading, has_pages, read_documents
from .errors import UserError
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


# Documents handed to a core at a time by fingerprinted(): enough that handing
# them over costs little beside fingerprinting them, few enough that every core
# gets some of a small input.
BATCH_DOCUMENTS = 32


def fingerprinted(args, documents: Iterable[Document], version: int | None = None) -> Iterator[tuple[Document, int]]:
    """Each document with its fingerprint (text_spec_of(args, version)), in
    order, computed on --jobs cores (default: every one) while the next
    documents are read.  A mistake in the options is a UserError at once."""
    version, size = text_spec_of(args, version)
    return _fingerprinted(iter(documents), version, size, jobs_of(args))


def _fingerprinted(docs: Iterator[Document], version: int, size: int | None,
                   jobs: int | None) -> Iterator[tuple[Document, int]]:
    batches = iter(lambda: list(islice(docs, BATCH_DOCUMENTS)), [])
    pending: deque[list[Document]] = deque()

    def texts() -> Iterator[list[str]]:
        for batch in batches:
            pending.append(batch)
            yield [doc.text for doc in batch]

    for fps in hashing.fingerprint_batches(texts(), version=version, shingle_size=size, jobs=jobs):
        yield from zip(pending.popleft(), fps)


def fingerprint_command(args) -> None:
    documents, total = read_documents(args.sources, args.id_field, args.text_field, Reading(args.hidden, args.encoding))
    fields = ["id", "fingerprint", "url", "fetched_at"] if has_pages(args.sources, args.hidden) else ["id", "fingerprint"]
    rows = ((doc.name, fp, doc.url, doc.fetched_at)[: len(fields)]
            for doc, fp in fingerprinted(args, progress(documents, "doc", total)))
    with open_output(args.output) as out:
        write_records(out, fields, rows, args.format)
