"""fingerprint: documents in, (id, fingerprint) out, computed in Python by
pysimhash_sql.hashing.simhash, which is bit for bit SQL's simhash(text).  Web
pages (HTML and WARC files) are fingerprinted by their main-content text, and
their URL and fetch date are two more columns."""

from __future__ import annotations

from .. import hashing
from .documents import Reading, has_pages, read_documents
from .errors import UserError
from .output import open_output, progress, write_records


def fingerprint_command(args) -> None:
    if args.shingle_size < 1:
        raise UserError(f"--shingle-size must be at least 1, got {args.shingle_size}")
    documents, total = read_documents(args.sources, args.id_field, args.text_field, Reading(args.hidden, args.encoding))
    fields = ["id", "fingerprint", "url", "fetched_at"] if has_pages(args.sources, args.hidden) else ["id", "fingerprint"]
    rows = ((doc.name, hashing.simhash(doc.text, args.shingle_size), doc.url, doc.fetched_at)[: len(fields)]
            for doc in progress(documents, "doc", total))
    with open_output(args.output) as out:
        write_records(out, fields, rows, args.format)
