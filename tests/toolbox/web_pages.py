"""Web pages for the HTML and WARC tests, written for them: three short articles
in a news-site template, fetched again and again with the noise a crawler sees
(a new URL, a new timestamp, rotated ads, a reshuffled related-articles sidebar,
one more comment), and pages that have no text to fingerprint."""

from __future__ import annotations

import random
from html import escape

ARTICLES = {
    "harbour": (
        "New ferry timetable for the harbour",
        [
            "The harbour board has published a new ferry timetable that starts on the first Monday of spring. "
            "Boats to the northern islands will leave every forty minutes instead of every hour.",
            "Commuters had asked for earlier departures for years, and the first crossing will now leave at "
            "half past five in the morning, which lets workers reach the mainland before the factories open.",
            "The board also plans a second landing stage next to the fish market, paid for by a regional grant, "
            "so that two ferries can load at the same time during the summer season.",
        ],
    ),
    "library": (
        "Town library extends its opening hours",
        [
            "From next month the town library will stay open until nine in the evening on weekdays, "
            "and on Sundays it will open its reading room for the first time in its history.",
            "The council agreed to fund two more librarians after a survey showed that most visitors "
            "come after work and often found the doors already closed.",
            "A new study corner with long tables and quiet lamps is being built on the upper floor, "
            "where the old archive of newspapers used to be stored.",
        ],
    ),
    "orchard": (
        "Volunteers replant the old orchard",
        [
            "About sixty volunteers spent the weekend replanting the old orchard behind the primary school, "
            "where storms had uprooted many of the apple and pear trees last winter.",
            "Each class of the school adopted a row of young trees and will water them through the dry months, "
            "keeping a diary of blossoms and the first fruit for a project on local history.",
            "The gardeners chose old regional varieties that resist disease without spraying, "
            "grafted from the last healthy trees of the original orchard.",
        ],
    ),
}
ADS = ["Cheap flights to the sun, book today", "Win a new bicycle in our prize draw",
       "Fresh coffee delivered to your door", "Learn a language in ten minutes a day",
       "Solar panels at half the usual price", "Comfortable shoes for long walks"]
RELATED = ["Bridge repairs finish early", "Market square gets new benches", "School choir wins regional prize",
           "Storm damage along the coast road", "Bakery celebrates fifty years", "Cycling path opens by the river",
           "Museum shows old fishing boats", "Hospital adds a children's ward"]
COMMENTS = ["About time, the old timetable was useless for shift workers.",
            "I hope they keep the late boat on Saturdays as well.",
            "Great news for the whole town, thanks to everyone involved.",
            "Will there be parking near the new landing stage?",
            "My grandmother remembers when the first trees were planted there."]


def article_page(key: str, fetch: int = 0) -> tuple[str, str]:
    """(url, html) of an article's fetch number `fetch`: the same article, new noise."""
    title, paragraphs = ARTICLES[key]
    rng = random.Random(f"{key}/{fetch}")
    url = f"https://news.example.org/{key}?session={rng.getrandbits(40):x}&ref=feed{fetch}"
    stamp = f"2025-11-{1 + fetch:02}T{rng.randrange(24):02}:{rng.randrange(60):02}:00Z"
    ads = rng.sample(ADS, 3)
    related = rng.sample(RELATED, 5)
    comments = COMMENTS[: 2 + fetch]
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs[:2])
    body += f'<div class="ad-slot"><a href="https://ads.example.net/?{url}">{ads[0]}</a></div>'
    body += "".join(f"<p>{escape(p)}</p>" for p in paragraphs[2:])
    return url, f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)} | Town News</title>
