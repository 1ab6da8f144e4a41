"""WARC readers side by side: FastWARC (what the CLI uses) and warcio.

Usage: python bench/bench_warc.py [--quick]

A crawl of bench/refetch_noise.py's pages (an HTML response record, with a request
record, per fetch) is written with warcio's writer, gzipped per record and plain;
each reader then reads every response's URL, date, content type and payload.
Records/s and MB/s of payload per core (process CPU time, best of 3), next to
pysimhash_sql.html.extract_text's pages/s on the same payloads: the share of a
WARC ingest's time that reading takes.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

from benchlib import best_of, quick_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from refetch_noise import fetches, load_pages

from pysimhash_sql.html import extract_text


def write_crawl(path: Path, crawl, compress: bool) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=compress)
        for f in crawl:
            body = f.html.encode()
            date = {"WARC-Date": f"2025-11-{1 + f.fetch:02}T10:00:00Z"}
            request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "news.example.com")], is_http_request=True)
            writer.write_record(writer.create_warc_record(f.url, "request", http_headers=request,
                                                          warc_headers_dict=date))
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                               ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f.url, "response", payload=io.BytesIO(body),
                                                          http_headers=http, warc_headers_dict=date))


def read_fastwarc(path: Path) -> list[tuple]:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    with open(path, "rb") as stream:
        return [(r.headers.get("WARC-Target-URI"), r.headers.get("WARC-Date"), r.http_content_type, r.reader.read())
                for r in ArchiveIterator(stream, record_types=WarcRecordType.response, auto_decode="all")]


def read_warcio(path: Path) -> list[tuple]:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as stream:
        return [(r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Date"),
                 r.http_headers.get_header("Content-Type"), r.content_stream().read())
                for r in ArchiveIterator(stream) if r.rec_type == "response"]


def main() -> None:
    quick = quick_run(__doc__)
    pages = load_pages(120 if quick else 600)
    crawl = fetches(pages, 2)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for compress in (True, False):
            path = Path(tmp) / ("crawl.warc.gz" if compress else "crawl.warc")
            write_crawl(path, crawl, compress)
            for name, read in (("FastWARC", read_fastwarc), ("warcio", read_warcio)):
                seconds, responses = best_of(3, lambda: read(path), time.process_time)
                megabytes = sum(len(payload) for *_, payload in responses) / 1e6
                rows.append((f"{name}, {path.name} ({path.stat().st_size / 1e6:.0f} MB)", len(responses) / seconds,
                             megabytes / seconds))
    seconds, _ = best_of(1, lambda: [extract_text(f.html) for f in crawl], time.process_time)
    rows.append(("pysimhash_sql.html.extract_text (for scale)", len(crawl) / seconds, float("nan")))
    width = max(len(r[0]) for r in rows)
    print(f"{len(crawl)} HTML responses; per core (process CPU time)")
    print(f"{'reader':<{width}}  {'records/s':>10}  {'MB/s':>7}")
    for name, records, megabytes in rows:
        print(f"{name:<{width}}  {records:10,.0f}  {megabytes:7.0f}")


if __name__ == "__main__":
    main()
