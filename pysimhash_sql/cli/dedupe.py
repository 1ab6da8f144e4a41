"""dedupe: a corpus in, the same corpus without its near-duplicates out.

The sources are of one kind: JSON Lines files (*.jsonl, *.ndjson, compressed
or not: .gz, .bz2, .xz, .zst), Parquet files (*.parquet, the [parquet]
extra), directories of either (their shards, in sorted order), or documents
as the other commands read them (text files, directories, HTML and WARC
files).  The output is in the input's format: JSON Lines lines as they were
read, compressed like the input (or as -o's suffix says); Parquet with the
input's schema, row-group size and compression; documents as JSON Lines of
id and text (and URL and fetch date of web pages).

The documents are read twice: once to fingerprint them (on every core:
corpus_dedupe.fingerprint_stream), once to write those kept; in between only
the fingerprints are held (corpus_dedupe.Collector), and the clusters are
found here (corpus_dedupe.find_clusters) or, with --dsn, by the database
(simhash_clusters; the plain back end: here, after the round trip), the same
clusters either way.  A malformed record is reported (file and line) and
skipped, or with --strict refused before anything is written; the output and
--removed are written under temporary names beside them and renamed when
complete, so an interrupted run leaves neither.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import compress
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .. import corpus_dedupe
from .._find_all import index_dtype, popcount
from ..corpus_dedupe import BATCH_DOCUMENTS, Clusters, Collector
from ..text_spec import TEXT_SPEC_VERSION_LATEST
from .compression import compressing, compression_of_file, compression_of_name, open_stream
from .documents import JSONL_SUFFIXES, Reading, directory_files, has_pages, read_documents
from . import CLUSTER_FIELD, KEPT_FIELD
from .errors import NotText, UserError
from .fingerprint import jobs_of
from .jsonl import blocks, json_loads, json_value, parsed_blocks, unicode_text
from .output import counted, progress, skipped

PARQUET_SUFFIXES = (".parquet",)
PARQUET_CODECS = {"uncompressed": "none", "lz4_raw": "lz4"}  # a file's codec as ParquetWriter names it
MALFORMED = "malformed records"


def kind_of_file(path: Path) -> str:
    """jsonl, parquet or documents, by the file's name (a compression suffix aside)."""
    name = path.name.lower()
    if compression_of_name(name):
        name = name[: name.rindex(".")]
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    return "parquet" if name.endswith(PARQUET_SUFFIXES) else "documents"


def corpus_files(sources: Iterable[str], hidden: bool) -> tuple[str, list[Path]]:
    """The kind of the sources and, for JSON Lines and Parquet, their files
    in order (a directory's in sorted order); UserError for mixed kinds."""
    kinds, files = set(), []
    for source in sources:
        if source == "-":
            raise UserError("dedupe reads its input twice: give files, not stdin ('-')")
        path = Path(source)
        if path.is_dir():
            found = directory_files(path, hidden)
            found_kinds = {kind_of_file(p) for p in found}
            kinds |= found_kinds if len(found_kinds) == 1 else {"documents"}
            files += found
        elif path.is_file():
            kinds.add(kind_of_file(path))
            files.append(path)
        else:
            raise UserError(f"{source}: no such file or directory")
    if len(kinds) > 1:
        raise UserError("the sources are of different kinds (" + ", ".join(sorted(kinds)) + "): dedupe writes "
                        "one corpus in one format; give JSON Lines, Parquet or documents alone")
    return kinds.pop() if kinds else "documents", files


@dataclass
class Malformed:
    """How a malformed record is dealt with: reported and skipped, or (--strict) refused."""

    strict: bool

    def __call__(self, where: str, why: str) -> None:
        if self.strict:
            raise UserError(f"{where}: {why} (--strict: nothing written)")
        skipped(f"{where}: {why}; skipped", MALFORMED)


