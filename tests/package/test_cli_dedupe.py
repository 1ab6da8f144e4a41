"""pysimhash-sql dedupe, run as users run it (the console script in a
subprocess; the database engine against the test server): every format in
and out, the keep rules, --mark, --removed, malformed records, atomic output,
determinism, and --dsn giving the very bytes the in-memory engine gives."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from toolbox.corpus_records import corpus, expected_clusters, expected_kept, write_jsonl
from toolbox.web_pages import ARTICLES, article_page

from pysimhash_sql.cli.compression import compression_of
from test_cli import assert_user_error, plain_dsn, run

COMPRESSIONS = {"": lambda data: data, ".gz": lambda data: gzip.compress(data, mtime=0), ".bz2": bz2.compress,
                ".xz": lzma.compress, ".zst": lambda data: zstandard.ZstdCompressor().compress(data)}


def read_lines(path: Path) -> list[bytes]:
    from pysimhash_sql.cli.compression import open_stream

    with open_stream(path) as stream:
        return stream.readlines()


@pytest.mark.parametrize("suffix", list(COMPRESSIONS))
def test_jsonl_in_jsonl_out_compressed_like_the_input(tmp_path: Path, suffix: str) -> None:
    records = corpus()
    lines = write_jsonl(tmp_path / "plain.jsonl", records)
    source = tmp_path / f"corpus.jsonl{suffix}"
    source.write_bytes(COMPRESSIONS[suffix]((tmp_path / "plain.jsonl").read_bytes()))
    out = tmp_path / "out.jsonl"  # no compression suffix: like the input
    result = run("dedupe", str(source), "-o", str(out))
    kept = expected_kept(records, 3)
    assert read_lines(out) == [lines[i] for i in kept]
    assert compression_of(out.read_bytes()[:8]) == compression_of(source.read_bytes()[:8])
    assert len(kept) < len(records)  # the corpus has near-duplicates to remove
    assert f"{len(records)} documents in, {len(kept)} out" in result.stderr
    assert "clusters" in result.stderr and "MB in" in result.stderr


def test_output_suffix_names_the_compression(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c.jsonl", corpus())
    run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl.gz"))
    assert (tmp_path / "out.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"


def test_a_directory_of_jsonl_shards_is_one_corpus(tmp_path: Path) -> None:
    records = corpus()
    shards = tmp_path / "shards"
    shards.mkdir()
    lines = write_jsonl(shards / "a.jsonl", records[:50]) + write_jsonl(shards / "b.jsonl", records[50:])
    run("dedupe", str(shards), "-o", str(tmp_path / "out.jsonl"))
    assert read_lines(tmp_path / "out.jsonl") == [lines[i] for i in expected_kept(records, 3)]


def write_parquet(path: Path, records: list[dict], row_group_size: int = 16, compression: str = "zstd") -> pa.Table:
    table = pa.table({"id": [r["id"] for r in records], "text": [r["text"] for r in records],
                      "date": [r.get("date") for r in records], "score": [r["score"] for r in records]})
    table = table.replace_schema_metadata({b"origin": b"test"})
    pq.write_table(table, path, row_group_size=row_group_size, compression=compression)
    return table


def test_parquet_in_parquet_out_with_the_input_s_schema_and_row_groups(tmp_path: Path) -> None:
    records = corpus()
    table = write_parquet(tmp_path / "c.parquet", records)
    run("dedupe", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "out.parquet"), "--keep", "date")
    out = pq.ParquetFile(tmp_path / "out.parquet")
    assert out.schema_arrow.equals(table.schema, check_metadata=True)
    meta = out.metadata
    assert meta.row_group(0).num_rows == 16 and meta.row_group(0).column(0).compression == "ZSTD"
    assert all(meta.row_group(g).num_rows == 16 for g in range(meta.num_row_groups - 1))
    assert out.read().equals(table.take(expected_kept(records, 3, "date")))


def test_parquet_null_text_is_malformed_and_mark_adds_columns(tmp_path: Path) -> None:
    records = corpus()
    table = write_parquet(tmp_path / "c.parquet", records)
    texts = table.column("text").to_pylist()
    texts[3] = None
    table = table.set_column(1, "text", pa.array(texts))
    pq.write_table(table, tmp_path / "c.parquet", row_group_size=16)
    result = run("dedupe", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "m.parquet"), "--mark", "-v",
                 skips=True)
    assert "c.parquet, row 3: no text" in result.stderr
    marked = pq.read_table(tmp_path / "m.parquet")
    good = [r for i, r in enumerate(records) if i != 3]
    assert marked.num_rows == len(good) and marked.schema.names[-2:] == ["cluster_id", "kept"]
    assert [i for i, k in enumerate(marked.column("kept").to_pylist()) if k] == expected_kept(good, 3)
    assert_user_error(run("dedupe", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "s.parquet"), "--strict",
                          ok=False), "c.parquet, row 3", "--strict")
    assert not (tmp_path / "s.parquet").exists()


def test_documents_are_written_as_jsonl(tmp_path: Path) -> None:
    records = corpus(originals=20)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, record in enumerate(records):
        (docs / f"{i:03d}.txt").write_text(record["text"])
    run("dedupe", str(docs), "-o", str(tmp_path / "out.jsonl"))
    out = [json.loads(line) for line in read_lines(tmp_path / "out.jsonl")]
    kept = expected_kept(records, 3)
    assert out == [{"id": f"{i:03d}.txt", "text": records[i]["text"]} for i in kept]


def test_web_pages_carry_their_url(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    for fetch in range(3):  # the same article fetched three times: one kept
        url, html = article_page(next(iter(ARTICLES)), fetch)
        (pages / f"fetch{fetch}.html").write_text(html)
    run("dedupe", str(pages), "-o", str(tmp_path / "out.jsonl"), "--distance", "6")
    out = [json.loads(line) for line in read_lines(tmp_path / "out.jsonl")]
    assert [r["id"] for r in out] == ["fetch0.html"] and set(out[0]) == {"id", "text", "url", "fetched_at"}


def test_a_warc_crawl_keeps_one_fetch_of_each_page(tmp_path: Path) -> None:
    from test_cli_web import FETCHES, crawl_records
    from toolbox.web_pages import write_warc

    records, pages = crawl_records()
    write_warc(tmp_path / "crawl.warc.gz", records, compress=True)
    result = run("dedupe", str(tmp_path / "crawl.warc.gz"), "-o", str(tmp_path / "out.jsonl"), "--removed",
                 str(tmp_path / "removed.jsonl"), skips=True)  # the corrupt record and the page without text
    out = [json.loads(line) for line in read_lines(tmp_path / "out.jsonl")]
    assert [r["url"] for r in out] == [url for url, _, _ in pages[::FETCHES]]  # the first fetch of each
    removed = [json.loads(line) for line in (tmp_path / "removed.jsonl").read_text().splitlines()]
    assert len(removed) == len(pages) - len(out) and f"{len(pages)} documents in" in result.stderr
    assert_user_error(run("dedupe", str(tmp_path / "crawl.warc.gz"), "-o", str(tmp_path / "s.jsonl"), "--strict",
                          ok=False), "--strict")
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize("keep", ["first", "longest", "date", "score"])
def test_keep_rules(tmp_path: Path, keep: str) -> None:
    records = corpus()
    lines = write_jsonl(tmp_path / "c.jsonl", records)
    run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--keep", keep)
    kept = expected_kept(records, 3, keep)
    assert read_lines(tmp_path / "out.jsonl") == [lines[i] for i in kept]
    if keep != "first":
        assert kept != expected_kept(records, 3)  # the rule changes what is kept


def test_mark_keeps_every_record_with_its_cluster_and_kept_flag(tmp_path: Path) -> None:
    records = corpus()
    write_jsonl(tmp_path / "c.jsonl", records)
    run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "m.jsonl"), "--mark", "--keep", "longest")
    marked = [json.loads(line) for line in read_lines(tmp_path / "m.jsonl")]
    clusters = expected_clusters(records, 3)
    assert [{k: v for k, v in m.items() if k not in ("cluster_id", "kept")} for m in marked] == records
    assert [m["cluster_id"] for m in marked] == [clusters.get(i, i) for i in range(len(records))]
    assert [i for i, m in enumerate(marked) if m["kept"]] == expected_kept(records, 3, "longest")
    (tmp_path / "x.jsonl").write_text('{"text": "a b c", "kept": 1}\n')
    assert_user_error(run("dedupe", str(tmp_path / "x.jsonl"), "-o", str(tmp_path / "y.jsonl"), "--mark", ok=False),
                      "'kept'")


def test_removed_names_each_removed_document_and_its_kept_one(tmp_path: Path) -> None:
    from pysimhash_sql import hashing

    records = corpus()
    write_jsonl(tmp_path / "c.jsonl", records)
    run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--removed",
        str(tmp_path / "removed.jsonl"))
    kept = set(expected_kept(records, 3))
    clusters = expected_clusters(records, 3)
    removed = [json.loads(line) for line in (tmp_path / "removed.jsonl").read_text().splitlines()]
    expected = []
    for i in (i for i in range(len(records)) if i not in kept):
        j = clusters[i]  # the first of the cluster: kept by the rule "first"
        d = hashing.hamming_distance(*(hashing.fingerprint(records[k]["text"], version=3) for k in (i, j)))  # the default
        expected.append({"id": records[i]["id"], "duplicate_of": records[j]["id"], "distance": d})
    assert removed == expected and removed


def test_malformed_records_are_reported_and_skipped_or_refused(tmp_path: Path) -> None:
    records = corpus()
    lines = write_jsonl(tmp_path / "c.jsonl", records, {4: "not json", 9: '{"id": "no text"}', 12: "[1, 2]"})
    result = run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--verbose", skips=True)
    assert "c.jsonl, line 5: not JSON" in result.stderr
    assert "c.jsonl, line 11: need an object with a string 'text'" in result.stderr
    assert "skipped 3: 3 malformed records" in result.stderr
    assert read_lines(tmp_path / "out.jsonl") == [lines[i] for i in expected_kept(records, 3)]
    (tmp_path / "out.jsonl").write_bytes(b"before\n")
    strict = run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--strict", ok=False)
    assert_user_error(strict, "c.jsonl, line 5: not JSON", "nothing written")
    assert (tmp_path / "out.jsonl").read_bytes() == b"before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "out.jsonl"]


def test_jsonl_in_blocks_the_same_on_any_cores_and_parser(tmp_path: Path) -> None:
    """JSON Lines parsed and fingerprinted in blocks (cli/jsonl.py), written
    back a block at a time: the same output, --removed and report of the
    malformed lines at their numbers with 1, 2 or 3 jobs, the standard
    library's json alone and the pure-Python fingerprints (in worker
    processes); --strict refuses the first malformed line."""
    from test_cli import multi_block_jsonl

    malformed = multi_block_jsonl(tmp_path / "c.jsonl")
    results = []
    for options, env in [(("--jobs", "1"), {}), (("--jobs", "2"), {}), (("--jobs", "3"), {}),
                         ((), {"PYSIMHASH_SQL_STDLIB_JSON": "1"}), (("--jobs", "2"), {"PYSIMHASH_SQL_PURE_PYTHON": "1"})]:
        n = len(results)
        result = run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / f"out{n}.jsonl"), "--removed",
                     str(tmp_path / f"removed{n}.jsonl"), "--keep", "longest", "--verbose", *options,
                     env={**os.environ, **env}, skips=True)
        results.append((result.stderr, (tmp_path / f"out{n}.jsonl").read_bytes(),
                        (tmp_path / f"removed{n}.jsonl").read_bytes()))
    assert all(r == results[0] for r in results), [r == results[0] for r in results]
    stderr, out, removed = results[0]
    for number, why in malformed.items():
        assert f"c.jsonl, line {number}: {why}" in stderr
    lines = (tmp_path / "c.jsonl").read_bytes().split(b"\n")
    records = [line + b"\n" for number, line in enumerate(lines, 1) if line.strip() and number not in malformed]
    assert set(out.splitlines(keepends=True)) <= set(records) and removed  # the very lines, CR LF and all
    assert len(out.splitlines()) + len(removed.splitlines()) == len(records)
    first = min(malformed)
    assert_user_error(run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "s.jsonl"), "--strict",
                          ok=False), f"c.jsonl, line {first}: {malformed[first]}", "--strict")


def test_mistakes_are_one_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c.jsonl", corpus(originals=5))
    write_parquet(tmp_path / "c.parquet", corpus(originals=5))
    out = str(tmp_path / "out")
    assert_user_error(run("dedupe", str(tmp_path / "c.jsonl"), str(tmp_path / "c.parquet"), "-o", out, ok=False),
                      "different kinds")
    assert_user_error(run("dedupe", "-", "-o", out, ok=False, input=""), "twice")
    assert_user_error(run("dedupe", str(tmp_path / "c.jsonl"), "-o", out, "-d", "64", ok=False), "--distance")
    assert_user_error(run("dedupe", str(tmp_path / "c.jsonl"), "-o", out, "--jobs", "0", ok=False), "--jobs")
    assert_user_error(run("dedupe", str(tmp_path / "nothing.jsonl"), "-o", out, ok=False), "no such file")
    assert_user_error(run("dedupe", str(tmp_path / "c.parquet"), "-o", out, "--keep", "missing", ok=False),
                      "no column 'missing'")
    assert_user_error(run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path), ok=False), "a directory")
    assert not Path(out).exists()


class FailingStream:
    """A stream that fails after some bytes: the disk filling up mid-write."""

    def __init__(self, raw, error: BaseException, after: int) -> None:
        self.raw, self.error, self.left = raw, error, after

    def write(self, data: bytes) -> None:
        self.left -= len(data)
        if self.left < 0:
            raise self.error
        self.raw.write(data)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("error, status", [(OSError(28, "No space left on device"), 1), (KeyboardInterrupt(), 130)])
def test_a_failure_mid_write_leaves_no_partial_output(tmp_path: Path, monkeypatch, error, status) -> None:
    from pysimhash_sql.cli import dedupe, main

    write_jsonl(tmp_path / "c.jsonl", corpus())
    (tmp_path / "out.jsonl").write_bytes(b"the previous run's output\n")
    monkeypatch.setattr(dedupe, "compressing", lambda raw, name: FailingStream(raw, error, 5000))
    assert main(["dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                 "--removed", str(tmp_path / "removed.jsonl"), "--jobs", "1"]) == status
    assert (tmp_path / "out.jsonl").read_bytes() == b"the previous run's output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "out.jsonl"]  # no temporary file left


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst", ".parquet"])
def test_a_rerun_gives_the_same_bytes_on_any_number_of_cores(tmp_path: Path, suffix: str) -> None:
    records = corpus()
    if suffix == ".parquet":
        write_parquet(tmp_path / "c.parquet", records)
    else:
        write_jsonl(tmp_path / "plain.jsonl", records)
        (tmp_path / f"c{suffix}").write_bytes(COMPRESSIONS[suffix[6:]]((tmp_path / "plain.jsonl").read_bytes()))
    outputs = []
    for jobs in ("1", "2", "2"):
        out, removed = tmp_path / f"out{jobs}{len(outputs)}{suffix}", tmp_path / f"removed{len(outputs)}.jsonl"
        run("dedupe", str(tmp_path / f"c{suffix}"), "-o", str(out), "--removed", str(removed), "--jobs", jobs,
            "--keep", "longest")
        outputs.append((out.read_bytes(), removed.read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2]


@pytest.mark.parametrize("options", [[], ["--mark", "--keep", "date"]])
def test_dsn_gives_the_bytes_of_the_in_memory_engine(db: psycopg.Connection, plain_url, tmp_path: Path,
                                                     options: list[str]) -> None:
    records = corpus()
    write_jsonl(tmp_path / "c.jsonl", records)
    results = []
    for engine in ([], ["--dsn", db.info.dsn], ["--dsn", plain_dsn(plain_url)]):
        n = len(results)
        run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / f"out{n}.jsonl"), "--removed",
            str(tmp_path / f"removed{n}.jsonl"), *options, *engine)
        results.append(((tmp_path / f"out{n}.jsonl").read_bytes(), (tmp_path / f"removed{n}.jsonl").read_bytes()))
    assert results[0] == results[1] == results[2]
    assert results[0][1]  # something was removed
    assert db.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'simhash_dedupe'").fetchone() == (0,)


def test_dsn_clusters_are_the_extension_s(db: psycopg.Connection, tmp_path: Path) -> None:
    """A cluster linked through a chain (a near b near c, a far from c) is one
    cluster in both engines."""
    words = [f"w{i}" for i in range(200)]
    chain = [" ".join(words[:150]), " ".join(words[2:152]), " ".join(words[4:154]), " ".join(words[6:156])]
    records = [{"id": i, "text": t} for i, t in enumerate(chain)]
    write_jsonl(tmp_path / "c.jsonl", records)
    marks = []
    for engine in ([], ["--dsn", db.info.dsn]):
        run("dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "m.jsonl"), "--mark", "-d", "8", *engine)
        marks.append((tmp_path / "m.jsonl").read_bytes())
    assert marks[0] == marks[1]
    clusters = expected_clusters(records, 8)
    assert [json.loads(line)["cluster_id"] for line in marks[0].splitlines()] == [clusters.get(i, i) for i in range(4)]
    assert len(set(clusters.values())) == 1 and len(clusters) == 4  # one cluster of the whole chain


@pytest.mark.parametrize("document, section", [("docs/cli.md", "Deduplicating a corpus: dedupe"),
                                               ("docs/dedupe.md", "One command")])
def test_docs_example(tmp_path: Path, document: str, section: str) -> None:
    """The dedupe of the shipped corpus as docs/cli.md and docs/dedupe.md write it,
    and docs/dedupe.md's Python example."""
    import subprocess
    import sys

    from test_cli import CLI
    from toolbox import ROOT
    from toolbox.readme import readme_blocks, run_example

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    out = run_example(readme_blocks(section, document=document)[0], cwd=tmp_path, env={},
                      path=[Path(CLI).parent])
    removed = [json.loads(line) for line in (tmp_path / "removed.jsonl").read_text().splitlines()]
    kept = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert out.splitlines()[:2] == [json.dumps(r) for r in removed[:2]]
    assert len(kept) + len(removed) == len(list((ROOT / "examples" / "corpus").iterdir()))
    marked = [json.loads(line) for line in (tmp_path / "marked.jsonl").read_text().splitlines()]
    assert len(marked) == len(kept) + len(removed) and sum(m["kept"] for m in marked) == len(kept)
    python = readme_blocks("In Python", "python", "docs/dedupe.md")[1]
    assert subprocess.run([sys.executable, "-c", python], capture_output=True, text=True,
                          check=True).stdout == "[0, 2]\n"


