"""pysimhash_sql.html: the main-content text of HTML pages (docs/fingerprint-spec.md §5)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from toolbox import ROOT
from toolbox.readme import readme_blocks
from toolbox.web_pages import ARTICLES, JS_SHELL, article_page, index_page, nav_only_page

from pysimhash_sql import hashing
from pysimhash_sql import html as pages
from pysimhash_sql.html import HTML_SPEC_VERSION, MIN_TOKENS, decode_html, extract_text, simhash_html

SPEC = ROOT / "docs" / "fingerprint-spec.md"


def test_readme_example() -> None:
    result = subprocess.run([sys.executable, "-c", readme_blocks("Web pages: HTML and WARC", "python", "docs/cli.md")[0]],
                            capture_output=True, text=True, check=True)
    text, fingerprint = result.stdout.splitlines()
    assert text.startswith("The harbour board has published") and "Home" not in text and "09:41" not in text
    assert int(fingerprint) == hashing.simhash_v3(text)  # the latest text spec by default


def test_main_content_is_the_article_without_page_furniture() -> None:
    url, html = article_page("harbour")
    text = extract_text(html, url)
    title, paragraphs = ARTICLES["harbour"]
    assert text.splitlines() == [title, *paragraphs]  # one line per block, in order


@pytest.mark.parametrize("key", sorted(ARTICLES))
def test_refetches_with_new_noise_give_the_same_text(key: str) -> None:
    """New URL, timestamp, ads, related-articles sidebar and one more comment each time."""
    first = extract_text(*reversed(article_page(key, 0)))
    for fetch in range(1, 5):
        url, html = article_page(key, fetch)
        assert html != article_page(key, 0)[1]
        assert extract_text(html, url) == first
        assert simhash_html(html, url) == simhash_html(article_page(key, 0)[1])


def test_different_articles_on_one_template_stay_apart() -> None:
    fingerprints = [simhash_html(article_page(key)[1]) for key in sorted(ARTICLES)]
    for i, a in enumerate(fingerprints):
        for b in fingerprints[i + 1:]:
            assert hashing.hamming_distance(a, b) > 3


def test_simhash_html_is_simhash_of_the_text() -> None:
    url, html = article_page("orchard", 2)
    for shingle_size in (1, 3, 5):
        assert simhash_html(html, url, shingle_size, version=1) == hashing.simhash(extract_text(html, url), shingle_size)


@pytest.mark.parametrize("page", [
    "", "   ", "<html></html>", "<html><body></body></html>", JS_SHELL,
    nav_only_page("sport"), nav_only_page("weather"),
    "<html><body><p>Too short to fingerprint: a handful of words.</p></body></html>",
    "<html><body><script>" + "var x = 1; " * 500 + "</script></body></html>",
])
def test_pages_without_text_have_no_fingerprint(page: str) -> None:
    assert extract_text(page) is None
    assert simhash_html(page) is None


def test_the_minimum_is_counted_in_fingerprint_tokens() -> None:
    words = " ".join(f"w{i}" for i in range(MIN_TOKENS))
    assert extract_text(f"<p>{words}</p>") == words
    shorter = words.rsplit(" ", 1)[0]
    assert extract_text(f"<p>{shorter}</p>") is None
    assert extract_text(f"<p>{shorter} -- ... !!!</p>") is None  # punctuation is not a token


def test_a_link_list_declared_main_content_falls_back_to_it() -> None:
    text = extract_text(index_page("sport"))
    assert text.splitlines()[0] == "sport" and "Story number 11 in the sport pages" in text
    assert simhash_html(index_page("sport")) != simhash_html(index_page("weather"))
    assert "Harbour Street" not in text


def test_fallback_to_the_largest_block_when_the_main_text_is_site_chrome() -> None:
    # The only running text outside links sits in a footer; the page's own text is one block.
    story = " ".join(ARTICLES["library"][1])
    html = f"""<body><div class="footer"><p>{ARTICLES['harbour'][1][0]}</p></div>
               <div><a href="/1">one</a> <a href="/2">two</a> {story}</div></body>"""
    assert extract_text(html) == f"one two {story}"


def test_class_names_of_furniture_and_wrappers() -> None:
    story = "".join(f"<p>{p}</p>" for p in ARTICLES["orchard"][1])
    extra = "<p>Sponsored: the best garden tools of the year, now on sale in every store in town.</p>"
    page = f"""<body><div class="Page-ad-margins"><div class="article-header"><h1>Orchard</h1>{story}</div>
               <div class="sponsored-content">{extra}</div><div class="widget-area">{extra}</div></div></body>"""
    text = extract_text(page)
    assert text == "\n".join(["Orchard", *ARTICLES["orchard"][1]])


def test_urls_timestamps_and_hidden_text_are_not_content() -> None:
    paragraph = ARTICLES["library"][1][0]
    html = f"""<body><article><p>{paragraph} See https://example.org/page?session=42 or www.example.org.</p>
               <p>Posted <time>Monday 3 November</time>.</p><p hidden>secret one</p>
               <p style="display: none">secret two</p><span class="sr-only">secret three</span></article></body>"""
    text = extract_text(html)
    assert text == f"{paragraph} See or"  # (and "Posted ." is too small a share to keep)


def test_text_is_normalised_nfc_and_white_space_collapsed() -> None:
    words = " ".join(f"mot{i}" for i in range(MIN_TOKENS))
    composed = extract_text(f"<p>caf\u00e9   {words}\n\t end</p>")
    decomposed = extract_text(f"<p>cafe\u0301 {words} end</p>")
    assert composed == decomposed == f"caf\u00e9 {words} end"


def test_bytes_are_decoded_as_a_browser_would() -> None:
    url, html = article_page("harbour")
    text = extract_text(html)
    assert extract_text(html.encode("utf-8"), url) == text
    latin = html.replace('<meta charset="utf-8">', '<meta charset="iso-8859-1">').replace("ferry", "f\u00e9rry")
    assert "f\u00e9rry" in extract_text(latin.encode("latin-1"))
    assert decode_html(b"\xef\xbb\xbfcaf\xc3\xa9") == "caf\u00e9"  # a byte order mark wins
    assert decode_html("caf\u00e9".encode("cp1252"), charset="windows-1252") == "caf\u00e9"  # then HTTP
    assert decode_html('<meta charset="utf-8">caf\u00e9'.encode("cp1252"), charset="cp1252").endswith("caf\u00e9")
    assert decode_html("caf\u00e9".encode("cp1252")) == "caf\u00e9"  # not UTF-8, no label: windows-1252
    assert decode_html(b"caf\xc3\xa9", charset="no-such-charset") == "caf\u00e9"


@pytest.mark.parametrize("html", [
    "<div>" * 20_000 + "deep " * 30 + "</div>" * 20_000,
    "<p>" + "x" * 2_000_000 + "</p>",
    bytes(range(256)) * 100,
    "<p>" + "\ud800 lone surrogate " * 30 + "</p>",
    "<table>" + "<tr><td>cell text here</td>" * 3000,
    '<div class="' + "comment " * 10_000 + '">' + "word " * 50 + "</div>",
])
def test_hostile_pages_give_text_or_none(html) -> None:
    text = extract_text(html)
    assert text is None or isinstance(text, str) and len(hashing.tokenize(text)) >= MIN_TOKENS


def test_the_spec_states_the_version_and_the_minimum() -> None:
    section = SPEC.read_text("utf-8").split("## 5.", 1)[1]
    assert re.search(rf"\bversion {HTML_SPEC_VERSION}\b", section)
    assert re.search(rf"\b{MIN_TOKENS} tokens\b", section)
    for name in ("DROP_TAGS", "FURNITURE_WORDS", "LAYOUT_WORDS", "MAX_LINK_DENSITY", "DESCEND_SHARE"):
        assert name in section, f"the spec names {name}, whose value is part of version {HTML_SPEC_VERSION}"
        assert hasattr(pages, name)