@dataclass
class Corpus:
    """One kind of input, read twice: ``texts`` (first reading: each good
    record's text and keep value, malformed ones reported) and ``write``
    (second reading: the kept records, or all marked, into the output)."""

    args: Any
    files: list[Path]
    malformed: Malformed
    ids: dict[int, Any] = field(default_factory=dict)  # --removed: the ids of the documents it names

    def bytes_in(self) -> int:
        return sum(p.stat().st_size for p in self.files)

    def keep_field(self) -> str | None:
        return None if self.args.keep in corpus_dedupe.KEEP_RULES else self.args.keep

    def fingerprinted(self, version: int, jobs: int | None) -> Iterator[tuple[np.ndarray, list[str], list[Any]]]:
        """(fingerprints, texts, keep values) of the good records, a batch at a
        time, in order, on ``jobs`` cores (None: every one); malformed records
        reported (the first reading)."""
        return corpus_dedupe.fingerprint_stream(batched_texts(self.texts()), version=version, jobs=jobs)


# -- JSON Lines ---------------------------------------------------------------------


class JsonLines(Corpus):
    """JSON Lines: a record a line (jsonl_record), blank lines skipped; written
    back as the very line read (--mark: with two fields added at its end)."""

    def lines(self) -> Iterator[tuple[Path, int, bytes]]:
        for path in self.files:
            with reading(path):
                with open_stream(path) as stream:
                    for number, line in enumerate(stream, 1):
                        if line.strip():
                            yield path, number, line

    def parse(self) -> Callable[[bytes], tuple[str, Any] | None]:
        return partial(jsonl_record, text_field=self.args.text_field, keep=self.keep_field(), mark=self.args.mark)

    def fingerprinted(self, version: int, jobs: int | None) -> Iterator[tuple[np.ndarray, list[str], list[Any]]]:
        """texts, fingerprinted: the lines parsed on ``jobs`` cores too, a block
        at a time (cli/jsonl.py); a file's malformed lines reported before the
        next file is read."""
        self.bad = set()
        parse = self.parse()
        for path in self.files:
            for first, block in parsed_blocks(self.blocks(path), parse, version, None, jobs):
                for index, why, stops in block.malformed:
                    if stops:
                        raise UserError(f"{path}, line {first + index}: {why}")
                    self.reject(path, first + index, why)
                yield np.asarray(block.fingerprints, np.uint64), block.texts, block.kept

    @staticmethod
    def blocks(path: Path) -> Iterator[bytes]:
        """A file's lines in blocks (cli/jsonl.py's blocks), decompressed if it is compressed."""
        with reading(path):
            with open_stream(path) as stream:
                yield from blocks(stream)

    def reject(self, path: Path, number: int, why: str) -> None:
        self.bad.add((path, number))
        self.malformed(f"{path}, line {number}", why)

    def compression(self) -> str | None:
        return compression_of_name(self.args.output) or (compression_of_file(self.files[0]) if self.files else None)

    def write(self, raw: BinaryIO, clusters: Clusters, wanted: set[int]) -> None:
        """The second reading, a block of lines at a time (records found by
        their line: neither blank nor malformed; nothing parsed but the ids
        --removed names), the kept lines written a block at a time."""
        out = compressing(raw, self.compression())
        wanted_in_order = np.array(sorted(wanted), np.int64)
        i = 0
        for path, numbered in counted(self.good_lines(), "doc", lambda batch: len(batch[1]), len(clusters)):
            read = i + len(numbered)
            if numbered:
                unchanged(read - 1, clusters)  # the last record of the block
            for j in wanted_in_order[np.searchsorted(wanted_in_order, i):np.searchsorted(wanted_in_order, read)].tolist():
                number, line = numbered[j - i]
                self.ids[j] = json_loads(line, self.args.id_field).get(self.args.id_field, f"{path}:{number}")
            lines = [line for _, line in numbered]
            if self.args.mark:
                out.write(b"".join(map(marked, lines, clusters.labels[i:read].tolist(),
                                       clusters.keep_mask[i:read].tolist())))
            else:
                kept = list(compress(lines, clusters.keep_mask[i:read].tolist()))
                if kept:
                    out.write(b"\n".join(kept) + b"\n")
            i = read
        unchanged(i, clusters, done=True)
        out.close()

    def good_lines(self) -> Iterator[tuple[Path, list[tuple[int, bytes]]]]:
        """Each block's records (neither blank nor malformed) with their line
        numbers, without their line ends."""
        for path in self.files:
            bad = {number for where, number in self.bad if where == path}
            first = 1
            for block in self.blocks(path):
                lines = block.split(b"\n")
                yield path, [(number, line) for number, line in enumerate(lines, first)
                             if line.strip() and number not in bad]
                first += len(lines) - 1


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """A file read within the block: what cannot be read of it is a UserError."""
    try:
        yield
    except Exception as e:  # OSError, EOFError, LZMAError, ZstdError: unreadable or corrupt data
        raise UserError(f"{path}: cannot read: {e}") from None


