"""The pysimhash-sql command line.

    pysimhash-sql find-all       near-duplicate pairs of hashes (as simhash-cpp's simhash-find-all)
    pysimhash-sql find-clusters  clusters of hashes (as simhash-cpp's simhash-find-clusters)
    pysimhash-sql fingerprint    documents -> (id, fingerprint), as SQL's simhash_v3(text)
    pysimhash-sql ingest         documents -> a table, fingerprinted in the server or locally
    pysimhash-sql dupes          near-duplicate pairs of a table's rows
    pysimhash-sql clusters       clusters of a table's rows
    pysimhash-sql nearest        the n rows of a table most similar to a fingerprint, a file or a row
    pysimhash-sql refingerprint  a table's fingerprints moved to another text spec version, online
    pysimhash-sql report         an HTML near-duplicate report of a table or of files, to choose a threshold
    pysimhash-sql dedupe         a corpus (JSON Lines, Parquet, files, WARC) without its near-duplicates

Mistakes (a bad argument or connection string, a missing table) are reported
in one line on stderr with exit status 1.  Inputs that cannot be read (a
binary file, a malformed JSON Lines record) are skipped, the rest processed,
and counted by reason in one summary line on stderr (--verbose: one line each
too): exit status 3.  Compressed files (.gz, .bz2, .xz, .zst) are read as
what they hold.  Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module

from ..index_kinds import DEFAULT_METHOD, INDEX_METHODS
from ..text_spec import SQL_FUNCTIONS, SQL_SPEC_VERSIONS, TEXT_SPEC_VERSION_LATEST
from .errors import UserError
from .output import FORMATS, skipped

CLUSTER_FIELD, KEPT_FIELD = "cluster_id", "kept"  # dedupe --mark's fields (cli/dedupe.py reads them here)
from .settings import Settings

EXIT_SKIPPED = 3
EXIT_INTERRUPTED = 130


class ShowVersion(argparse.Action):
    """--version: the package's version and hashing.IMPLEMENTATION (imported
    only then: the other commands import what they use when they run)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, help=None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from importlib.metadata import version  # here: every command's start is 50 ms quicker

        from ..hashing import IMPLEMENTATION

        print(f"{parser.prog} {version('pysimhash-sql')} (fingerprint implementation: {IMPLEMENTATION})")
        parser.exit()


def options(*adders) -> argparse.ArgumentParser:
    """A parent parser holding a group of options shared by several commands."""
    parser = argparse.ArgumentParser(add_help=False)
    for add in adders:
        add(parser)
    return parser


def hash_io(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--input", default="-", help="hashes, one decimal per line ('-': stdin, the default)")
    p.add_argument("-o", "--output", default="-", help="where to write ('-': stdout, the default)")


def near(p: argparse.ArgumentParser, blocks_default: int | None = 6) -> None:
    p.add_argument("-d", "--distance", type=int, default=3, help="most bits two near-duplicates differ in (default 3)")
    help_blocks = "blocks of the fingerprint's bits, more than --distance (default: %s)"
    p.add_argument("-b", "--blocks", type=int, default=blocks_default,
                   help=help_blocks % (blocks_default or "the server chooses"))


def documents_in(p: argparse.ArgumentParser, nargs: str = "+") -> None:
    p.add_argument("sources", nargs=nargs, metavar="SOURCE",
                   help=("(instead of --table) " if nargs == "*" else "") + "a directory, a file, JSON Lines (*.jsonl, *.ndjson, '-' for stdin), or web pages: "
                        "HTML (*.html, *.htm) and WARC (*.warc, *.warc.gz) files, as their main-content text "
                        "with URL and fetch date (needs the [html] extra)")
    p.add_argument("--id-field", default="id", help="JSON Lines: the field naming a document (default id)")
    p.add_argument("--text-field", default="text", help="JSON Lines: the field holding its text (default text)")
    p.add_argument("--spec-version", type=int, choices=SQL_SPEC_VERSIONS,
                   help="the text fingerprint spec version (docs/fingerprint-spec.md): "
                        + ", ".join(f"{v} as SQL's {SQL_FUNCTIONS[v]}(text)" for v in reversed(SQL_SPEC_VERSIONS))
                        + f"; default: a table's own (ingest), else {TEXT_SPEC_VERSION_LATEST}")
    p.add_argument("--shingle-size", type=int,
                   help="version 1 only: tokens per feature, as simhash(text, n) (default 3)")
    p.add_argument("--hidden", action="store_true",
                   help="also read hidden files and directories below a directory (names starting with '.', "
                        "such as .git), left out by default")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="report each input skipped in a line of its own (default: one summary line of counts "
                        "by reason)")
    p.add_argument("--encoding", default="auto",
                   help="the encoding of text files (default auto: UTF-8, else as detected); files that are not "
                        "text in it are reported and skipped. JSON Lines are always UTF-8")


def records_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", default="-", help="where to write ('-': stdout, the default)")
    p.add_argument("--format", choices=FORMATS, default="csv", help="CSV with a header, or JSON Lines (default csv)")


