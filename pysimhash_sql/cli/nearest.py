"""nearest: the n rows of a table most similar to one fingerprint, given as a
value (--fingerprint), as the fingerprint of a file's text (--file, in the
text spec version of the table's column, as ingest writes it), or as a row's
(--id, the row itself left out): id, distance (and --label's column),
closest first.

With the extension it is ``ORDER BY fingerprint <~> q LIMIT n``, which a
simhash_mih index answers with its ordering scan, exactly (docs/index.md,
"The n most similar rows"; GIN cannot order: a scan).  On the plain back end
(docs/managed.md), where no index orders, the rows within the default
layout's max_distance first (a lookup of the block index ingest makes), then,
when there are fewer than n of those, every row (Backend.nearest).
"""

from __future__ import annotations

from pathlib import Path

from .. import fingerprint as fingerprint_module
from .. import plain
from .database import column_spec, connect, database_backend, require_table, table_identifier
from .documents import Reading, read_documents
from .errors import UserError
from .fingerprint import fingerprinter
from .output import open_output, write_records

try:
    from psycopg import sql
except ImportError:  # connect() says so
    sql = None

NEAREST = """
SELECT {id} AS id, distance{label} FROM (
    SELECT {id}, {distance} AS distance{label} FROM {table}
    WHERE {condition}{other_rows}
    ORDER BY {distance} LIMIT {count}
) r ORDER BY distance, {id}
"""
# The inner ORDER BY is the index's ordering (one key, the distance); the
# outer one only orders the n rows found, ties by id.


def parsed_fingerprint(text: str) -> int:
    """--fingerprint: unsigned decimal, or 0x and hex digits (the server's text forms)."""
    try:
        return fingerprint_module.coerce_fingerprint(text)
    except ValueError as e:
        raise UserError(f"--fingerprint: {e}") from None


def file_fingerprint(conn, args) -> int:
    """The fingerprint of --file's text (its main content for a web page), in
    the text spec version of the table's fingerprint column."""
    version = column_spec(conn, args.table, args.fingerprint_column)
    if version is None:
        raise UserError(f"table {args.table} has no column {args.fingerprint_column}")
    if Path(args.query_file).is_dir():
        raise UserError(f"--file {args.query_file} is a directory: nearest takes one document")
    documents, _ = read_documents([args.query_file], args.id_field, args.text_field, Reading(encoding=args.encoding))
    texts = [doc.text for doc in documents]
    if len(texts) != 1:
        raise UserError(f"--file {args.query_file} holds {len(texts)} documents: nearest takes one")
    return fingerprinter(args, version)(texts[0])


def row_fingerprint(conn, args, backend) -> int:
    """The fingerprint of the row whose id is --id."""
    row = conn.execute(sql.SQL("SELECT {fp} FROM {table} WHERE {id} = %s").format(
        fp=sql.Identifier(args.fingerprint_column), table=table_identifier(args.table),
        id=sql.Identifier(args.id_column)), (args.query_id,)).fetchone()
    if row is None or row[0] is None:
        raise UserError(f"{args.table} has no row {args.id_column} = {args.query_id}"
                        + ("" if row is None else " with a fingerprint"))
    return backend.from_column(row[0])


def query_fingerprint(conn, args, backend) -> int:
    """The fingerprint asked about: --file's, --id's or --fingerprint."""
    if args.query_file is not None:
        return file_fingerprint(conn, args)
    if args.query_id is not None:
        return row_fingerprint(conn, args, backend)
    return parsed_fingerprint(args.query_fingerprint)


def nearest_sql(conn, args, backend, q: int, radius: int | None = None) -> sql.Composed:
    """The query of the --count rows nearest to q: (id, distance[, label]);
    with a radius, of those within it (the back end's radius query: on the
    plain back end, a lookup of the block index ingest makes)."""
    fp = sql.Identifier(args.fingerprint_column).as_string(conn)
    condition = sql.SQL("{} IS NOT NULL").format(sql.Identifier(args.fingerprint_column))
    if radius is not None:
        within = backend.within_sql(fp, backend.literal_sql(q), str(radius), radius, plain.PlainLayout)
        condition = sql.SQL("{} AND {}").format(condition, sql.SQL(within))
    label = sql.SQL(", {}").format(sql.Identifier(args.label)) if args.label else sql.SQL("")
    other_rows = (sql.SQL(" AND {} <> {}").format(sql.Identifier(args.id_column), sql.Literal(args.query_id))
                  if args.query_id is not None else sql.SQL(""))
    # q a literal (a checked integer): the planner sees a constant
    distance = sql.SQL(backend.distance_sql(fp, backend.literal_sql(q)))
    return sql.SQL(NEAREST).format(id=sql.Identifier(args.id_column), distance=distance, label=label,
                                   table=table_identifier(args.table), condition=condition, other_rows=other_rows,
                                   count=sql.Literal(args.count))


def nearest_command(args) -> None:
    if args.count < 1:
        raise UserError(f"--count must be at least 1, got {args.count}")
    with connect(args.dsn) as conn:
        require_table(conn, args.table)
        backend = database_backend(conn, args, args.fingerprint_column)
        q = query_fingerprint(conn, args, backend)
        rows = backend.nearest(lambda radius: conn.execute(nearest_sql(conn, args, backend, q, radius)).fetchall(),
                               args.count, plain.PlainLayout)
    with open_output(args.output) as out:
        write_records(out, ["id", "distance", *([args.label] if args.label else [])], rows, args.format)
