"""pysimhash-sql report, and the CLI reading compressed files, on a real server."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
from pathlib import Path

import pytest
import zstandard
import psycopg
from test_cli import assert_user_error, fingerprints_of, plain_dsn, run

from pysimhash_sql import hashing, plain

HOSTILE = ['<script>document.title="pwned"</script>', "\"'><img src=x onerror=alert(1)>", "O'Brien & \"Sons\""]
WORDS = ("the quick brown fox jumps over the lazy dog while the cat watches from the garden wall and the birds "
         "sing in the old oak tree near the river bank on a quiet summer morning").split()


def variant(base: list[str], changes: int, seed: int) -> str:
    """base with `changes` words replaced: a near-duplicate a few bits away."""
    words = list(base)
    for c in range(changes):
        words[(seed * 7 + c * 13) % len(words)] = f"changed{seed}x{c}"
    return " ".join(words)


def make_table(db, texts: list[tuple[str, str | None]]) -> None:
    db.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, domain text, fingerprint simhash64)")
    with db.cursor() as cur:
        cur.executemany("INSERT INTO docs VALUES (%s, %s, %s, simhash(%s))",
                        [(i, text, domain, text) for i, (text, domain) in enumerate(texts, 1)])
    db.execute("CREATE INDEX ON docs USING simhash_mih (fingerprint)")


def script_tags(page: str) -> int:
    return len(re.findall(r"<script\b", page, re.IGNORECASE))


def report(db, tmp_path: Path, *args: str, skips: bool = False) -> str:
    out = tmp_path / "report.html"
    run("report", "--dsn", db.info.dsn, "-o", str(out), *args, skips=skips)
    return out.read_text(encoding="utf-8")


def test_a_table_with_hostile_texts_and_scopes(db, tmp_path: Path) -> None:
    texts = []
    for group in range(6):
        base = [f"{w}{group}" for w in WORDS] + HOSTILE[group % 3].split()
        for changes in range(4):
            texts.append((variant(base, changes, group), HOSTILE[group % 3] if group % 2 else f"site{group}.example"))
    make_table(db, texts)
    page = report(db, tmp_path, "--table", "docs", "--scope", "domain", "--sample-size", "1000")
    # below the head (plotly.js): one script per chart, none from the data
    assert script_tags(page.split("</head>", 1)[1]) == 2
    for hostile in HOSTILE:
        assert hostile not in page
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
    assert "<img src=x" not in page
    assert "Suggested threshold (a suggestion, not a rule)" in page
    assert 'id="histogram"' in page and 'id="scopes"' in page
    assert "<del>" in page and "<ins>" in page  # the pairs' differences
    assert "for every row" in page and "through the fingerprint column's index" in page


@pytest.mark.parametrize("texts", [[], [("one lonely document", None)],
                                   [(" ".join(f"{w}{i}" for w in WORDS), None) for i in range(5)]],
                         ids=["empty", "one row", "no near-duplicates"])
def test_tables_with_nothing_to_show(db, tmp_path: Path, texts) -> None:
    make_table(db, texts)
    page = report(db, tmp_path, "--table", "docs")
    assert "Suggested threshold (a suggestion, not a rule): 3 bits" in page
    assert "customary 3 bits" in page and "Traceback" not in page
    assert "No two documents are within 3 bits: no clusters." in page


def test_the_threshold_chosen_and_the_clusters(db, tmp_path: Path) -> None:
    base = list(WORDS)
    make_table(db, [(variant(base, c, 1), None) for c in range(5)] + [("something else entirely " * 5, None)])
    page = report(db, tmp_path, "--table", "docs", "--distance", "30", "--text-column", "body")
    assert "Clusters at 30 bits" in page and "chosen with --distance" in page
    sizes = db.execute("SELECT size, count(*) FROM (SELECT count(*) AS size FROM simhash_clusters("
                       "'SELECT id, fingerprint FROM docs', 30) GROUP BY cluster_id) c GROUP BY size "
                       "ORDER BY size DESC").fetchall()
    assert sizes and "".join(f"<tr><td>{size}</td><td>{n}</td></tr>" for size, n in sizes) in page


def test_mistakes_are_one_line(db, tmp_path: Path) -> None:
    make_table(db, [])
    assert_user_error(run("report", "--dsn", db.info.dsn, "--table", "nope", ok=False), "table nope does not exist")
    assert_user_error(run("report", "--dsn", db.info.dsn, "--table", "docs", "--scope", "nope", ok=False),
                      "--scope nope: table docs has no such column")
    assert_user_error(run("report", "--dsn", db.info.dsn, "--table", "docs", "--sample-size", "0", ok=False),
                      "--sample-size must be at least 1")


COMPRESSORS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
               ".zst": lambda data: zstandard.ZstdCompressor().compress(data)}


def compressed_corpus(directory: Path) -> dict[str, str]:
    """The same few near-duplicate texts in each compression, a binary file and a corrupt one."""
    directory.mkdir()
    texts = {}
    for n, (suffix, compress) in enumerate(COMPRESSORS.items()):
        text = variant(list(WORDS), n, 3)
        texts[f"doc{n}.txt{suffix}"] = text
        (directory / f"doc{n}.txt{suffix}").write_bytes(compress(text.encode()))
    (directory / "plain.txt").write_text(variant(list(WORDS), 0, 3))
    (directory / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (directory / "broken.gz").write_bytes(gzip.compress(b"some text " * 100)[:-20])
    return texts


def test_compressed_files_are_read_as_their_text(tmp_path: Path) -> None:
    texts = compressed_corpus(tmp_path / "docs")
    result = run("fingerprint", str(tmp_path / "docs"), ok=False)
    assert result.returncode == 3
    # one summary line of counts by reason; no per-file lines without --verbose
    assert result.stderr == "pysimhash-sql: skipped 2: 1 binary, 1 corrupt compressed data (--verbose lists each)\n"
    found = fingerprints_of(result)
    for name, text in texts.items():
        assert found[name] == hashing.simhash_v3(text)  # the default text spec
    verbose = run("fingerprint", "--verbose", str(tmp_path / "docs"), ok=False)
    lines = verbose.stderr.splitlines()
    assert len(lines) == 3 and "broken.gz: truncated gzip data; skipped" in lines[0] and "image.png: binary" in lines[1]
    assert lines[2] == "pysimhash-sql: skipped 2: 1 binary, 1 corrupt compressed data"


def test_a_report_of_compressed_files(db, tmp_path: Path) -> None:
    compressed_corpus(tmp_path / "docs")
    page = report(db, tmp_path, str(tmp_path / "docs"), skips=True)
    assert "doc1.txt.bz2" in page and "doc3.txt.zst" in page and "<ins>" in page
    assert "Near-duplicates in " + str(tmp_path / "docs") in page


# ------------------------------------------------ the plain back end (docs/managed.md)

METHOD = re.compile(r'<p class="method" id="method">.*?</p>', re.DOTALL)


def test_plain_backend_reports_what_the_extension_reports(db, plain_url, tmp_path: Path) -> None:
    """The same table (near copies at 0..12 bits, scopes with NULL among them,
    exact copies for the ties) on both back ends: the same page but for how
    the numbers were computed; the same for files with --backend plain."""
    texts = []
    for group in range(8):
        base = [f"{w}{group}" for w in WORDS]
        for changes in range(0, 8, 1 + group % 3):
            texts.append((variant(base, changes, group), None if group % 4 == 0 else f"site{group % 3}.example"))
    texts += texts[:3]  # exact copies: ties broken by the smallest id
    make_table(db, texts)
    with psycopg.connect(plain_dsn(plain_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, domain text, fingerprint bigint)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO docs VALUES (%s, %s, %s, %s)",
                            [(i, text, domain, plain.to_signed(hashing.simhash(text)))
                             for i, (text, domain) in enumerate(texts, 1)])
    for args in (["--scope", "domain"], ["--sample-size", "7", "--max-distance", "12"], ["--distance", "9"]):
        extension = report(db, tmp_path, "--table", "docs", *args)
        on_plain = report_on(plain_dsn(plain_url), tmp_path, "--table", "docs", *args)
        assert "the plain back end, without the extension" in on_plain
        assert METHOD.sub("", on_plain) == METHOD.sub("", extension), args
    (tmp_path / "files").mkdir()
    for n, (text, _) in enumerate(texts[:12]):
        (tmp_path / "files" / f"doc{n}.txt").write_text(text)
    files = report(db, tmp_path, str(tmp_path / "files"))
    on_plain = report_on(plain_dsn(plain_url), tmp_path, str(tmp_path / "files"))
    assert METHOD.sub("", on_plain) == METHOD.sub("", files) and "<ins>" in files


def test_plain_backend_report_of_an_empty_table(plain_url, tmp_path: Path) -> None:
    with psycopg.connect(plain_dsn(plain_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, body text, fingerprint bigint)")
    page = report_on(plain_dsn(plain_url), tmp_path, "--table", "docs")
    assert "customary 3 bits" in page and "No two documents are within 3 bits: no clusters." in page


def report_on(dsn: str, tmp_path: Path, *args: str) -> str:
    out = tmp_path / "plain-report.html"
    run("report", "--dsn", dsn, "-o", str(out), *args)
    return out.read_text(encoding="utf-8")


def test_a_report_needs_a_database() -> None:
    assert_user_error(run("report", "--dsn", "host=/nonexistent-dir port=1", ok=False), "cannot connect")