def parallel(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int,
                   help="parallel workers of the server besides its backend (default: the server's "
                        "max_parallel_maintenance_workers; needs the extension at 1.2); on the plain back end, "
                        "the threads of the search here (default: one per CPU)")


def fingerprinting(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int,
                   help="threads that compute fingerprints here, on as many cores (default: one per CPU)")


def database_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dsn", help="libpq connection string or URI (default: the PG* environment variables)")
    p.add_argument("--table", default="documents", help="table name, optionally schema-qualified (default documents)")
    p.add_argument("--backend", choices=("auto", "extension", "plain"), default="auto",
                   help="plain: core PostgreSQL without the extension (a managed service, docs/managed.md); "
                        "default auto: the table's fingerprint type, else the extension if the database has it "
                        "(or, for ingest, can create it), else plain")


def table_rows(p: argparse.ArgumentParser) -> None:
    p.add_argument("--id-column", default="id", help="bigint key column (default id)")
    p.add_argument("--fingerprint-column", default="fingerprint", help="simhash64 column (default fingerprint)")
    p.add_argument("--label", metavar="COLUMN", help="also print this column of each row (e.g. name)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pysimhash-sql",
        description="Near-duplicate detection with 64-bit simhash fingerprints, locally or in PostgreSQL.",
        epilog="Exit status: 0 done, 1 a mistake in the input, arguments or database (one line on stderr), "
        "2 bad usage, 3 done but some inputs were skipped (a summary line on stderr; --verbose: one line each), 130 interrupted. "
        "'pysimhash-sql COMMAND --help' describes a command.",
    )
    parser.add_argument("--version", action=ShowVersion, help="the version, and which implementation computes "
                        "fingerprints (hashing.IMPLEMENTATION: c, the compiled core, or python)")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    def command(name: str, run: str, help: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """A subcommand; run is "module:function" in this package, imported only when
        the command runs (numpy and psycopg take a while to import)."""
        sub = commands.add_parser(name, help=help, description=help, parents=list(parents))
        sub.set_defaults(run=run)
        return sub

    command("find-all", "hashes:find_all_command",
            "read hashes, write each pair within --distance bits as a JSON array [a, b], a < b",
            options(hash_io, near))
    command("find-clusters", "hashes:find_clusters_command",
            "read hashes, write each cluster of hashes linked by pairs within --distance bits as a JSON array",
            options(hash_io, near))
    command("fingerprint", "fingerprint:fingerprint_command",
            f"fingerprint documents as SQL's {SQL_FUNCTIONS[TEXT_SPEC_VERSION_LATEST]}(text) does (--spec-version: "
            "another version's function): id, "
            "fingerprint (unsigned decimal)",
            options(documents_in, records_out, fingerprinting))
    ingest = command("ingest", "database:ingest_command",
                     "load documents into a table (id, name, body, fingerprint, url, fetched_at), created if missing; "
                     "documents whose name is already there are skipped",
                     options(documents_in, database_options, fingerprinting))
    ingest.add_argument("--fingerprints", choices=("server", "local"), default="server",
                        help="compute fingerprints in the server (the version's SQL function, e.g. "
                             f"{SQL_FUNCTIONS[TEXT_SPEC_VERSION_LATEST]}(text)) or here (default server; here, the same "
                             "bits, when the server lacks the function)")
    ingest.add_argument("--batch-size", type=int, default=1000, help="documents per COPY and commit (default 1000)")
    ingest.add_argument("--index", choices=INDEX_METHODS, default=DEFAULT_METHOD,
                        help="the near-duplicate index made on the fingerprint column if it has none "
                             f"(docs/index.md, 'Which index'; default {DEFAULT_METHOD})")
    refingerprint = command(
        "refingerprint", "refingerprint:refingerprint_command",
        "move a table's fingerprint column to another text spec version online: a shadow column filled in "
        "primary-key batches while a trigger keeps new and updated rows in step, its indexes made concurrently, "
        "then one short swap; run it again to resume after an interruption (docs/cli.md)",
        options(database_options, fingerprinting))
    refingerprint.add_argument("--column", default="fingerprint", help="the fingerprint column (default fingerprint)")
    refingerprint.add_argument("--text-column", default="body", help="the column of each row's text (default body)")
    refingerprint.add_argument("--to", type=int, choices=SQL_SPEC_VERSIONS, default=TEXT_SPEC_VERSION_LATEST,
                               help=f"the text spec version to move to (default {TEXT_SPEC_VERSION_LATEST})")
    refingerprint.add_argument("--batch-size", type=int, default=1000, help="rows per batch and commit (default 1000)")
    kept = refingerprint.add_mutually_exclusive_group()
    kept.add_argument("--keep-old", action="store_true",
                      help="keep the old fingerprints after the swap in <column>_v<old version> (kept in step by a "
                           "trigger, no index), for a rollback with --to <old version>")
    kept.add_argument("--drop-kept", action="store_true",
                      help="drop the old fingerprints --keep-old kept, and their trigger (no move)")
    command("dupes", "database:dupes_command", "near-duplicate pairs of a table's rows: id1, id2, distance (simhash_find_all)",
            options(database_options, table_rows, lambda p: near(p, None), parallel, records_out))
    clusters = command("clusters", "database:clusters_command",
                       "clusters of a table's rows: cluster_id (its smallest id), id (simhash_clusters)",
                       options(database_options, table_rows, lambda p: near(p, None), parallel, records_out))
    clusters.add_argument("--singletons", action="store_true", help="also list rows with no near-duplicate")
    nearest = command("nearest", "nearest:nearest_command",
                      "the --count rows of a table most similar to one fingerprint: id, distance, closest first "
                      "(ORDER BY fingerprint <~> q LIMIT n: a simhash_mih index's ordering scan)",
                      options(database_options, table_rows, records_out))
    query = nearest.add_mutually_exclusive_group(required=True)
    query.add_argument("--fingerprint", dest="query_fingerprint", metavar="VALUE",
                       help="the fingerprint: unsigned decimal, or 0x and hex digits")
    query.add_argument("--file", dest="query_file", metavar="PATH",
                       help="the fingerprint of this file's text (of a web page, its main content), in the text "
                            "spec version of the table's column")
    query.add_argument("--id", dest="query_id", type=int, metavar="ID",
                       help="the fingerprint of the row with this id (the row itself left out)")
    nearest.add_argument("-n", "--count", type=int, default=10, help="how many rows (default 10)")
    nearest.add_argument("--encoding", default="auto",
                         help="--file's encoding (default auto: UTF-8, else as detected)")
    report = command("report", "report:report_command",
                     "write one self-contained HTML file showing how far documents are from their nearest "
                     "near-duplicate, sample pairs at each distance with their differences, the clusters at a "
                     "threshold and a suggested threshold (needs the [report] extra); from --table, or from files "
                     "loaded into a temporary table",
                     options(database_options, table_rows, lambda p: documents_in(p, "*")))
    report.add_argument("-o", "--output", default="near-duplicates.html",
                        help="the HTML file to write ('-': stdout; default near-duplicates.html)")
    report.add_argument("--text-column", help="the column of each row's text, for the pair diffs (default: body, "
                                              "when the table has one, as ingest makes it)")
    report.add_argument("--scope", metavar="COLUMN",
                        help="a column (e.g. domain): nearest neighbours are looked for within the same value, "
                             "and the largest values get a chart of their own")
    report.add_argument("-d", "--distance", type=int,
                        help="the threshold the clusters are shown at (default: the suggested one)")
    report.add_argument("--sample-size", type=int, default=2000,
                        help="rows whose nearest neighbour is looked for: every row of a table up to this many, "
                             "else a sample of this many (default 2000)")
    report.add_argument("--max-distance", type=int, default=16,
                        help="the farthest nearest neighbour looked for, in bits (default 16)")
    dedupe = command(
        "dedupe", "dedupe:dedupe_command",
        "write a corpus without its near-duplicates, in its format (JSON Lines, compressed like it; Parquet with "
        "its schema; files and web pages as JSON Lines): one document of each cluster within --distance bits "
        "kept, by --keep (docs/cli.md, 'dedupe')",
        options(documents_in, fingerprinting))
    dedupe.add_argument("-o", "--output", required=True,
                        help="the file to write (written under a temporary name beside it, renamed when complete); "
                             "JSON Lines are compressed as its suffix says (.gz, .bz2, .xz, .zst), else like the input")
    dedupe.add_argument("-d", "--distance", type=int, default=3,
                        help="most bits two near-duplicates differ in (default 3)")
    dedupe.add_argument("--keep", default="first", metavar="first|longest|FIELD",
                        help="which document of a cluster to keep: the first in input order (default), the "
                             "longest text, or the one with the highest value of FIELD (a date in ISO 8601, a score; "
                             "missing counts lowest); ties go to the first")
    dedupe.add_argument("--mark", action="store_true",
                        help=f"keep every document and add two fields: {CLUSTER_FIELD} (the position in the input of "
                             f"its cluster's first document, from 0) and {KEPT_FIELD} (true for the one kept)")
    dedupe.add_argument("--removed", metavar="FILE",
                        help="also write a JSON Lines record per removed document: its id, the id of the document "
                             "kept of its cluster (duplicate_of) and their distance in bits")
    dedupe.add_argument("--strict", action="store_true",
                        help="refuse a malformed record (exit status 1, nothing written) instead of skipping it")
    dedupe.add_argument("--dsn", help="find the clusters in this PostgreSQL database (simhash_clusters; a temporary "
                                      "table) instead of here; the same output")
    dedupe.add_argument("--backend", choices=("auto", "extension", "plain"), default="auto",
                        help="with --dsn: plain for a database without the extension (the clusters then found here)")
    return parser


def main(argv: list[str] | None = None) -> int:
    settings = Settings.parsed(build_parser().parse_args(argv))
    module, function = settings.run.split(":")
    skipped.verbose = settings.verbose
    try:
        getattr(import_module(f".{module}", __name__), function)(settings)
    except UserError as e:
        print(f"pysimhash-sql: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pysimhash-sql: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader stopped early (`| head`): nothing is wrong, and nothing more can be written.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if skipped.count:
        print(skipped.summary(), file=sys.stderr)
        return EXIT_SKIPPED
    return 0
