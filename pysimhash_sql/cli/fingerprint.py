"""fingerprint: documents in, (id, fingerprint) out, computed in Python by
pysimhash_sql.hashing.simhash, which is bit for bit SQL's simhash(text)."""

from __future__ import annotations

from .. import hashing
from .documents import Reading, read_documents
from .errors import UserError
from .output import open_output, progress, write_records


def fingerprint_command(args) -> None:
    if args.shingle_size < 1:
        raise UserError(f"--shingle-size must be at least 1, got {args.shingle_size}")
    documents, total = read_documents(args.sources, args.id_field, args.text_field, Reading(args.hidden, args.encoding))
    rows = ((doc.name, hashing.simhash(doc.text, args.shingle_size)) for doc in progress(documents, "doc", total))
    with open_output(args.output) as out:
        write_records(out, ["id", "fingerprint"], rows, args.format)
