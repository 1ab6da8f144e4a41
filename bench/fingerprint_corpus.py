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

A document is (language, source, text); the list is cached, gzipped JSON, in
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
CORPUS_VERSION = 4
MAX_CHARS = 30_000
MIN_CHARS = 200
# Catalog pages: lengths drawn uniformly from this range (both length buckets).
CATALOG_PAGE_CHARS = (800, 6_000)

# Directory names of languages -> the labels the tables use.
LANGUAGE_LABELS = {"C": "en", "zh_CN": "zh", "zh_TW": "zh-tw", "pt_BR": "pt-br", "sr@latin": "sr-latn"}


@dataclass(frozen=True)
class Document:
    lang: str
    source: str
    text: str


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


def _man_pages(root: Path) -> Iterator[Document]:
    for path in sorted(root.glob("*/usr/share/man/**/*")):
        if path.is_symlink() or not path.is_file() or not path.parent.name.startswith("man"):
            continue
        rel = path.relative_to(root)
        lang_dir = rel.parts[4] if not rel.parts[4].startswith("man") else "en"
        source = _read(path).decode("utf-8", "replace")
        if source.lstrip().startswith(".so "):
            continue  # a link to another page
        yield Document(language(lang_dir), "man:" + "/".join(rel.parts[:1] + rel.parts[4:]), roff_text(source))


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
    for doc in (*_man_pages(root), *_help_pages(root), *_html_pages(root), *_catalog_pages(root)):
        text = clipped(doc.text)
        if len(text) >= MIN_CHARS and text not in seen:
            seen.add(text)
            docs.append(Document(doc.lang, doc.source, text))
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
        json.dump([[d.lang, d.source, d.text] for d in docs], f, ensure_ascii=False)
    tmp.replace(cache)
    return docs
