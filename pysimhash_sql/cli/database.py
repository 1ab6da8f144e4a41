"""The database commands: ingest, dupes and clusters.

The connection string comes from --dsn, or else from the usual PG* environment
variables (libpq reads them).  Errors the server reports (a missing table or
column, a wrong type) become one-line messages.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from .. import plain, text_spec
from .._find_all import id_clusters, id_pairs
from ..backends import Backend, detect
from ..index_kinds import GIN, MIH
from ..progress import track_progress
from .documents import Document, Reading, has_pages, read_documents
from .errors import UserError
from .fingerprint import DEFAULT_SHINGLE_SIZE, fingerprinted_sources
from .output import open_output, progress, skipped, started, write_records

try:
    import psycopg
    from psycopg import sql
except ImportError:  # the database commands say so; the others work without it
    psycopg = None


LONGEST_PART = 240  # characters of a message, detail or hint (a rejected value, a whole document, is quoted)


def joined_lines(text: str) -> str:
    """A message of several lines (libpq's) on one line, its lines joined with "; "."""
    return "; ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def one_line(text: str) -> str:
    """A server's message on one line, cut short if long."""
    line = joined_lines(text)
    return line if len(line) <= LONGEST_PART else f"{line[:LONGEST_PART]}... ({len(line)} characters)"


@contextmanager
def database_errors() -> Iterator[None]:
    """Server errors as UserError: the server's message, detail and hint."""
    try:
        yield
    except psycopg.Error as e:
        diag = e.diag
        parts = [diag.message_primary or str(e)]
        parts += [text for text in (diag.message_detail, diag.message_hint) if text]
        raise UserError("; ".join(map(one_line, parts))) from None


@contextmanager
def connect(dsn: str | None) -> Iterator[psycopg.Connection]:
    if psycopg is None:
        raise UserError("the database commands need psycopg: pip install 'pysimhash-sql[psycopg]'")
    try:
        # UTF8 whatever the database's encoding: documents are Unicode, and the
        # server says which characters its encoding cannot hold (SQLSTATE 22P05)
        conn = psycopg.connect(dsn or "", autocommit=True, client_encoding="UTF8")
    except psycopg.Error as e:
        raise UserError(f"cannot connect to the database: {joined_lines(str(e))}") from None
    with conn, database_errors():
        yield conn


def table_identifier(name: str) -> sql.Identifier:
    """A table name as given, optionally schema-qualified, quoted as it is spelled."""
    return sql.Identifier(*name.split("."))


def require_table(conn: psycopg.Connection, table: str) -> None:
    found = conn.execute("SELECT to_regclass(%s)", (table_identifier(table).as_string(conn),)).fetchone()[0]
    if found is None:
        raise UserError(f"table {table} does not exist")


def has_function(conn: psycopg.Connection, signature: str) -> bool:
    return conn.execute("SELECT to_regprocedure(%s)", (signature,)).fetchone()[0] is not None


def require_function(conn: psycopg.Connection, signature: str, since: str = "1.0") -> None:
    if not has_function(conn, signature):
        raise UserError(
            f"this database has no {signature}: it comes with the simhash extension {since} "
            "(CREATE EXTENSION simhash, or ALTER EXTENSION simhash UPDATE)"
        )


# -- ingest ---------------------------------------------------------------------------

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS {table} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    body text NOT NULL,
    fingerprint {fingerprint_type} NOT NULL,
    url text,
    fetched_at timestamptz
)
"""
# The near-duplicate index (--index), made after the first load (building it
# over the loaded rows is much faster than growing it row by row) and kept up
# to date by later ingests; an index of that name already there is kept, of
# either kind.  GIN's with fastupdate off, as for every GIN index a crawler
# writes while it reads (docs/crawling.md).
CREATE_INDEX = {
    GIN: "CREATE INDEX IF NOT EXISTS {index} ON {table} USING gin (fingerprint) WITH (fastupdate = off)",
    MIH: "CREATE INDEX IF NOT EXISTS {index} ON {table} USING simhash_mih (fingerprint)",
}
# Web pages (HTML and WARC files) bring their URL and fetch date: a table made
# before those columns existed gets them.
ADD_PAGE_COLUMNS = "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS url text, ADD COLUMN IF NOT EXISTS fetched_at timestamptz"
# Each batch is copied into a staging table and moved in one transaction, so
# an interruption loses at most the batch in flight, and documents whose name
# is already in the table are skipped: running the same ingest again resumes.
STAGING = """CREATE TEMP TABLE simhash_ingest (name text, body text, fingerprint {fingerprint_type}, url text,
                                             fetched_at timestamptz) ON COMMIT DELETE ROWS"""

def database_backend(conn: psycopg.Connection, args, column: str | None, creating: bool = False) -> Backend:
    """--backend, or auto (backends.detect): the type of the table's
    fingerprint column if it has one (when ``creating``; column None: no
    table to look at), else the extension if the database has it (or, when
    ``creating``, can create it), else plain."""
    look = creating and column is not None
    return detect(lambda query, params: conn.execute(query, params).fetchone(), args.backend,
                  table_identifier(args.table).as_string(conn) if look else None, column if look else None,
                  creating=creating)


def column_spec(conn: psycopg.Connection, table: str, column: str) -> int | None:
    """The text spec version of a table's fingerprint column: its comment's
    (text_spec.comment), else version 1 (UNDECLARED_COLUMN_SPEC: made before
    versions were recorded); None if there is no such column."""
    row = conn.execute(text_spec.COLUMN_COMMENT_SQL, (table_identifier(table).as_string(conn), column)).fetchone()
    if row is None:
        return None
    recorded = text_spec.spec_of_comment(row[0])
    return text_spec.UNDECLARED_COLUMN_SPEC if recorded is None else recorded


def choose_spec_version(conn: psycopg.Connection, args, column: str) -> tuple[int, bool]:
    """The text spec version to fingerprint a table's new rows with, and
    whether the column is new: the column's own if it exists (UserError if
    --spec-version says another: never two versions in one column), else
    --spec-version, else the latest."""
    existing = column_spec(conn, args.table, column)
    if existing is None:
        return args.spec_version or text_spec.TEXT_SPEC_VERSION_LATEST, True
    if args.spec_version is not None and args.spec_version != existing:
        raise UserError(f"{args.table}.{column} holds text spec version {existing} fingerprints, not "
                        f"{args.spec_version}: versions are never mixed in one column; move the table with "
                        f"pysimhash-sql refingerprint --table {args.table} --column {column} --to "
                        f"{args.spec_version}, or leave --spec-version out")
    return existing, False


MOVE_BATCH = """
INSERT INTO {table} (name, body, fingerprint{page_columns})
SELECT s.name, s.body, {fingerprint}{page_values} FROM simhash_ingest s
WHERE NOT EXISTS (SELECT FROM {table} d WHERE d.name = s.name)
"""


T = TypeVar("T")


def batches(documents: Iterator[T], size: int) -> Iterator[list[T]]:
    while batch := list(islice(documents, size)):
        yield batch


@dataclass(frozen=True)
class Load:
    """How ingest loads a table's batches: the statement that moves a staged
    batch in, and the back end whose column holds the fingerprints computed
    here."""

    move: sql.Composable
    backend: Backend

    def staged(self, fingerprint: int | None) -> int | None:
        return None if fingerprint is None else self.backend.to_column(fingerprint)


# A batch of documents, each with its fingerprint computed here (None: by the server).
Batch = list[tuple[Document, int | None]]


def copy_batch(conn: psycopg.Connection, batch: Batch, load: Load) -> int:
    """Stages a batch with COPY and moves its new documents into the table, in
    one transaction; returns how many were new."""
    with conn.transaction():
        with conn.cursor().copy("COPY simhash_ingest FROM STDIN") as copy:
            for doc, fingerprint in batch:
                copy.write_row((doc.name, doc.text, load.staged(fingerprint), doc.url, doc.fetched_at))
        return conn.execute(load.move).rowcount


# A batch the server refuses for its data (SQLSTATE classes 22 and 23: text the
# database encoding cannot hold, a NUL, a name twice in one batch) is loaded
# again one document at a time: only the documents it refuses are left out.
def load_batch(conn: psycopg.Connection, batch: Batch, load: Load) -> int:
    """copy_batch, or the documents one by one if the server refuses the
    batch; a document it refuses is reported and skipped."""
    try:
        return copy_batch(conn, batch, load)
    except (psycopg.errors.DataError, psycopg.errors.IntegrityError) as e:
        if len(batch) > 1:
            return sum(load_batch(conn, [pair], load) for pair in batch)
        skipped(f"{batch[0][0].name}: {one_line(e.diag.message_primary or str(e))}; skipped", "refused by the server")
        return 0


def ingest_command(args) -> None:
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    documents, total = read_documents(args.sources, args.id_field, args.text_field, Reading(args.hidden, args.encoding))
    table = table_identifier(args.table)
    web = has_pages(args.sources, args.hidden)
    read = added = 0
    with connect(args.dsn) as conn:
        backend = database_backend(conn, args, "fingerprint", creating=True)
        version, new_column = choose_spec_version(conn, args, "fingerprint")
        function = text_spec.sql_function(version)
        for statement in backend.prepare_sql():
            conn.execute(statement)
        # here: asked, or the server has no such function (the plain back end, an extension
        # older than text_spec.SQL_FUNCTIONS_SINCE[version]): the same bits
        in_server = args.fingerprints == "server" and backend.fingerprints_in_server(
            lambda signature: has_function(conn, signature), function)
        if version == 1:
            server_side = sql.SQL("simhash(s.body, {})").format(args.shingle_size or DEFAULT_SHINGLE_SIZE)
        else:
            server_side = sql.SQL("{}(s.body)").format(sql.Identifier(function))
        move = sql.SQL(MOVE_BATCH).format(table=table, fingerprint=server_side if in_server else sql.SQL("s.fingerprint"),
                                          page_columns=sql.SQL(", url, fetched_at" if web else ""),
                                          page_values=sql.SQL(", s.url, s.fetched_at" if web else ""))
        load = Load(move, backend)
        fingerprint_type = sql.SQL(backend.column_type)
        conn.execute(sql.SQL(CREATE_TABLE).format(table=table, fingerprint_type=fingerprint_type))
        if new_column:
            conn.execute(text_spec.comment_on_column_sql(table.as_string(conn), "fingerprint", version))
        if web:
            conn.execute(sql.SQL(ADD_PAGE_COLUMNS).format(table=table))
        conn.execute(sql.SQL(STAGING).format(fingerprint_type=fingerprint_type))
        try:
            # here: JSON Lines parsed on the --jobs cores too (fingerprinted_sources)
            pairs = ((doc, None) for doc in documents) if in_server else fingerprinted_sources(args, version)[0]
            pairs = iter(progress(pairs, "doc", total))  # one iterator: batches() takes from it a batch at a time
            for batch in batches(pairs, args.batch_size):
                added += load_batch(conn, batch, load)
                read += len(batch)
        except KeyboardInterrupt:
            print(f"pysimhash-sql: {added} new documents were committed to {args.table} before the interruption; "
                  "run the same command again to load the rest", file=sys.stderr)
            raise
        index = sql.Identifier(f"{args.table.split('.')[-1]}_fingerprint_idx")
        # (the plain back end: the plain index of the default layout, whatever --index says)
        conn.execute(backend.index_sql(
            lambda: sql.SQL(CREATE_INDEX[args.index]).format(index=index, table=table).as_string(conn),
            plain.PlainLayout, index.as_string(conn), table.as_string(conn), "fingerprint", if_not_exists=True))
    if sys.stderr.isatty():
        print(f"{read} documents read, {added} new in {args.table}", file=sys.stderr)


# -- dupes and clusters ---------------------------------------------------------------

def rows_query(conn: psycopg.Connection, args) -> str:
    """The (id, fingerprint) query simhash_find_all and simhash_clusters read."""
    require_table(conn, args.table)
    return sql.SQL("SELECT {id}::bigint, {fp}::simhash64 FROM {table}").format(
        id=sql.Identifier(args.id_column), fp=sql.Identifier(args.fingerprint_column),
        table=table_identifier(args.table),
    ).as_string(conn)


def labelled(query: str, args, id_columns: list[str]) -> tuple[sql.Composable, list[str]]:
    """The query, joined to the table once per id column to add --label's value."""
    if not args.label:
        return sql.SQL(query), []
    joins = sql.SQL(" ").join(
        sql.SQL("JOIN {table} {alias} ON {alias}.{id} = r.{col}").format(
            table=table_identifier(args.table), alias=sql.Identifier(f"t{i}"),
            id=sql.Identifier(args.id_column), col=sql.Identifier(col),
        )
        for i, col in enumerate(id_columns)
    )
    labels = sql.SQL(", ").join(
        sql.SQL("{}.{}").format(sql.Identifier(f"t{i}"), sql.Identifier(args.label)) for i in range(len(id_columns))
    )
    names = [args.label] if len(id_columns) == 1 else [f"{args.label}{i + 1}" for i in range(len(id_columns))]
    return sql.SQL("SELECT r.*, {labels} FROM ({query}) r {joins}").format(
        labels=labels, query=sql.SQL(query), joins=joins), names