def jsonl_record(line: bytes, text_field: str, keep: str | None, mark: bool) -> tuple[str, Any] | None:
    """A JSON Lines line's text and keep value (None for a blank line), as
    dedupe reads it: NotText for a malformed one, a UserError (why: the
    caller says where) for a record that already has --mark's fields."""
    if not line.strip():
        return None
    try:
        record, checked = json_value(line, *([keep] if keep else []))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise NotText(f"not JSON ({e.msg})" if isinstance(e, json.JSONDecodeError) else "not UTF-8 text") from None
    if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
        raise NotText(f"need an object with a string {text_field!r}")
    if mark and (CLUSTER_FIELD in record or KEPT_FIELD in record):
        raise UserError(f"already has a {CLUSTER_FIELD!r} or {KEPT_FIELD!r} field, which --mark adds")
    return unicode_text(record[text_field], text_field, checked), record.get(keep) if keep else None


def unchanged(read: int, clusters: Clusters, done: bool = False) -> None:
    """UserError unless the second reading matches the first so far (record
    ``read``, from 0) or (done) in all: the input changed in between."""
    if read > len(clusters) or (read == len(clusters) and not done) or (done and read < len(clusters)):
        raise UserError(f"the input changed while dedupe read it ({len(clusters)} documents the first time, "
                        f"{'more' if read >= len(clusters) else read} the second); nothing written")


def marked(line: bytes, cluster: int, kept: bool) -> bytes:
    """A JSON object's line with --mark's two fields added before its closing brace."""
    body = line.rstrip()
    return body[:-1] + b', "%s": %d, "%s": %s}\n' % (CLUSTER_FIELD.encode(), cluster, KEPT_FIELD.encode(),
                                                      b"true" if kept else b"false")


# -- Parquet ------------------------------------------------------------------------


def pyarrow_modules():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("Parquet needs pyarrow: pip install 'pysimhash-sql[parquet]'") from None
    return pa, pq


