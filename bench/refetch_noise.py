"""A crawl corpus for bench_html.py: real HTML pages, each fetched again and again
with the noise a crawler sees (a library, not a benchmark).

The pages are Debian's HTML documentation (postgresql-doc-15: ~1,170 pages of one
DocBook template; python3-doc: ~530 Sphinx pages with their own sidebars), as
scripts/install-deps.sh installs them.  Each fetch puts the page into a news-site
template (one of three, chosen per page: semantic tags, telling class names, or
class names that tell nothing) and draws its noise afresh:

- a new URL (session and tracking parameters, a dated path), in the canonical link,
  og:url, a "share" line and every link of the template;
- a new timestamp in the header, the byline and the comments (<time> elements, as
  CMSs write them) and in the footer (plain text);
- rotated ads: a banner, one inside the article, two in the sidebar, from a pool;
- a reshuffled "related articles" sidebar: eight titles of other pages;
- comments below the article (id="comments" in every template): the original
  fetch has some, each re-fetch one more.

The gold main content of a page is its own content without its site's navigation
(DocBook's navheader/navfooter, Sphinx's body div): what an extractor should keep.
"""

from __future__ import annotations

import hashlib
import random
import re
from html import escape
from dataclasses import dataclass
from pathlib import Path

import lxml.html
from lxml import etree

SOURCES = {
    # name: (directory, the XPath of the gold main content within the page's body)
    "postgresql-doc-15": (
        Path("/usr/share/doc/postgresql-doc-15/html"),
        "//body/*[not(contains(@class, 'navheader') or contains(@class, 'navfooter'))]",
    ),
    "python3-doc": (Path("/usr/share/doc/python3.11/html"), "//div[@role='main']"),
}
ADS = [
    "Save 50% on cloud hosting this week only - start your free trial today",
    "The best noise-cancelling headphones of the year, now with free shipping",
    "Learn to code in 12 weeks: bootcamp places available, apply now",
    "Compare mortgage rates from 40 lenders in two minutes",
    "Your next holiday starts here: flights and hotels from 99 euros",
    "Upgrade your laptop: trade in your old device for credit",
    "Meal kits delivered weekly - first box half price",
    "Insurance that pays out in minutes, not weeks. Get a quote",
    "Fast VPN for every device, 30-day money-back guarantee",
    "Stream thousands of films: one month free for new members",
    "Office chairs your back will thank you for - winter sale",
    "Crypto made simple: buy, sell and store in one app",
]
COMMENTERS = ["alex_k", "Maria", "dbadmin42", "J. Smith", "kernelhacker", "Priya", "old_timer", "newbie99"]


@dataclass(frozen=True)
class Page:
    """A real page: where it comes from, its title, its body and its gold text."""

    source: str
    name: str
    title: str
    body: str  # the inner HTML of its <body>
    gold: str  # the text of its main content


@dataclass(frozen=True)
class Fetch:
    page: int  # index into the page list
    fetch: int  # 0: the original fetch, 1...: re-fetches
    url: str
    html: str


