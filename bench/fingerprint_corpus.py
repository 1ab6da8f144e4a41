"""The corpus of bench_fingerprint_quality.py: documents of real text in many languages
that nobody here wrote (a library, not a benchmark: scripts/bench.sh runs bench_*.py).

The packages are Debian's translated manual pages and documentation, and for
Arabic and Thai (which Debian has no translated manuals for) and Korean (few)
the translated message catalogs of LibreOffice, Firefox and Thunderbird. scripts/install-deps.sh
--bench downloads and unpacks them under build/fingerprint-corpus/packages; this
module turns every file of them into plain text:

- manual pages: roff stripped by a small stripper (requests dropped, macro
  arguments kept, escapes resolved) -- fast, and close enough to what `man` shows;
- GNOME help (Mallard .page) and HTML help: the text of the elements, blocks on
  lines of their own, the <info> metadata (credits, licence) left out;
- message catalogs (.mo; Fluent .ftl and .properties inside .xpi language packs):
  the translated strings in file order, cut into pages of seeded random lengths.

Some documents belong to a FAMILY: pages of one project that share a template
around different content, where a fingerprint that a template (or numbers)
decides puts clearly different pages together. The family is "kind:project":

- changelog: successive releases' sections of a changelog (git's shortlog of
  every release, CPython's changelog), a release's section a document;
- release-notes: successive releases' notes (git's RelNotes, perl's perldelta,
  PostgreSQL's and Python's release notes);
- api: API reference pages of one project (Python's library and C API, the SQL
  commands of PostgreSQL, GLib/GIO/GObject and GTK 3's gtk-doc, perl's pod pages);
- tables: tables of figures (the character-set manual pages, iso_8859-*, koi8-*,
  cp125*, in every language);
- catalogue: pages real sites make that differ in their items and numbers (price
  lists, results tables, product pages), generated (seeded) from the words of the
  corpus's English pages, their numbers drawn at random.

A document is (language, source, text, family); the list is cached, gzipped JSON, in
build/fingerprint-corpus/documents-<CORPUS_VERSION>-<digest of the package names>.json.gz. Exact duplicates
(one page in two packages) are kept once; texts are cut at a line end before
MAX_CHARS characters (a few man pages run to 300,000).
"""

from __future__ import annotations

import gettext
import gzip
import hashlib
import html
import io
import json
import random
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import lxml.html

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = ROOT / "build" / "fingerprint-corpus"
PACKAGES_DIR = CORPUS_DIR / "packages"
# Bump when the extraction changes: the cache file is named by it.
CORPUS_VERSION = 5
MAX_CHARS = 30_000
MIN_CHARS = 200
# Catalog pages: lengths drawn uniformly from this range (both length buckets).
CATALOG_PAGE_CHARS = (800, 6_000)
# Changelog pages: a release's section, consecutive sections joined up to a
# length drawn from this range (seeded); long ones are clipped as every document.
CHANGELOG_PAGE_CHARS = (2_000, 20_000)
# Generated catalogue pages of each template, and the rows of a page.
CATALOGUE_PAGES = 200
CATALOGUE_ROWS = (12, 60)
# Vocabulary of the catalogue pages: words of the corpus's English documents.
VOCABULARY_WORDS = re.compile(r"\b[a-z]{4,10}\b")
VOCABULARY_SIZE = 4_000

# Directory names of languages -> the labels the tables use.
LANGUAGE_LABELS = {"C": "en", "zh_CN": "zh", "zh_TW": "zh-tw", "pt_BR": "pt-br", "sr@latin": "sr-latn"}


@dataclass(frozen=True)
class Document:
    lang: str
    source: str
    text: str
    family: str = ""  # "kind:project" of a family of pages sharing a template, "" for none

    @property
    def family_kind(self) -> str:
        return self.family.split(":", 1)[0]


def language(name: str) -> str:
    return LANGUAGE_LABELS.get(name, name.split(".")[0].split("@")[0].lower().replace("_", "-"))