<link rel="canonical" href="{url}"><script>var tracking = "{url}";</script>
<style>body {{ font-family: serif; }}</style></head>
<body>
<header><a href="/">Town News</a><nav><ul><li><a href="/local">Local</a></li><li><a href="/sport">Sport</a></li>
<li><a href="/weather">Weather</a></li><li><a href="/jobs">Jobs</a></li></ul></nav>
<p>Today is <time datetime="{stamp}">{stamp}</time></p></header>
<div class="banner-ad"><a href="https://ads.example.net/top">{ads[1]}</a></div>
<main><article><h1>{escape(title)}</h1>
<div class="byline">By our reporter, updated <time datetime="{stamp}">{stamp}</time></div>
{body}
<div class="share">Share this article: <a href="{url}">{url}</a></div>
</article>
<section id="comments"><h2>{len(comments)} comments</h2>
{"".join(f'<div class="comment"><p>{escape(c)}</p><a href="#reply">Reply</a></div>' for c in comments)}
</section></main>
<aside class="sidebar"><h2>Related articles</h2><ul>
{"".join(f'<li><a href="/story/{i}?s={url}">{escape(r)}</a></li>' for i, r in enumerate(related))}
</ul><div class="ad"><a href="https://ads.example.net/side">{ads[2]}</a></div></aside>
<footer><p>Town News, 1 Harbour Street. Contact us. Privacy. Cookies.</p>
<p>Page generated {stamp}</p></footer>
</body></html>"""


def section_links(section: str) -> str:
    return "".join(f'<li><a href="/{section}/{i}">Story number {i} in the {section} pages</a></li>' for i in range(12))


def nav_only_page(section: str) -> str:
    """A page of links and site furniture only: nothing to fingerprint."""
    return f"""<html><head><title>{section} | Town News</title></head><body>
<div class="top"><a href="/">Town News</a> <a href="/local">Local</a> <a href="/sport">Sport</a></div>
<div class="list"><h1>{section}</h1><ul>{section_links(section)}</ul></div>
<div class="bottom"><p>Town News, 1 Harbour Street. Contact us. Privacy. Cookies.</p></div></body></html>"""


def index_page(section: str) -> str:
    """A page whose declared main content (<main>) is a list of links."""
    return f"""<html><head><title>{section} | Town News</title></head><body>
<nav><a href="/">Town News</a> <a href="/local">Local</a> <a href="/sport">Sport</a></nav>
<main><h1>{section}</h1><ul>{section_links(section)}</ul></main>
<footer><p>Town News, 1 Harbour Street. Contact us. Privacy. Cookies.</p></footer></body></html>"""


JS_SHELL = """<!DOCTYPE html><html><head><title>App</title><script src="/bundle.js"></script></head>
<body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>"""


def warc_record(record_type, url: str | None, date: str, http: bytes | None):
    """A FastWARC record: a response or request carrying `http` (status line,
    headers and body), or a warcinfo record."""
    from fastwarc.warc import WarcRecord

    record = WarcRecord()
    record.init_headers(record_type)
    if url:
        record.headers["WARC-Target-URI"] = url
    record.headers["WARC-Date"] = date
    if http is None:
        record.headers["Content-Type"] = "application/warc-fields"
        record.set_bytes_content(b"software: the tests\r\n")
    else:
        record.headers["Content-Type"] = "application/http; msgtype=response"
        record.set_bytes_content(http)
        record.is_http = True
    return record


def http_response(body: bytes, content_type: str = "text/html; charset=utf-8", status: str = "200 OK") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


# Bytes that are no WARC record: what a torn write or a bad disk leaves behind.
CORRUPT_RECORD = b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: twelve\r\n\r\nnot a record\r\n\r\n"


def write_warc(path, records: list, compress: bool) -> None:
    """Writes records (FastWARC records, or raw bytes written as they are) to a
    WARC file, each record its own gzip member when compress."""
    from fastwarc.stream_io import GzipWriter

    with open(path, "wb") as out:
        for record in records:
            if isinstance(record, bytes):
                out.write(record)
            elif compress:
                writer = GzipWriter(out)
                record.write(writer)
                writer.finish()
            else:
                record.write(out)