def load_pages(limit: int | None = None) -> list[Page]:
    """The real pages, in a fixed order; limit: an even sample of that many."""
    pages = []
    for source, (directory, gold_xpath) in SOURCES.items():
        if not directory.is_dir():
            raise SystemExit(f"{directory} is missing: run scripts/install-deps.sh (make deps) as root")
        for path in sorted(directory.rglob("*.html")):
            page = read_page(source, path.relative_to(directory).as_posix(), path.read_bytes(), gold_xpath)
            if page is not None:
                pages.append(page)
    if limit and limit < len(pages):
        pages = pages[:: len(pages) // limit][:limit]
    return pages


def read_page(source: str, name: str, data: bytes, gold_xpath: str) -> Page | None:
    root = lxml.html.document_fromstring(data)
    body = root.find("body")
    if body is None:
        return None
    title = " ".join(root.findtext(".//title", "").split()) or name
    gold = "\n".join(" ".join(e.text_content().split()) for e in body.xpath(gold_xpath))
    inner = (body.text or "") + "".join(etree.tostring(child, encoding="unicode") for child in body)
    return Page(source, name, title, inner, gold)


def sentences(pages: list[Page], rng: random.Random, n: int) -> list[str]:
    """n sentences of real prose, from the gold text of random pages (comment text)."""
    found = []
    while len(found) < n:
        candidates = [s for s in re.split(r"(?<=[.!?])\s+", rng.choice(pages).gold) if 8 <= len(s.split()) <= 40]
        if candidates:
            found.append(rng.choice(candidates))
    return found


def seeded(*parts) -> random.Random:
    return random.Random(hashlib.sha256(repr(parts).encode()).digest())


def fetches(pages: list[Page], refetches: int) -> list[Fetch]:
    """Every page's original fetch and its re-fetches."""
    return [Fetch(i, f, *render(pages, i, f)) for i in range(len(pages)) for f in range(refetches + 1)]


def render(pages: list[Page], index: int, fetch: int) -> tuple[str, str]:
    """(url, html) of a page's fetch number `fetch`: the same page, new noise."""
    page = pages[index]
    rng = seeded(page.source, page.name, fetch)
    slug = re.sub(r"\W+", "-", page.title.lower()).strip("-")[:60] or "page"
    day = 1 + fetch % 28
    url = f"https://news.example.com/2025/11/{day:02}/{slug}?session={rng.getrandbits(48):x}&utm_source=feed{fetch}"
    stamp = f"{['Mon', 'Tue', 'Wed', 'Thu', 'Fri'][fetch % 5]}, {day} November 2025 {rng.randrange(24):02}:{rng.randrange(60):02}"
    others = [p.title for j, p in enumerate(pages) if j != index]
    related = rng.sample(others, min(8, len(others)))
    ads = rng.sample(ADS, 4)
    comments_rng = seeded(page.source, page.name, "comments")  # the same thread, growing
    thread = [(comments_rng.choice(COMMENTERS), " ".join(sentences(pages, comments_rng, comments_rng.randint(1, 3))))
              for _ in range(comments_rng.randint(2, 4) + fetch)]
    template = TEMPLATES[int(hashlib.sha256(page.name.encode()).hexdigest(), 16) % len(TEMPLATES)]
    session = url.split("?", 1)[1]
    return url, template(page, url, session, stamp, related, ads, thread, in_article_ad(page.body, ads[1], session))


def in_article_ad(body: str, ad: str, session: str) -> str:
    """The page's body with an ad after its third paragraph (or at its end)."""
    ad_html = f'<div class="{{ad}}"><a href="https://ads.example.net/click?{session}">{ad}</a></div>'
    parts = body.split("</p>", 3)
    if len(parts) < 4:
        return body + ad_html
    return "</p>".join(parts[:3]) + "</p>" + ad_html + parts[3]


def links(titles: list[str], session: str) -> str:
    return "".join(f'<li><a href="/article/{hashlib.sha256(t.encode()).hexdigest()[:8]}?{session}">{escape(t)}</a></li>'
        for t in titles)


def comment_list(thread: list[tuple[str, str]], stamp: str, cls: dict) -> str:
    return "".join(
        f'<div class="{cls["comment"]}"><span class="{cls["author"]}">{who}</span> '
        f'<time class="{cls["date"]}">{stamp}</time><p>{escape(text)}</p>'
        f'<a href="#reply-{n}">Reply</a> <a href="#report-{n}">Report</a></div>'
        for n, (who, text) in enumerate(thread)
    )


def head(page: Page, url: str) -> str:
    return (f'<head><meta charset="utf-8"><title>{escape(page.title)} | Example News</title>'
            f'<link rel="canonical" href="{url}"><meta property="og:url" content="{url}">'
            '<script>window.dataLayer=[];function track(){dataLayer.push(arguments)}</script>'
            '<style>.ad{float:right}</style></head>')


NAV = ["Home", "World", "Technology", "Databases", "Programming", "Opinion", "Jobs", "Subscribe", "Sign in"]
FOOTER = "About us | Contact | Privacy policy | Cookie settings | Terms of use | Advertise with us"


def page_html(page, url, session, stamp, related, ads, thread, body, cls: dict, tags: dict) -> str:
    """The news-site template, with class names and tags from cls and tags."""
    ad = lambda text: f'<div class="{cls["ad"]}"><a href="https://ads.example.net/click?{session}">{text}</a></div>'  # noqa: E731
    nav = "".join(f'<li><a href="/{n.lower()}?{session}">{n}</a></li>' for n in NAV)
    return (
        f"<!DOCTYPE html><html lang='en'>{head(page, url)}<body>"
        f'<{tags["header"]} class="{cls["header"]}"><div class="{cls["logo"]}">Example News</div>'
        f'<{tags["nav"]} class="{cls["nav"]}"><ul>{nav}</ul></{tags["nav"]}>'
        f'<div class="{cls["date"]}"><time>{stamp}</time></div>{ad(ads[0])}</{tags["header"]}>'
        f'<div class="{cls["layout"]}"><{tags["main"]} class="{cls["main"]}">'
        f'<{tags["article"]} class="{cls["article"]}"><div class="{cls["byline"]}">By Staff Writer - Updated <time>{stamp}</time></div>'
        f'{body.replace("{ad}", cls["ad"])}'
        f'<div class="{cls["share"]}">Share this article: <a href="{url}">{url}</a></div></{tags["article"]}>'
        f'<div id="comments" class="{cls["comments"]}"><h3>{len(thread)} comments</h3>{comment_list(thread, stamp, cls)}'
        f'<form><textarea name="comment"></textarea><button>Post comment</button></form></div>'
        f'</{tags["main"]}><{tags["aside"]} class="{cls["sidebar"]}">{ad(ads[2])}'
        f'<div class="{cls["related"]}"><h3>Related articles</h3><ul>{links(related, session)}</ul></div>'
        f'{ad(ads[3])}</{tags["aside"]}></div>'
        f'<{tags["footer"]} class="{cls["footer"]}"><p>{FOOTER}</p><p>Page generated {stamp}</p>'
        f'<p>&copy; 2025 Example News Ltd.</p></{tags["footer"]}></body></html>'
    )


ROLES = ["header", "logo", "nav", "date", "ad", "layout", "main", "article", "byline", "share",
         "comments", "comment", "author", "sidebar", "related", "footer"]
SEMANTIC_TAGS = {"header": "header", "nav": "nav", "main": "main", "article": "article", "aside": "aside", "footer": "footer"}
DIV_TAGS = dict.fromkeys(SEMANTIC_TAGS, "div")


def semantic(*args) -> str:
    """HTML5 sectioning tags and telling class names."""
    return page_html(*args, cls={r: r for r in ROLES}, tags=SEMANTIC_TAGS)


def telling_divs(*args) -> str:
    """Only divs, but with the class names of a typical CMS theme."""
    cls = {r: f"site-{r}" for r in ROLES} | {"ad": "advertisement", "sidebar": "sidebar widget-area",
                                                        "comments": "comments-area", "comment": "comment-body"}
    return page_html(*args, cls=cls, tags=DIV_TAGS)


def opaque_divs(*args) -> str:
    """Only divs, with generated class names that say nothing (CSS-in-JS style); the
    comment thread still has id="comments", the anchor "N comments" links point to."""
    cls = {r: "css-" + hashlib.sha256(r.encode()).hexdigest()[:6] for r in ROLES}
    return page_html(*args, cls=cls, tags=DIV_TAGS)


TEMPLATES = [semantic, telling_divs, opaque_divs]