def test_an_input_changed_between_the_readings_is_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    from pysimhash_sql.cli import dedupe, main

    records = corpus(originals=10)
    write_jsonl(tmp_path / "c.jsonl", records)
    clusters = dedupe.Collector.clusters

    def clusters_then_append(self, *args, **kwargs):  # another writer appends between the two readings
        with open(tmp_path / "c.jsonl", "a") as stream:
            stream.write(json.dumps({"id": "late", "text": "a record appended while dedupe ran"}) + "\n")
        return clusters(self, *args, **kwargs)

    monkeypatch.setattr(dedupe.Collector, "clusters", clusters_then_append)
    assert main(["dedupe", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--jobs", "1"]) == 1
    assert "the input changed while dedupe read it" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


def test_progress_bars_on_a_terminal_only(tmp_path: Path) -> None:
    """A bar for each reading on a terminal (the second one knows the total);
    piped, the summary line alone."""
    from test_cli import CORPUS, on_a_terminal

    piped = run("dedupe", str(CORPUS), "-o", str(tmp_path / "piped.jsonl"))
    assert piped.stderr.count("\n") == 1 and piped.stderr.startswith("pysimhash-sql dedupe: ")
    shown = on_a_terminal("dedupe", str(CORPUS), "-o", str(tmp_path / "out.jsonl"))
    count = len(list(CORPUS.iterdir()))
    assert f"{count}/{count}".encode() in shown and b"doc/s" in shown and b"documents in" in shown