# -- roff ---------------------------------------------------------------------------

# Macros whose arguments are text (man(7) and mdoc(7)); every other request is dropped.
_TEXT_MACROS = frozenset(
    "SH SS B I BI BR IB IR RB RI SM SB IP TP HP Nm Nd Fl Ar Op Xr Pa Dv Sh Ss It Em Sy Li Cm Ic Va Fn Fa Ft "
    "Dq Sq Ql Qq Pq Ev Er Tn Ux At Bx Nx Fx Ox Ms An Lk Mt UR UE MT ME Lb Vt Ot".split()
)
_SPECIAL = {
    "em": "\u2014", "en": "\u2013", "hy": "-", "lq": "\u201c", "rq": "\u201d", "oq": "\u2018", "cq": "\u2019",
    "aq": "'", "dq": '"', "bu": "\u2022", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122", "mi": "-", "pl": "+",
    "mu": "\u00d7", "di": "\u00f7", "<=": "\u2264", ">=": "\u2265", "->": "\u2192", "<-": "\u2190", "ti": "~",
    "ha": "^", "rs": "\\", "ga": "`", "aa": "\u00b4", "sl": "/", "ba": "|", "dg": "\u2020", "de": "\u00b0",
}
_ESCAPE = re.compile(
    r"\\(?:f(?:\[[^\]]*\]|\(..|.)|\((..)|\[([^\]]*)\]|\*(?:\[[^\]]*\]|\(..|.)|s[-+]?(?:\d+|\(\d\d|\[\d+\])"
    r"|[nkgm](?:\[[^\]]*\]|\(..|.)|[hvwlLDxNbobu]'[^']*'|(.))"
)


def _escape(m: re.Match) -> str:
    two, bracket, single = m.group(1), m.group(2), m.group(3)
    if two is not None or bracket is not None:
        name = two if two is not None else bracket
        if name.startswith("u") and len(name) >= 5:  # \[u00E9]
            try:
                return chr(int(name[1:].split("_")[0], 16))
            except ValueError:
                return ""
        return _SPECIAL.get(name, "")
    if single is None:
        return ""  # fonts, strings, sizes, registers, drawing
    return {"-": "-", "e": "\\", " ": " ", "~": " ", "0": " ", "t": "\t", "\\": "\\", "'": "\u00b4", "`": "`",
            '"': ""}.get(single, "" if single in "&|^c%:!zd{}rupa/,)" else single)


def roff_text(source: str) -> str:
    """The running text of a manual page's roff source."""
    out: list[str] = []
    skipping_definition = False
    for line in source.splitlines():
        if skipping_definition:
            skipping_definition = line.strip() != ".."
            continue
        comment = line.find('\\"')
        if comment >= 0 and not line[comment - 1 : comment] == "\\":
            line = line[:comment]
        if line[:1] in (".", "'"):
            parts = line[1:].strip().split(None, 1)
            if not parts:
                continue
            if parts[0] in ("de", "de1", "am", "ig"):
                skipping_definition = True
                continue
            if parts[0] not in _TEXT_MACROS or len(parts) < 2:
                continue
            line = parts[1].replace('"', "")
        line = _ESCAPE.sub(_escape, line).strip()
        if line:
            out.append(line)
    return "\n".join(out)


# -- XML / HTML -----------------------------------------------------------------------

_BLOCK_TAG = re.compile(
    r"<(/?)(p|div|h[1-6]|li|tr|br|pre|td|th|table|dt|dd|title|item|section|screen|code|note|steps|list|desc)\b",
    re.IGNORECASE,
)
_MALLARD_INFO = re.compile(r"<info\b.*?</info>", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in _BLANK_LINES.sub("\n", text).splitlines() if line.strip())


def mallard_text(source: str) -> str:
    """The text of a Mallard page (GNOME help), without its <info> metadata."""
    return _lines(html.unescape(_TAG.sub("", _BLOCK_TAG.sub(r"\n<\1\2", _MALLARD_INFO.sub("", source)))))