class Parquet(Corpus):
    """Parquet files, a row group at a time; a row whose text is null is
    malformed.  Written with the first file's schema (every file must have
    it), row-group size and compression; --mark adds two columns."""

    def open(self) -> Iterator[tuple[Path, Any]]:
        _, pq = pyarrow_modules()
        for path in self.files:
            try:
                yield path, pq.ParquetFile(path)
            except Exception as e:  # ArrowInvalid, OSError: not Parquet
                raise UserError(f"{path}: cannot read as Parquet: {e}") from None

    def schema(self) -> Any:
        schemas = [(path, f.schema_arrow) for path, f in self.open()]
        first = schemas[0][1] if schemas else None
        for path, schema in schemas:
            if not schema.equals(first):
                raise UserError(f"{path}: its schema is not {schemas[0][0]}'s; dedupe writes one Parquet file")
        for column in [self.args.text_field, self.keep_field()]:
            if column and first is not None and column not in first.names:
                raise UserError(f"{schemas[0][0]}: no column {column!r}")
        if self.args.mark and first is not None and {CLUSTER_FIELD, KEPT_FIELD} & set(first.names):
            raise UserError(f"{schemas[0][0]}: already has a {CLUSTER_FIELD!r} or {KEPT_FIELD!r} column, "
                            "which --mark adds")
        return first

    def texts(self) -> Iterator[tuple[str, Any]]:
        self.schema()
        columns = [self.args.text_field] + ([self.keep_field()] if self.keep_field() else [])
        for path, parquet in self.open():
            row = 0
            for group in range(parquet.num_row_groups):
                table = parquet.read_row_group(group, columns=columns)
                texts = table.column(0).to_pylist()
                values = table.column(1).to_pylist() if len(columns) > 1 else [None] * len(texts)
                for text, value in zip(texts, values):
                    if isinstance(text, str):
                        yield text, value
                    elif text is None:
                        self.malformed(f"{path}, row {row}", f"no text ({self.args.text_field!r} is null)")
                    else:
                        raise UserError(f"{path}: column {self.args.text_field!r} is not text")
                    row += 1

    def write(self, raw: BinaryIO, clusters: Clusters, wanted: set[int]) -> None:
        pa, pq = pyarrow_modules()
        schema = self.schema()
        files = list(self.open())
        meta = files[0][1].metadata if files else None
        group_rows = meta.row_group(0).num_rows if meta and meta.num_row_groups else 1 << 20
        codec = meta.row_group(0).column(0).compression.lower() if meta and meta.num_row_groups else "snappy"
        codec = PARQUET_CODECS.get(codec, codec)
        if self.args.mark:
            schema = schema.append(pa.field(CLUSTER_FIELD, pa.int64())).append(pa.field(KEPT_FIELD, pa.bool_()))
        writer = pq.ParquetWriter(raw, schema, compression=codec)
        pending: list[Any] = []
        keep, start = clusters.keep_mask, 0
        for path, parquet in files:
            file_row = 0
            for group in range(parquet.num_row_groups):
                table = parquet.read_row_group(group)
                valid = table.column(self.args.text_field).is_valid().to_numpy(zero_copy_only=False)
                positions = np.full(table.num_rows, -1, np.int64)
                positions[valid] = np.arange(start, start + int(valid.sum()))
                start += int(valid.sum())
                unchanged(start, clusters, done=start == len(clusters))
                ids = table.column(self.args.id_field).to_pylist() if self.args.id_field in table.column_names else None
                for row in np.flatnonzero(valid):
                    i = int(positions[row])
                    if i in wanted:
                        self.ids[i] = ids[row] if ids is not None else f"{path}#{file_row + row}"
                file_row += table.num_rows
                if self.args.mark:
                    table = table.filter(pa.array(valid))
                    at = positions[valid]
                    table = table.append_column(CLUSTER_FIELD, pa.array(clusters.labels[at], pa.int64()))
                    table = table.append_column(KEPT_FIELD, pa.array(keep[at]))
                else:
                    chosen = np.zeros(table.num_rows, bool)
                    chosen[valid] = keep[positions[valid]]
                    table = table.filter(pa.array(chosen))
                pending.append(table)
                pending = write_groups(writer, pending, group_rows, pa)
        unchanged(start, clusters, done=True)
        if pending:
            writer.write_table(pa.concat_tables(pending), row_group_size=group_rows)
        writer.close()


def write_groups(writer, pending: list, rows: int, pa) -> list:
    """Writes the whole row groups of ``rows`` rows that the pending tables
    make; returns what is left over."""
    if sum(t.num_rows for t in pending) < rows:
        return pending
    table = pa.concat_tables(pending)
    whole = table.num_rows - table.num_rows % rows
    writer.write_table(table.slice(0, whole), row_group_size=rows)
    return [table.slice(whole)] if whole < table.num_rows else []


# -- documents (files, directories, HTML, WARC) ----------------------------------------


class Documents(Corpus):
    """Documents as the other commands read them, written as JSON Lines of
    their id (the --id-field name) and text (--text-field), and URL and fetch
    date when they are web pages."""

    def documents(self):
        documents, _ = read_documents(list(self.args.sources), self.args.id_field, self.args.text_field,
                                      Reading(self.args.hidden, self.args.encoding))
        return documents

    def texts(self) -> Iterator[tuple[str, Any]]:
        if self.keep_field():
            raise UserError(f"--keep {self.args.keep}: documents read from files have no fields; "
                            "use first or longest")
        for doc in self.documents():
            yield doc.text, None

    def write(self, raw: BinaryIO, clusters: Clusters, wanted: set[int]) -> None:
        web = has_pages(list(self.args.sources), self.args.hidden)
        keep = clusters.keep_mask
        out = compressing(raw, compression_of_name(self.args.output))
        i = -1
        with skipped.muted():  # reported by the first reading
            for i, doc in enumerate(progress(self.documents(), "doc", len(clusters))):
                unchanged(i, clusters)
                if i in wanted:
                    self.ids[i] = doc.name
                if not (keep[i] or self.args.mark):
                    continue
                record = {self.args.id_field: doc.name, self.args.text_field: doc.text}
                if web:
                    record.update(url=doc.url, fetched_at=doc.fetched_at)
                if self.args.mark:
                    record.update({CLUSTER_FIELD: int(clusters.labels[i]), KEPT_FIELD: bool(keep[i])})
                out.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
        unchanged(i + 1, clusters, done=True)
        out.close()


