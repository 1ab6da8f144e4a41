"""Web pages as documents: .html/.htm files and the HTML responses of WARC files,
each as its main-content text (pysimhash_sql.html), with its URL and fetch date.

A page without text to fingerprint (pysimhash_sql.html.MIN_TOKENS) is skipped,
and each source says how many it skipped; a file that cannot be read and a
WARC record that cannot be parsed are reported and skipped too.  All of it goes
to stderr; the other pages go in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .errors import UserError
from .output import skipped

HTML_SUFFIXES = (".html", ".htm")
WARC_SUFFIXES = (".warc", ".warc.gz")


def is_html(path: Path) -> bool:
    return path.name.lower().endswith(HTML_SUFFIXES)


def is_warc(path: Path) -> bool:
    return path.name.lower().endswith(WARC_SUFFIXES)


def is_page_source(path: Path) -> bool:
    """Whether a file holds web pages: one HTML page, or a WARC file of them."""
    return is_html(path) or is_warc(path)


def page_documents(name: str, path: Path) -> Iterator[tuple[str, str, str | None, str | None]]:
    """(name, text, url, fetched_at) of each page with text in an HTML or WARC
    file named `name`."""
    try:
        from .. import html
        from . import warc
    except ImportError:
        raise UserError(f"{name}: HTML and WARC files need the [html] extra: pip install 'pysimhash-sql[html]'") from None
    if is_html(path):
        try:
            pages = [(name, path.read_bytes(), None, None, None)]
        except OSError as e:
            skipped(f"cannot read {path}: {e.strerror}; skipped", "unreadable")
            return
    else:
        pages = ((r.record_id, r.body, r.charset, r.url, r.date)
                 for r in warc.html_responses(path, lambda message: skipped(message, "unreadable WARC data")))
    without_text = 0
    for page_name, body, charset, url, date in pages:
        text = html.extract_text(html.decode_html(body, charset), url)
        if text is None:
            without_text += 1
        else:
            yield page_name, text, url, date
    if without_text:
        skipped(f"{name}: {without_text} page{'s' * (without_text > 1)} without text to fingerprint "
                f"(fewer than {html.MIN_TOKENS} tokens of main content) skipped", "pages without text", without_text)