def html_text(data: bytes) -> str:
    """The text of an HTML page's body, blocks on lines of their own."""
    source = _XML_DECLARATION.sub("", data.decode("utf-8", "replace"))
    doc = lxml.html.fromstring(_BLOCK_TAG.sub(r"\n<\1\2", source) or "<html/>")
    for el in doc.xpath("//script|//style|//head"):
        el.drop_tree()
    return _lines(doc.text_content())


# -- message catalogs -----------------------------------------------------------------

_FLUENT_ENTRY = re.compile(r"^\s*[-\w.]+\s*=\s*(.*)$")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\d*\$?[sdSD]|&[\w.]+;|<[^>]*>")


def fluent_strings(source: str) -> Iterator[str]:
    """The values of a Fluent (.ftl) or .properties file, in file order."""
    for line in source.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        m = _FLUENT_ENTRY.match(line)
        value = (m.group(1) if m else line).strip()
        value = _PLACEHOLDER.sub(" ", value).strip()
        if value and not value.startswith(("[", "*")):
            yield value


def mo_strings(data: bytes) -> Iterator[str]:
    """The translated strings of a .mo catalog, in file order."""
    catalog = gettext.GNUTranslations(io.BytesIO(data))._catalog  # noqa: SLF001 (no public accessor)
    for key, value in catalog.items():
        if (key[0] if isinstance(key, tuple) else key) and isinstance(value, str) and value.strip():
            yield _PLACEHOLDER.sub(" ", value).strip()


def catalog_pages(strings: Iterable[str], seed: str) -> Iterator[str]:
    """Consecutive strings joined one a line into pages of seeded random lengths."""
    rng = random.Random(seed)
    target = rng.randint(*CATALOG_PAGE_CHARS)
    page: list[str] = []
    size = 0
    for s in strings:
        page.append(s)
        size += len(s) + 1
        if size >= target:
            yield "\n".join(page)
            page, size, target = [], 0, rng.randint(*CATALOG_PAGE_CHARS)
    if size >= MIN_CHARS:
        yield "\n".join(page)


# -- the packages -----------------------------------------------------------------------


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


# The manual pages that are tables of a character set's codes.
_CHARSET_PAGE = re.compile(r"(iso[-_]8859[-_]\d+|koi8-[ru]|cp125\d|armscii-8|ascii|charsets)\.7(\.gz)?")


def _man_pages(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("*/usr/share/man/**/*")):
        if path.is_symlink() or not path.is_file() or not path.parent.name.startswith("man"):
            continue
        rel = path.relative_to(root)
        lang_dir = rel.parts[4] if not rel.parts[4].startswith("man") else "en"
        source = _read(path).decode("utf-8", "replace")
        if source.lstrip().startswith(".so "):
            continue  # a link to another page
        family = "tables:charsets" if _CHARSET_PAGE.fullmatch(path.name) else ""
        yield Document(language(lang_dir), "man:" + "/".join(rel.parts[:1] + rel.parts[4:]), roff_text(source), family)


def _help_pages(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("*/usr/share/help/*/*/*.page")):
        text = mallard_text(path.read_text("utf-8", "replace"))
        yield Document(language(path.parts[-3]), f"help:{path.parts[-3]}/{path.parts[-2]}/{path.name}", text)


def _html_pages(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("libreoffice-help-*/usr/share/libreoffice/help/*/**/*.html")):
        lang = path.relative_to(root).parts[5]
        yield Document(language(lang), "lo-help:" + str(path.relative_to(root)), html_text(path.read_bytes()))
    for path in sorted(root.glob("debian-faq-*/usr/share/doc/debian/FAQ/*/*.html")):
        yield Document(language(path.parts[-2]), "faq:" + path.name, html_text(path.read_bytes()))