KINDS = {"jsonl": JsonLines, "parquet": Parquet, "documents": Documents}


# -- the clusters: here or in the database -------------------------------------------


def batched_texts(texts: Iterable[tuple[str, Any]]) -> Iterator[tuple[list[str], list[Any]]]:
    for batch in corpus_dedupe.batches(texts, BATCH_DOCUMENTS):
        yield [t for t, _ in batch], [v for _, v in batch]


def database_labels(args, fps: np.ndarray) -> np.ndarray:
    """find_clusters's labels, found by the database --dsn names: the
    fingerprints copied into a temporary table (binary COPY), then
    simhash_clusters (the plain back end: read back and clustered here)."""
    from .. import plain
    from ..progress import track_progress
    from .database import connect, database_backend

    labels = np.arange(fps.size, dtype=index_dtype(fps.size))  # 4 bytes a document, as find_clusters's
    with connect(args.dsn) as conn:
        backend = database_backend(conn, args, None)
        conn.execute(f"CREATE TEMP TABLE simhash_dedupe (id bigint, fingerprint {backend.column_type})")
        with conn.cursor().copy("COPY simhash_dedupe (id, fingerprint) FROM STDIN (FORMAT binary)") as copy:
            for start in range(0, fps.size, 1 << 20):
                copy.write(binary_copy_rows(start, fps[start:start + (1 << 20)], first=start == 0))
            copy.write(b"\xff\xff")
        rows = "SELECT id, fingerprint FROM simhash_dedupe"
        if backend.column_type == "simhash64":
            tracking = track_progress(conn) if sys.stderr.isatty() else ExitStack()
            with tracking, conn.cursor().copy("COPY (SELECT id, cluster_id FROM simhash_clusters(%s, %s)) "
                                              "TO STDOUT (FORMAT binary)", (rows, args.distance)) as copy:
                for ids, clusters in binary_copy_pairs(copy):
                    labels[ids] = clusters
        else:
            ids, stored = plain.stream_rows(plain.binary_execute(conn), rows)
            local = corpus_dedupe.find_clusters(stored.astype(np.uint64), args.distance)
            smallest = ids.copy()
            np.minimum.at(smallest, local, ids)
            labels[ids] = smallest[local]
    return labels


COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"


ID_PAIR = np.dtype([("fields", ">i2"), ("a_len", ">i4"), ("a", ">i8"), ("b_len", ">i4"), ("b", ">i8")])


def binary_copy_pairs(copy) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The (bigint, bigint) rows of a COPY ... TO STDOUT (FORMAT binary), as
    arrays a chunk at a time (never the whole result in memory, nor a Python
    object a row)."""
    pending, header = b"", True
    for chunk in copy:
        pending += bytes(chunk)
        if header and len(pending) >= len(COPY_HEADER):
            pending, header = pending[len(COPY_HEADER):], False
        whole = 0 if header else len(pending) // ID_PAIR.itemsize * ID_PAIR.itemsize
        if whole:
            rows = np.frombuffer(pending[:whole], ID_PAIR)
            pending = pending[whole:]
            yield rows["a"].astype(np.int64), rows["b"].astype(np.int64)
    if pending != b"\xff\xff":  # the trailer
        raise UserError("the server's clusters came back malformed")


def binary_copy_rows(start: int, fps: np.ndarray, first: bool) -> bytes:
    """Rows (start + i, fps[i]) in COPY's binary format (the header too if first)."""
    row = np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", ">i8"), ("fp_len", ">i4"), ("fp", ">u8")])
    rows = np.empty(fps.size, row)
    rows["fields"], rows["id_len"], rows["fp_len"] = 2, 8, 8
    rows["id"] = np.arange(start, start + fps.size)
    rows["fp"] = fps
    return (COPY_HEADER if first else b"") + rows.tobytes()