def stream_rows(conn: psycopg.Connection, query: sql.Composable, params: tuple, fields: list[str], args) -> None:
    """Runs the query with a server-side cursor and writes its rows as they
    come; a query that fails at once writes nothing, not even a header.  On a
    terminal, the server's progress is a bar while it searches."""
    tracking = track_progress(conn) if sys.stderr.isatty() else nullcontext()
    with conn.transaction():
        cursor = conn.cursor(name="simhash_results")
        with tracking:
            cursor.execute(query, params)
            rows = started(progress(cursor, "row"))
        with open_output(args.output) as out:
            write_records(out, fields, rows, args.format)


def check_near(args) -> None:
    """--distance and --blocks as the server needs them, said in the command's terms."""
    if args.distance < 0:
        raise UserError(f"--distance must be at least 0, got {args.distance}")
    if args.blocks is not None and args.blocks <= args.distance:
        raise UserError(f"--blocks must be more than --distance, got --blocks {args.blocks} --distance "
                        f"{args.distance} (without --blocks the server chooses)")


def report(args, function: str, arguments: list[str], id_columns: list[str], fields: list[str], *params) -> None:
    """Runs simhash_find_all or simhash_clusters over the table (on the plain
    back end, their numpy twin here) and writes the result ordered by
    fields, with --label's values for id_columns if asked.  arguments: the
    SQL types after the query's text; with --workers, one more."""
    check_near(args)
    if args.workers is not None and args.workers < 0:
        raise UserError(f"--workers must be 0 or more, got {args.workers}")
    types = ["text", *arguments] + (["integer"] if args.workers is not None else [])
    with connect(args.dsn) as conn:
        run = database_backend(conn, args, args.fingerprint_column).pick(server_report, plain_report)
        run(conn, args, function, types, id_columns, fields, *params)