def _catalog_pages(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("libreoffice-l10n-*/**/*.mo")):
        lang = path.relative_to(root).parts[0].rsplit("-", 1)[1]
        for i, page in enumerate(catalog_pages(mo_strings(path.read_bytes()), str(path.relative_to(root)))):
            yield Document(language(lang), f"catalog:{path.relative_to(root)}#{i}", page)
    for path in sorted(root.glob("*-l10n-*/**/*.xpi")):
        lang = path.relative_to(root).parts[0].rsplit("-", 1)[1]
        with zipfile.ZipFile(path) as z:
            for name in sorted(n for n in z.namelist() if n.endswith((".ftl", ".properties"))):
                strings = fluent_strings(z.read(name).decode("utf-8", "replace"))
                for i, page in enumerate(catalog_pages(strings, f"{path.name}/{name}")):
                    yield Document(language(lang), f"catalog:{path.parts[-1]}/{name}#{i}", page)


# -- families -----------------------------------------------------------------------------

_POD_CODE = re.compile(r"[A-Z]<(?:<+\s(.*?)\s>+|([^<>]*))>")


def pod_text(source: str) -> str:
    """The text of a perl pod page: headings' text kept, other commands dropped,
    formatting codes (C<...>, L<...>, C<< ... >>) resolved to their text."""
    out = []
    skipping = False
    for line in source.splitlines():
        if line.startswith("="):
            command, _, rest = line[1:].partition(" ")
            skipping = command == "begin" or (skipping and command != "end")
            if command.startswith(("head", "item")) and rest.strip():
                line = rest
            else:
                continue
        if skipping:
            continue
        for _ in range(3):  # nested codes
            line = _POD_CODE.sub(lambda m: (m.group(1) or m.group(2) or "").split("|")[-1], line)
        if line.strip():
            out.append(line.strip())
    return "\n".join(out)


def sections(text: str, heading: re.Pattern, seed: str) -> Iterator[str]:
    """text cut before every line that matches heading, consecutive sections joined
    up to a length drawn from CHANGELOG_PAGE_CHARS (seeded)."""
    rng = random.Random(seed)
    starts = [m.start() for m in heading.finditer(text)] or [0]
    parts = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]
    target = rng.randint(*CHANGELOG_PAGE_CHARS)
    page = ""
    for part in parts:
        page += part
        if len(page) >= target:
            yield page.strip()
            page, target = "", rng.randint(*CHANGELOG_PAGE_CHARS)
    if len(page) >= MIN_CHARS:
        yield page.strip()


_GIT_RELEASE = re.compile(r"^Version v\S+; changes since", re.MULTILINE)
_PYTHON_RELEASE = re.compile(r"^Python \d+\.\d+\S* (?:final|alpha|beta|release candidate)", re.MULTILINE)


def _changelogs(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("git/usr/share/doc/git/changelog.gz")):
        text = _read(path).decode("utf-8", "replace")
        for i, page in enumerate(sections(text, _GIT_RELEASE, "git changelog")):
            yield Document("en", f"changelog:git#{i}", page, "changelog:git")
    for path in sorted(root.glob("python3.*-doc/usr/share/doc/python3.*/html/whatsnew/changelog.html*")):
        text = html_text(_read(path))
        for i, page in enumerate(sections(text, _PYTHON_RELEASE, "python changelog")):
            yield Document("en", f"changelog:python#{i}", page, "changelog:python")


def _release_notes(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("git/usr/share/doc/git/RelNotes/*.txt*")):
        yield Document("en", f"relnotes:git/{path.name}", _read(path).decode("utf-8", "replace"), "release-notes:git")
    for path in sorted(root.glob("perl-doc/usr/share/perl/*/pod/perl*delta.pod")):
        yield Document("en", f"relnotes:perl/{path.name}", pod_text(path.read_text("utf-8", "replace")),
                       "release-notes:perl")
    for path in sorted(root.glob("postgresql-doc-*/usr/share/doc/postgresql-doc-*/html/release-*.html")):
        yield Document("en", f"relnotes:postgresql/{path.name}", html_text(path.read_bytes()),
                       "release-notes:postgresql")
    for path in sorted(root.glob("python3.*-doc/usr/share/doc/python3.*/html/whatsnew/[0-9]*.html*")):
        yield Document("en", f"relnotes:python/{path.name}", html_text(_read(path)), "release-notes:python")


