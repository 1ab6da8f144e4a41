"""fingerprint: documents in, (id, fingerprint) out, computed in Python by
pysimhash_sql.hashing, which is bit for bit SQL's simhash_v2(text) (the
default, text spec version 2) or simhash(text) (--spec-version 1).  Web pages
(HTML and WARC files) are fingerprinted by their main-content text, and their
URL and fetch date are two more columns.  ``fingerprinter`` is the one place
the commands that fingerprint text (fingerprint, ingest, report) turn
--spec-version and --shingle-size into a function."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from .. import hashing
from ..text_spec import TEXT_SPEC_VERSION_LATEST
from .documents import Reading, has_pages, read_documents
from .errors import UserError
from .output import open_output, progress, write_records

DEFAULT_SHINGLE_SIZE = 3  # version 1's, as simhash(text)


def fingerprinter(args, version: int | None = None) -> Callable[[str], int]:
    """The text fingerprint of ``version`` (default: --spec-version, else the
    latest), with --shingle-size for version 1; UserError for a shingle size
    with version 2, which has none."""
    version = version or args.spec_version or TEXT_SPEC_VERSION_LATEST
    if version == 1:
        size = DEFAULT_SHINGLE_SIZE if args.shingle_size is None else args.shingle_size
        if size < 1:
            raise UserError(f"--shingle-size must be at least 1, got {size}")
        return partial(hashing.simhash, shingle_size=size)
    if args.shingle_size is not None:
        raise UserError(f"--shingle-size is a parameter of text spec version 1, not of version {version} "
                        "(add --spec-version 1 to use it)")
    return partial(hashing.fingerprint, version=version)


def fingerprint_command(args) -> None:
    fingerprint = fingerprinter(args)
    documents, total = read_documents(args.sources, args.id_field, args.text_field, Reading(args.hidden, args.encoding))
    fields = ["id", "fingerprint", "url", "fetched_at"] if has_pages(args.sources, args.hidden) else ["id", "fingerprint"]
    rows = ((doc.name, fingerprint(doc.text), doc.url, doc.fetched_at)[: len(fields)]
            for doc in progress(documents, "doc", total))
    with open_output(args.output) as out:
        write_records(out, fields, rows, args.format)