def server_report(conn: psycopg.Connection, args, function: str, types: list[str], id_columns: list[str],
                  fields: list[str], *params) -> None:
    """report with the extension: the SQL function, its rows streamed to the output as they come."""
    rows = rows_query(conn, args)
    # 1.2 declares a workers parameter (with a default); 1.0 and 1.1 do not.
    without_workers = types[:len(types) - (args.workers is not None)]
    if args.workers is not None or not has_function(conn, f"{function}({','.join(types)})"):
        require_function(conn, f"{function}({','.join([*without_workers, 'integer'])})", since="1.2")
    call = f"{function}({', '.join(['%s'] * len(types))})"
    query, label_fields = labelled(f"SELECT {', '.join(fields)} FROM {call}", args, id_columns)
    ordered = sql.SQL("{} ORDER BY {}").format(query, sql.SQL(", ").join(map(sql.Identifier, fields)))
    workers = () if args.workers is None else (args.workers,)
    stream_rows(conn, ordered, (rows, args.distance, args.blocks, *params, *workers),
                [*fields, *label_fields], args)


def plain_report(conn: psycopg.Connection, args, function: str, types: list[str], id_columns: list[str],
                 fields: list[str], *params) -> None:
    """report's plain back end: the rows streamed here, the pairs found by the
    package's numpy find_all (docs/managed.md), ordered by fields, with
    --label's values."""
    require_table(conn, args.table)
    rows = sql.SQL("SELECT {id}::bigint, {fp}::bigint FROM {table} WHERE {fp} IS NOT NULL").format(
        id=sql.Identifier(args.id_column), fp=sql.Identifier(args.fingerprint_column),
        table=table_identifier(args.table)).as_string(conn)
    try:
        ids, fps = plain.stream_rows(plain.binary_execute(conn), rows)
    except ValueError as e:
        raise UserError(f"{args.table}.{args.id_column}: {e}") from None
    pairs = id_pairs(ids, fps, args.distance, args.blocks, args.workers, ids_checked=True)
    if function == "simhash_find_all":
        records = sorted(pairs)
    else:
        members = id_clusters(pairs, ids if params[0] else None)
        records = sorted((cluster, member) for member, cluster in members)
    label_fields = []
    if args.label:
        wanted = sorted({row[fields.index(c)] for row in records for c in id_columns})
        labels = dict(conn.execute(sql.SQL("SELECT {id}::bigint, {label} FROM {table} WHERE {id} = ANY(%s)").format(
            id=sql.Identifier(args.id_column), label=sql.Identifier(args.label), table=table_identifier(args.table)),
            (wanted,)).fetchall())
        label_fields = [args.label] if len(id_columns) == 1 else [f"{args.label}{i + 1}" for i in range(len(id_columns))]
        records = [(*row, *(labels[row[fields.index(c)]] for c in id_columns)) for row in records]
    with open_output(args.output) as out:
        write_records(out, [*fields, *label_fields], progress(records, "row"), args.format)


def dupes_command(args) -> None:
    report(args, "simhash_find_all", ["integer", "integer"], ["id1", "id2"], ["id1", "id2", "distance"])


def clusters_command(args) -> None:
    report(args, "simhash_clusters", ["integer", "integer", "boolean"], ["id"], ["cluster_id", "id"],
           args.singletons)