def _api_pages(root: Path) -> Iterator[Document]:
    trees = (
        ("python", "python3.*-doc/usr/share/doc/python3.*/html/library/*.html*"),
        ("python", "python3.*-doc/usr/share/doc/python3.*/html/c-api/*.html*"),
        ("postgresql", "postgresql-doc-*/usr/share/doc/postgresql-doc-*/html/sql-*.html"),
        ("glib", "libglib2.0-doc/usr/share/gtk-doc/html/*/*.html"),
        ("gtk", "libgtk-3-doc/usr/share/gtk-doc/html/*/*.html"),
    )
    for project, pattern in trees:
        for path in sorted(root.glob(pattern)):
            yield Document("en", f"api:{project}/{path.parent.name}/{path.name}", html_text(_read(path)),
                           f"api:{project}")
    for path in sorted(root.glob("perl-doc/usr/share/perl/*/pod/*.pod")):
        if not path.name.endswith("delta.pod"):
            yield Document("en", f"api:perl/{path.name}", pod_text(path.read_text("utf-8", "replace")), "api:perl")


# -- catalogue pages (generated) ----------------------------------------------------------


def vocabulary(texts: Iterable[str]) -> list[str]:
    """The VOCABULARY_SIZE most frequent lower-case words of 4-10 letters of texts
    (ties by the word), most frequent first."""
    counts: dict[str, int] = {}
    for text in texts:
        for w in VOCABULARY_WORDS.findall(text):
            counts[w] = counts.get(w, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))[:VOCABULARY_SIZE]


def _name(rng: random.Random, words: list[str], n: int = 2) -> str:
    return " ".join(rng.choice(words).capitalize() for _ in range(n))


def _model(rng: random.Random) -> str:
    return f"{rng.choice('ABCDEFGHKLMNPRSTVXZ')}{rng.choice('ABCDEFGHKLMNPRSTVXZ') * rng.randint(0, 1)}" \
           f"{rng.randint(10, 9999)}"


def _price(rng: random.Random) -> str:
    return f"{rng.randint(1, 2999)}.{rng.randint(0, 99):02d}"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2015, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def price_list(rng: random.Random, words: list[str]) -> str:
    shop = _name(rng, words)
    lines = [f"{shop} Supplies - price list", f"Prices valid from {_date(rng)}. All prices in EUR, VAT included.",
             "Item no. | Product | Model | Price | In stock"]
    for _ in range(rng.randint(*CATALOGUE_ROWS)):
        lines.append(f"{rng.randint(10000, 99999)} | {_name(rng, words, rng.randint(1, 3))} | {_model(rng)} | "
                     f"{_price(rng)} | {rng.randint(0, 500)}")
    lines.append(f"Prices subject to change. Page {rng.randint(1, 40)} of {rng.randint(40, 80)}.")
    return "\n".join(lines)


def results_table(rng: random.Random, words: list[str]) -> str:
    event = _name(rng, words)
    lines = [f"{event} Open {rng.randint(2010, 2026)} - results, round {rng.randint(1, 30)}",
             f"Held on {_date(rng)}, {rng.randint(20, 400)} starters.", "Pos | Name | Club | Time | Points"]
    for pos in range(1, rng.randint(*CATALOGUE_ROWS) + 1):
        lines.append(f"{pos} | {_name(rng, words)} | {_name(rng, words, 1)} {rng.choice(('FC', 'SC', 'AC'))} | "
                     f"{rng.randint(0, 2)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 9)} | "
                     f"{rng.randint(0, 100)}")
    return "\n".join(lines)


