"""The CLI's web-page sources: HTML files and WARC files, fingerprinted by their
main-content text, with URL and fetch date; into PostgreSQL with ingest."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import psycopg
import pytest
from fastwarc.warc import WarcRecordType
from toolbox.readme import readme_blocks, run_example
from test_cli import CLI, assert_user_error, run
from toolbox.web_pages import (
    ARTICLES, CORRUPT_RECORD, JS_SHELL, article_page, http_response, nav_only_page, warc_record, write_warc,
)

from pysimhash_sql import hashing
from pysimhash_sql.html import extract_text, simhash_html

FETCHES = 2


def crawl_records() -> tuple[list, list[tuple[str, str, str]]]:
    """WARC records of a crawl: every article fetched FETCHES times (with request
    records), a warcinfo record, an image, a JavaScript shell, and a corrupt
    record; and (url, date, html) of the HTML pages with text, in order."""
    records = [warc_record(WarcRecordType.warcinfo, None, "2025-11-01T00:00:00Z", None)]
    pages = []
    for key in sorted(ARTICLES):
        for fetch in range(FETCHES):
            url, html = article_page(key, fetch)
            date = f"2025-11-{1 + fetch:02}T08:{len(pages):02}:00+00:00"  # written as ...Z
            warc_date = date.replace("+00:00", "Z")
            records.append(warc_record(WarcRecordType.request, url, warc_date, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
            records.append(warc_record(WarcRecordType.response, url, warc_date, http_response(html.encode())))
            pages.append((url, date, html))
        if key == "harbour":
            records += [
                CORRUPT_RECORD,
                warc_record(WarcRecordType.response, "https://news.example.org/logo.png", "2025-11-01T09:00:00Z",
                            http_response(b"\x89PNG\r\n\x1a\n not html", "image/png")),
                warc_record(WarcRecordType.response, "https://news.example.org/app", "2025-11-01T09:00:00Z",
                            http_response(JS_SHELL.encode())),
            ]
    return records, pages


@pytest.fixture(params=[False, True], ids=["warc", "warc.gz"])
def crawl(request, tmp_path: Path) -> tuple[Path, list[tuple[str, str, str]]]:
    records, pages = crawl_records()
    path = tmp_path / ("crawl.warc.gz" if request.param else "crawl.warc")
    write_warc(path, records, compress=request.param)
    return path, pages


def test_fingerprint_a_warc_file_skips_and_reports_what_is_not_a_page(crawl) -> None:
    path, pages = crawl
    result = run("fingerprint", "--verbose", str(path), skips=True)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["url"], r["fetched_at"]) for r in rows] == [(url, date) for url, date, _ in pages]
    assert [int(r["fingerprint"]) for r in rows] == [simhash_html(html, url) for url, _, html in pages]
    assert len({r["id"] for r in rows}) == len(rows) and all(r["id"].startswith("<urn:uuid:") for r in rows)
    *messages, summary = result.stderr.splitlines()
    assert summary == "pysimhash-sql: skipped 2: 1 pages without text, 1 unreadable WARC data"
    assert len(messages) == 2 and all(m.startswith(f"pysimhash-sql: {path}: ") for m in messages)
    assert "unreadable WARC record" in messages[0] and "resuming at byte" in messages[0]
    assert "1 page without text to fingerprint" in messages[1]  # the JavaScript shell


def test_refetches_in_a_warc_file_are_near_duplicates(crawl) -> None:
    path, _ = crawl
    rows = [json.loads(line) for line in run("fingerprint", "--format", "jsonl", str(path), skips=True).stdout.splitlines()]
    by_article = {}
    for row in rows:
        by_article.setdefault(row["url"].split("?")[0], []).append(row["fingerprint"])
    assert len(by_article) == len(ARTICLES)
    firsts = [fps[0] for fps in by_article.values()]
    for fps in by_article.values():
        assert len(fps) == FETCHES and all(hashing.hamming_distance(fps[0], fp) <= 3 for fp in fps)
    assert all(hashing.hamming_distance(a, b) > 3 for i, a in enumerate(firsts) for b in firsts[i + 1:])


def test_fingerprint_html_files_in_a_directory(tmp_path: Path) -> None:
    for key in ARTICLES:
        (tmp_path / f"{key}.html").write_text(article_page(key)[1], encoding="utf-8")
    (tmp_path / "latin1.htm").write_bytes(article_page("orchard", 1)[1]
                                          .replace('charset="utf-8"', 'charset="iso-8859-1"').encode("latin-1"))
    (tmp_path / "sport.html").write_text(nav_only_page("sport"))
    (tmp_path / "notes.txt").write_text("plain text files are still documents of their own")
    result = run("fingerprint", "--verbose", str(tmp_path), skips=True)
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["id", "fingerprint", "url", "fetched_at"]
    fingerprints = {name: int(fp) for name, fp, *_ in rows[1:]}
    assert sorted(fingerprints) == ["harbour.html", "latin1.htm", "library.html", "notes.txt", "orchard.html"]
    for key in ARTICLES:
        assert fingerprints[f"{key}.html"] == simhash_html((tmp_path / f"{key}.html").read_bytes())
    assert fingerprints["latin1.htm"] == fingerprints["orchard.html"]
    assert fingerprints["notes.txt"] == hashing.simhash_v3((tmp_path / "notes.txt").read_text())  # the default
    assert all(row[2:] == ["", ""] for row in rows[1:])  # files have no URL or fetch date
    assert result.stderr == "pysimhash-sql: sport.html: 1 page without text to fingerprint " \
                            "(fewer than 20 tokens of main content) skipped\n" \
                            "pysimhash-sql: skipped 1: 1 pages without text\n"


def test_plain_sources_keep_two_columns() -> None:
    out = run("fingerprint", "-", input=json.dumps({"id": 1, "text": "a b c"}) + "\n").stdout
    assert out.splitlines()[0] == "id,fingerprint"


def ingested(db: psycopg.Connection, table: str = "documents") -> list[tuple]:
    return db.execute(f"SELECT name, url, fetched_at, fingerprint::text, body FROM {table} ORDER BY id").fetchall()


@pytest.mark.parametrize("fingerprints", ["server", "local"])
def test_ingest_a_warc_file_into_postgresql(db: psycopg.Connection, crawl, fingerprints: str) -> None:
    path, pages = crawl
    run("ingest", "--dsn", db.info.dsn, "--batch-size", "2", "--fingerprints", fingerprints, str(path), skips=True)
    rows = ingested(db)
    assert [(url, fetched.isoformat()) for _, url, fetched, _, _ in rows] == [(url, date) for url, date, _ in pages]
    assert [int(fp) for *_, fp, _ in rows] == [simhash_html(html, url) for url, _, html in pages]
    assert [body for *_, body in rows] == [extract_text(html, url) for url, _, html in pages]
    assert db.execute("SELECT count(*) FROM documents WHERE fingerprint <> simhash_v3(body)").fetchone() == (0,)

    # the crawler's question, in SQL: is a near-duplicate of this page stored already?
    fetched_again = simhash_html(article_page("library", 7)[1])
    near = db.execute("SELECT DISTINCT split_part(url, '?', 1) FROM documents "
                      "WHERE hamming_within(fingerprint, %s::simhash64, 3)", [str(fetched_again)]).fetchall()
    assert near == [("https://news.example.org/library",)]

    run("ingest", "--dsn", db.info.dsn, str(path), skips=True)  # again: every record is there already
    assert ingested(db) == rows


def test_ingest_pages_into_a_table_made_before_the_page_columns(db: psycopg.Connection, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a plain document from an earlier ingest")
    db.execute("""CREATE TABLE documents (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                  name text NOT NULL UNIQUE, body text NOT NULL, fingerprint simhash64 NOT NULL)""")
    run("ingest", "--dsn", db.info.dsn, str(tmp_path / "notes.txt"))  # plain sources leave the table alone
    assert [c for (c,) in db.execute("SELECT attname FROM pg_attribute WHERE attrelid = 'documents'::regclass "
                                     "AND attnum > 0 ORDER BY attnum")] == ["id", "name", "body", "fingerprint"]
    (tmp_path / "page.html").write_text(article_page("harbour")[1])
    run("ingest", "--dsn", db.info.dsn, str(tmp_path / "page.html"))
    assert [r[:3] for r in ingested(db)] == [(str(tmp_path / "notes.txt"), None, None),
                                             (str(tmp_path / "page.html"), None, None)]


def test_a_missing_warc_file_is_one_line(tmp_path: Path) -> None:
    assert_user_error(run("fingerprint", str(tmp_path / "missing.warc.gz"), ok=False), "no such file or directory")


def test_readme_web_pages_example(db: psycopg.Connection, tmp_path: Path) -> None:
    records, pages = crawl_records()
    write_warc(tmp_path / "crawl.warc.gz", records, compress=True)
    (tmp_path / "saved").mkdir()
    for key in ARTICLES:
        (tmp_path / "saved" / f"{key}.html").write_text(article_page(key, 9)[1])
    info = db.info
    env = {"PGHOST": info.host, "PGPORT": str(info.port), "PGUSER": info.user, "PGDATABASE": info.dbname}
    out = run_example(readme_blocks("Web pages: HTML and WARC", document="docs/cli.md")[0], cwd=tmp_path, env=env, path=[Path(CLI).parent])
    pairs = [line.split(",") for line in out.splitlines()[1:]]
    # every saved page is a near-duplicate of the fetches of its article in the crawl
    assert len(pairs) == len(ARTICLES) * FETCHES + len(ARTICLES) * (FETCHES * (FETCHES - 1) // 2)
    assert db.execute("SELECT count(*), count(url), count(fetched_at) FROM pages").fetchone() == (
        len(pages) + len(ARTICLES), len(pages), len(pages))


def test_a_record_without_a_valid_date_goes_in_without_one(db: psycopg.Connection, tmp_path: Path) -> None:
    url, html = article_page("orchard")
    write_warc(tmp_path / "odd.warc", [warc_record(WarcRecordType.response, url, "last tuesday",
                                                   http_response(html.encode()))], compress=False)
    rows = list(csv.DictReader(io.StringIO(run("fingerprint", str(tmp_path / "odd.warc")).stdout)))
    assert [(r["url"], r["fetched_at"]) for r in rows] == [(url, "")]
    run("ingest", "--dsn", db.info.dsn, str(tmp_path / "odd.warc"))
    assert db.execute("SELECT url, fetched_at FROM documents").fetchall() == [(url, None)]


def test_files_that_are_no_warc_are_reported_and_skipped(tmp_path: Path) -> None:
    from pysimhash_sql.cli import warc

    messages = []
    assert list(warc.html_responses(tmp_path / "missing.warc", messages.append)) == []
    (tmp_path / "junk.warc.gz").write_bytes(b"\x1f\x8b\x08 not gzip at all")
    (tmp_path / "page.warc").write_text("<html><body><p>an HTML page saved under the wrong name</p></body></html>")
    for name in ("junk.warc.gz", "page.warc"):
        assert list(warc.html_responses(tmp_path / name, messages.append)) == []
    assert messages[0] == f"cannot read {tmp_path / 'missing.warc'}: No such file or directory; skipped"
    assert all("unreadable WARC record after byte 0" in m and m.endswith("nothing readable follows")
               for m in messages[1:]) and len(messages) == 3
    result = run("fingerprint", "--verbose", str(tmp_path), skips=True)  # the directory: both reported and skipped, no pages
    assert result.stdout == "id,fingerprint,url,fetched_at\n" and result.stderr.count("unreadable WARC record") == 2
