"""The main-content text of an HTML page, and its fingerprint (docs/fingerprint-spec.md §5).

    extract_text(html, url=None) -> str | None
    simhash_html(html, url=None, version=3) -> int | None   # fingerprint(extract_text(...), version=)

A page without enough text to fingerprint (empty, navigation only, a JavaScript
shell) gives None: fingerprints of such pages would all be near-duplicates of
each other.  Needs the [html] extra (lxml).
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from functools import lru_cache

from lxml import etree

from . import hashing
from .text_spec import check_shingle_size, check_version

__all__ = ["HTML_SPEC_VERSION", "MIN_TOKENS", "decode_html", "extract_text", "simhash_html"]

# The version of spec §5 this module implements: any change to what text a page
# gives (rules, thresholds, normalisation, the lxml/libxml2 major) is a new version.
HTML_SPEC_VERSION = 1
# Fewer tokens (spec §3.2) than this in the extracted text: no fingerprint (None).
MIN_TOKENS = 20

# Elements that never hold main content: removed with everything inside them.
DROP_TAGS = (
    "head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed",
    "canvas", "video", "audio", "map", "button", "select", "textarea", "input", "nav", "aside",
    "footer", "header", "dialog", "menu", "time", "figure", "picture",
)
# Elements whose text runs on within the enclosing block (everything else is a block).
INLINE_TAGS = frozenset(
    "a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label mark q s samp small "
    "span strike strong sub sup tt u var wbr".split()
)
# ARIA roles of page furniture.
BOILERPLATE_ROLES = frozenset(
    "navigation banner complementary contentinfo search dialog alertdialog menu menubar toolbar".split()
)
# Words of class and id values (split at non-alphanumerics) that mark boilerplate.
# Furniture is removed first.  Layout words also name the regions around the main
# text ("widget Blog" on Blogger, "article-header" wrapping a whole article), so
# they are removed only away from the text anchor, found once furniture is gone.
FURNITURE_WORDS = frozenset(
    "ad ads adv advert adverts advertisement advertising sponsor sponsored promo promoted "
    "related recommended recommendations share sharing social disqus comment comments replies respond "
    "cookie cookies consent gdpr newsletter subscribe subscription signup popup breadcrumb "
    "breadcrumbs pagination pager byline dateline timestamp tags tagcloud noprint".split()
)
FURNITURE_PREFIXES = ("advert", "sponsor", "promo", "recommend", "comment", "cookie", "newsletter", "breadcrumb")
LAYOUT_WORDS = frozenset(
    "nav navbar navigation navheader navfooter menu sidebar footer masthead toolbar topbar banner "
    "widget widgets header modal".split()
)
LAYOUT_PREFIXES = ("sidebar", "widget", "navbar", "menu")
# Layout words of site chrome, which never holds the main text (page builders
# put articles into "widgets", and sites headlines and whole articles into
# "headers" and "modals").  Main text inside chrome means a page without any.
CHROME_WORDS = LAYOUT_WORDS - {"widget", "widgets", "header", "modal"}
CHROME_PREFIXES = ("sidebar", "navbar", "menu")
HIDDEN_CLASSES = frozenset("sr-only screen-reader-text visually-hidden visuallyhidden".split())
HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# A block whose words are mostly link text is navigation (menus, related links);
# prose and tables are kept whatever their links.
MAX_LINK_DENSITY = 0.5
PROSE_TAGS = frozenset("p pre blockquote h1 h2 h3 h4 h5 h6 table thead tbody tfoot tr td th".split()) | INLINE_TAGS
# Blocks of running text: their words count for the element that holds them.
PARAGRAPH_TAGS = frozenset("p pre blockquote li dd dt td h1 h2 h3 h4 h5 h6".split())
# The main content: descend from <body> into the child holding at least this share
# of the words, while there is one.
DESCEND_SHARE = 0.7
# Class-named furniture holding this share of the page's words may be a wrapper.
WRAPPER_SHARE = 0.5

# The text anchor is the best of this many largest text blocks.
ANCHOR_CANDIDATES = 10

# Where a block starts or ends (or a <br> stands): a character no parsed text holds
# (the parser turns NUL into U+FFFD), so the page's own newlines stay white space.
_BREAK = "\0"
_WORD = re.compile(r"[a-z0-9]+")
# URLs in the text are addresses, not content (and often carry session parameters).
_URL = re.compile(r"\b(?:https?://|www\.)\S*", re.IGNORECASE)


def decode_html(data: bytes, charset: str | None = None) -> str:
    """HTML bytes as text: a byte order mark, else `charset` (from the HTTP header),
    else a <meta> charset in the first 1024 bytes, else UTF-8 if the bytes are,
    else windows-1252 (spec §5.1)."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(codec, "replace")
    for name in (charset, _meta_charset(data[:1024])):
        codec = _codec(name)
        if codec:
            return data.decode(codec, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("windows-1252", "replace")


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)