def product_page(rng: random.Random, words: list[str]) -> str:
    brand, product, model = _name(rng, words, 1), _name(rng, words), _model(rng)
    lines = [f"{brand} {product} {model}", f"Price: {_price(rng)} EUR (was {_price(rng)} EUR)",
             f"Rating: {rng.randint(10, 50) / 10} of 5 ({rng.randint(1, 3000)} reviews)",
             f"In stock: {rng.randint(0, 900)} units. Delivery in {rng.randint(1, 4)}-{rng.randint(5, 14)} days.",
             "Specifications"]
    for key, unit in rng.sample((("Width", "mm"), ("Height", "mm"), ("Depth", "mm"), ("Weight", "g"),
                                 ("Power", "W"), ("Voltage", "V"), ("Capacity", "l"), ("Noise", "dB"),
                                 ("Warranty", "months"), ("Cable length", "m")), rng.randint(5, 10)):
        lines.append(f"{key}: {rng.randint(1, 2000)} {unit}")
    lines.append("Description")
    for _ in range(rng.randint(2, 6)):
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(10, 30))).capitalize() + ".")
    lines.append("Customers also bought")
    for _ in range(rng.randint(3, 8)):
        lines.append(f"{_name(rng, words, 1)} {_name(rng, words)} {_model(rng)} - {_price(rng)} EUR")
    return "\n".join(lines)


CATALOGUES = {"prices": price_list, "results": results_table, "products": product_page}


def catalogue_pages(words: list[str], pages: int = CATALOGUE_PAGES) -> Iterator[Document]:
    """pages pages of every template of CATALOGUES, seeded, from the vocabulary words."""
    for name, make in CATALOGUES.items():
        rng = random.Random(f"catalogue:{name}")
        for i in range(pages):
            yield Document("en", f"catalogue:{name}#{i}", make(rng, words), f"catalogue:{name}")


def clipped(text: str) -> str:
    """text cut at the last line end before MAX_CHARS characters (whole when shorter)."""
    if len(text) <= MAX_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_CHARS)
    return text[: cut if cut > 0 else MAX_CHARS]


def extract(root: Path = PACKAGES_DIR) -> list[Document]:
    """Every document of the unpacked packages, exact duplicates once, in a fixed order."""
    seen: set[str] = set()
    docs = []
    found = (*_man_pages(root), *_help_pages(root), *_html_pages(root), *_catalog_pages(root), *_changelogs(root),
             *_release_notes(root), *_api_pages(root))
    words = vocabulary(d.text for d in found if d.lang == "en" and d.source.startswith("man:"))
    for doc in (*found, *(catalogue_pages(words) if words else ())):
        text = clipped(doc.text)
        if len(text) >= MIN_CHARS and text not in seen:
            seen.add(text)
            docs.append(Document(doc.lang, doc.source, text, doc.family))
    return docs


def load(root: Path = PACKAGES_DIR, cache_dir: Path = CORPUS_DIR) -> list[Document]:
    """The corpus, from the cache when it is there; raises FileNotFoundError naming the
    command when the packages are not unpacked."""
    if not root.is_dir() or not any(root.glob("*/.unpacked")):
        raise FileNotFoundError(f"no corpus packages in {root}: run scripts/install-deps.sh --bench")
    packages = sorted(p.parent.name for p in root.glob("*/.unpacked"))
    digest = hashlib.sha256("\n".join(packages).encode()).hexdigest()[:12]
    cache = cache_dir / f"documents-{CORPUS_VERSION}-{digest}.json.gz"
    if cache.exists():
        with gzip.open(cache, "rt", encoding="utf-8") as f:
            return [Document(*row) for row in json.load(f)]
    docs = extract(root)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump([[d.lang, d.source, d.text, d.family] for d in docs], f, ensure_ascii=False)
    tmp.replace(cache)
    return docs