# -- the command -------------------------------------------------------------------------


@contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """A binary stream into a temporary file beside path, renamed to path
    when the block completes; removed if it does not."""
    target = Path(path)
    if target.is_dir():
        raise UserError(f"{path}: a directory; give a file to write")
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as raw:
            yield raw
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except OSError as e:
        os.unlink(temporary)
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        os.unlink(temporary)
        raise


def check(args) -> None:
    if not 0 <= args.distance < 64:
        raise UserError(f"--distance must be between 0 and 63, got {args.distance}")
    jobs_of(args)
    if args.output == "-":
        raise UserError("dedupe writes a file (renamed into place when complete): give -o PATH, not '-'")


def summary(args, corpus: Corpus, clusters: Clusters, bytes_out: int) -> str:
    n, kept = len(clusters), int(clusters.keep_mask.sum())
    action = "marked" if args.mark else "out"
    return (f"pysimhash-sql dedupe: {n} documents in, {kept if not args.mark else n} {action} "
            f"({n - kept} near-duplicates{' to remove' if args.mark else ' removed'}, in {clusters.count()} "
            f"clusters); {megabytes(corpus.bytes_in())} in, {megabytes(bytes_out)} out")


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def dedupe_command(args) -> None:
    from .fingerprint import fingerprinter

    check(args)
    fingerprinter(args)  # --spec-version and --shingle-size checked
    version = args.spec_version or TEXT_SPEC_VERSION_LATEST
    if version == 1 and args.shingle_size not in (None, 3):
        raise UserError("dedupe fingerprints with version 1's shingle size 3 only")
    kind, files = corpus_files(args.sources, args.hidden)
    corpus = KINDS[kind](args, files, Malformed(args.strict))
    collector = Collector(args.keep)
    try:
        for fps, texts, values in counted(corpus.fingerprinted(version, args.jobs), "doc", lambda batch: len(batch[0])):
            collector.add(fps, texts, values)
    except ValueError as e:  # a keep field's value that is not a number nor a string
        raise UserError(f"--keep {args.keep}: {e}") from None
    if args.strict and skipped.count:  # a file or a WARC record that could not be read
        raise UserError(f"{skipped.count} inputs could not be read (--strict: nothing written)")
    labels = database_labels(args, collector.fingerprints()) if args.dsn else None
    clusters = collector.clusters(args.distance, labels=labels)
    wanted = set(clusters.removed().tolist()) if args.removed else set()
    wanted |= {int(clusters.kept[i]) for i in wanted}
    with ExitStack() as outputs:
        out = outputs.enter_context(atomic_output(args.output))
        removed = outputs.enter_context(atomic_output(args.removed)) if args.removed else None
        corpus.write(out, clusters, wanted)
        if removed is not None:
            write_removed(removed, clusters, corpus.ids)
    print(summary(args, corpus, clusters, Path(args.output).stat().st_size), file=sys.stderr)


def write_removed(stream: BinaryIO, clusters: Clusters, ids: dict[int, Any]) -> None:
    """--removed: a JSON Lines record per removed document, in input order: its
    id, the id of the document kept of its cluster, and their distance in bits
    (each line json.dumps's of the record, with ensure_ascii=False)."""
    encode = json.JSONEncoder(ensure_ascii=False).encode
    removed = clusters.removed()
    for start in range(0, removed.size, BATCH_DOCUMENTS):
        rows = removed[start:start + BATCH_DOCUMENTS]
        kept = clusters.kept[rows]
        distances = popcount(clusters.fingerprints[rows] ^ clusters.fingerprints[kept])
        stream.write("".join(f'{{"id": {encode(ids[i])}, "duplicate_of": {encode(ids[k])}, "distance": {d}}}\n'
                             for i, k, d in zip(rows.tolist(), kept.tolist(), distances.tolist())).encode())