def _meta_charset(head: bytes) -> str | None:
    match = _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else None


def _codec(name: str | None) -> str | None:
    """Python's codec for a charset label; as browsers do, latin-1 and ASCII mean
    windows-1252, and UTF-16 labels in an ASCII-compatible page mean UTF-8."""
    if not name:
        return None
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    return {"latin-1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252"}.get(
        codec, "utf-8" if codec.startswith("utf-16") else codec)


def _parse(html: str) -> etree._Element | None:
    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True)
    return etree.fromstring(html.encode("utf-8", "surrogatepass"), parser)


def _drop(el: etree._Element) -> None:
    """Removes el and what it holds, keeping the text that follows it."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        previous = el.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


LAYOUT, CHROME, FURNITURE, HIDDEN = 1, 2, 3, 4


@lru_cache(maxsize=4096)
def _class_kind(value: str | None) -> int:
    """HIDDEN, FURNITURE, CHROME, LAYOUT or 0: what a class or id value names."""
    attributes = (value or "").lower()
    words = _WORD.findall(attributes)
    if not HIDDEN_CLASSES.isdisjoint(attributes.split()):
        return HIDDEN
    if any(w in FURNITURE_WORDS or w.startswith(FURNITURE_PREFIXES) for w in words):
        return FURNITURE
    if any(w in CHROME_WORDS or w.startswith(CHROME_PREFIXES) for w in words):
        return CHROME
    return LAYOUT if any(w in LAYOUT_WORDS or w.startswith(LAYOUT_PREFIXES) for w in words) else 0


def _is_hidden(el: etree._Element) -> bool:
    """Hidden, or in an ARIA role of page furniture."""
    return (el.get("hidden") is not None or el.get("aria-hidden") == "true"
            or el.get("role") in BOILERPLATE_ROLES or bool(HIDDEN_STYLE.search(el.get("style") or "")))


def _remove_boilerplate(body: etree._Element) -> set:
    """Removes page furniture: by tag, role, visibility, and class/id words.

    Class words also name wrappers ("Page-ad-margins" around a whole page, an
    "article-header" holding the article), and ids are often made from a
    section's title (id="plpython-sharing"), so first only small furniture by
    class goes (less than WRAPPER_SHARE of the page's words); then the text anchor
    is found, and the rest of the furniture and layout by class or id goes, except
    the anchor and its ancestors.  Returns those of them that are site chrome."""
    etree.strip_elements(body, *DROP_TAGS, with_tail=False)
    for el in body.xpath(".//*[@hidden or @aria-hidden or @role or @style]"):
        if _is_hidden(el):
            _drop(el)
    total = _words(body)
    later = []
    for el in body.xpath(".//*[@class or @id]"):
        kind = _class_kind(el.get("class"))
        if kind == HIDDEN or (kind == FURNITURE and _words(el) < WRAPPER_SHARE * total):
            _drop(el)
        elif (kind := max(kind, _class_kind(el.get("id")))) and el.tag not in ("article", "main"):
            later.append((el, kind))
    anchor = _text_anchor(body, {el for el, _ in later})
    keep = {anchor, *anchor.iterancestors()}
    for el, _ in later:
        if el not in keep:
            _drop(el)
    return {el for el, kind in later if kind == CHROME and el in keep}


def _text_anchor(body: etree._Element, classed: set) -> etree._Element:
    """The element holding the most running text (paragraphs credited to their
    parent), each furniture or layout element around it halving its words; only
    the ANCHOR_CANDIDATES holding the most are weighed."""
    blocks = sorted(_text_blocks(body, credit_parent=True).items(), key=lambda item: -item[1])
    weighed = [(words * 0.5 ** sum(a in classed for a in (el, *el.iterancestors())), el)
               for el, words in blocks[:ANCHOR_CANDIDATES]]
    return max(weighed, key=lambda item: item[0], default=(0, body))[1]


def _text_blocks(body: etree._Element, credit_parent: bool) -> dict:
    """Words of running text outside links per block element that holds them; with
    credit_parent, a paragraph's (PARAGRAPH_TAGS) words go to its parent."""
    found: dict = {}
    for text in body.xpath(".//text()"):
        n = len(text.split())
        holder = text.getparent()
        if not n or holder is None:
            continue
        if text.is_tail:
            holder = holder.getparent()
        while holder.tag in INLINE_TAGS and holder.tag != "a":
            holder = holder.getparent()
        if holder.tag == "a":
            continue
        if credit_parent and holder.tag in PARAGRAPH_TAGS and holder is not body:
            holder = holder.getparent()
        found[holder] = found.get(holder, 0) + n
    return found


def _words(el: etree._Element) -> int:
    return len(el.xpath("string()").split())


def _link_lists(body: etree._Element) -> tuple[dict, set]:
    """The words each element holds outside link lists, and the link lists: blocks
    whose words are mostly link text (menus, lists of related links), found
    children first, so that a list inside an article does not hide the article."""
    words: dict = {}
    links: dict = {}
    found: set = set()
    for el in reversed(list(body.iter())):
        n = len(el.text.split()) if el.text else 0
        linked = 0
        for child in el:
            n += words[child] + (len(child.tail.split()) if child.tail else 0)
            linked += links[child]
        if el.tag == "a":
            linked = n
        elif n and linked > MAX_LINK_DENSITY * n and el.tag not in PROSE_TAGS and el is not body:
            found.add(el)
            n = linked = 0
        words[el] = n
        links[el] = linked
    return words, found


def _main_element(body: etree._Element, words: dict) -> etree._Element:
    """From <body>, down into the child holding DESCEND_SHARE of the words while there is one."""
    el = body
    while True:
        best = max(el, key=lambda child: words.get(child, 0), default=None)
        if best is None or words.get(best, 0) < DESCEND_SHARE * words[el]:
            return el
        el = best


def _text(el: etree._Element, skip: set = frozenset(), classed: set = frozenset()) -> tuple[str, str]:
    """The text of el without the elements in skip, and the part of it outside the
    elements in classed: blocks on lines of their own, URLs removed, white space
    collapsed, NFC (spec §5.4)."""
    parts: list[str] = []
    outside: list[str] = []
    inside = 0  # elements of classed around the current node
    walk = etree.iterwalk(el, events=("start", "end"))
    for event, node in walk:
        block = node.tag not in INLINE_TAGS
        if event == "start":
            inside += node in classed
            if block or node.tag == "br":
                parts.append(_BREAK)
            if node in skip:
                walk.skip_subtree()
            elif node.text:
                parts.append(node.text)
                if not inside:
                    outside.append(node.text)
        else:
            inside -= node in classed
            if block:
                parts.append(_BREAK)
            if node.tail and node is not el:
                parts.append(node.tail)
                if not inside:
                    outside.append(node.tail)
    return _normalized("".join(parts)), " ".join(outside)


def _normalized(text: str) -> str:
    """Lines between breaks, URLs removed, white space collapsed, NFC; no empty lines."""
    text = _URL.sub(" ", unicodedata.normalize("NFC", text))
    lines = (" ".join(line.split()) for line in text.split(_BREAK))
    return "\n".join(line for line in lines if line)


def _enough(text: str) -> bool:
    return len(hashing.tokenize(text)) >= MIN_TOKENS


def _fallback(body: etree._Element) -> str | None:
    """Text for a page whose main content is too short or lies in page furniture
    that a class names (spec §5.3): its largest <article>, <main> or role="main"
    element, else its largest single block of running text."""
    declared = body.xpath(".//article | .//main | .//*[@role='main']")
    blocks = _text_blocks(body, credit_parent=False)
    for best in (max(declared, key=_words, default=None), max(blocks, key=blocks.__getitem__, default=None)):
        text = "" if best is None else _text(best)[0]
        if _enough(text):
            return text
    return None


def extract_text(html: str | bytes, url: str | None = None) -> str | None:
    """The main-content text of a page (spec §5), or None when it has fewer than
    MIN_TOKENS tokens.  Bytes are decoded by decode_html; url is not used by
    version 1 of the spec (it is part of the signature for later versions)."""
    if isinstance(html, bytes | bytearray | memoryview):
        html = decode_html(bytes(html))
    root = _parse(html)
    body = None if root is None else root.find("body")
    if body is None:
        return None
    classed = _remove_boilerplate(body)
    words, link_lists = _link_lists(body)
    text, unclassed = _text(_main_element(body, words), link_lists, classed)
    return text if _enough(unclassed) else _fallback(body)


def simhash_html(html: str | bytes, url: str | None = None, shingle_size: int | None = None, *,
                 version: int = hashing.TEXT_SPEC_VERSION_LATEST) -> int | None:
    """hashing.fingerprint(extract_text(html, url), version=version) (default:
    the latest text spec, TEXT_SPEC_VERSION_LATEST), or None without text;
    ``shingle_size`` is version 1's (hashing.simhash(text, shingle_size)),
    ValueError with a later version."""
    check_shingle_size(shingle_size, check_version(version))
    text = extract_text(html, url)
    if text is None:
        return None
    return hashing.simhash(text, 3 if shingle_size is None else shingle_size) if version == 1 else \
        hashing.fingerprint(text, version=version)
