"""The fingerprint quality benchmark's corpus builder (bench/fingerprint_corpus.py):
each extractor on small real-format inputs, and the whole pipeline on a tiny
tree of unpacked packages (independent of the real corpus)."""

from __future__ import annotations

import gzip
import io
import struct
import zipfile

import fingerprint_corpus as fc
import pytest

ROFF = r""".\" a comment line
.TH LS 1 2024 "GNU coreutils"
.de XX
.  ig this definition is skipped
..
.SH NAME
ls \- list directory contents
.SH DESCRIPTION
List information about the \fBFILE\fRs (the current directory by default).
.TP
\fB\-a\fR, \fB\-\-all\fR
do not ignore entries starting with \(lq.\(rq \" trailing comment
.PP
.nf
size\ in\ bytes: 1024\[u00E9]
.fi
"""


def test_roff_text_keeps_the_running_text() -> None:
    assert fc.roff_text(ROFF).splitlines() == [
        "NAME",
        "ls - list directory contents",
        "DESCRIPTION",
        "List information about the FILEs (the current directory by default).",
        "-a, --all",
        "do not ignore entries starting with \u201c.\u201d",
        "size in bytes: 1024\u00e9",
    ]


def test_mallard_text_leaves_out_the_info_metadata() -> None:
    page = """<?xml version="1.0"?>
<page xmlns="http://projectmallard.org/1.0/" id="x"><info><credit><name>Someone</name></credit>
<license><p>Creative Commons</p></license></info>
<title>Change the resolution</title><p>Open the <gui>Displays</gui> panel &amp; click.</p>
<steps><item><p>One</p></item><item><p>Two</p></item></steps></page>"""
    assert fc.mallard_text(page).splitlines() == ["Change the resolution", "Open the Displays panel & click.",
                                                  "One", "Two"]


def test_html_text_is_the_body_blocks() -> None:
    html = ('<?xml version="1.0" encoding="UTF-8"?><html><head><title>T</title><style>p {}</style></head>'
            "<body><h1>제목</h1><p>첫 문단 <b>굵게</b></p><script>x()</script><p>둘째</p></body></html>").encode()
    assert fc.html_text(html).splitlines() == ["제목", "첫 문단 굵게", "둘째"]


def test_fluent_and_properties_values_in_file_order() -> None:
    source = "# comment\nabout-title = عن { $brand }\n    .label = تسمية\nsome.key.name=قيمة %1$S\n\n[section]\n"
    assert list(fc.fluent_strings(source)) == ["عن", "تسمية", "قيمة"]


def mo_bytes(pairs: list[tuple[str, str]]) -> bytes:
    """A GNU .mo catalog of (msgid, msgstr) pairs (the format gettext reads)."""
    pairs = sorted(pairs)
    ids = [k.encode() for k, _ in pairs]
    strs = [v.encode() for _, v in pairs]
    header = 7 * 4
    offsets_ids = header
    offsets_strs = offsets_ids + 8 * len(pairs)
    data_start = offsets_strs + 8 * len(pairs)
    table_ids, table_strs, data = [], [], b""
    for s in ids:
        table_ids.append((len(s), data_start + len(data)))
        data += s + b"\0"
    for s in strs:
        table_strs.append((len(s), data_start + len(data)))
        data += s + b"\0"
    out = struct.pack("<7I", 0x950412DE, 0, len(pairs), offsets_ids, offsets_strs, 0, 0)
    out += b"".join(struct.pack("<2I", *t) for t in table_ids + table_strs)
    return out + data


def test_mo_strings_are_the_translations() -> None:
    data = mo_bytes([("", "Content-Type: text/plain; charset=UTF-8\n"), ("Print", "พิมพ์"), ("Page %s", "หน้า %s")])
    assert sorted(fc.mo_strings(data)) == ["พิมพ์", "หน้า"]


def test_catalog_pages_are_seeded_and_keep_every_string() -> None:
    strings = [f"ข้อความที่ {i} " * 3 for i in range(2000)]
    pages = list(fc.catalog_pages(strings, "seed"))
    assert pages == list(fc.catalog_pages(strings, "seed"))
    assert pages != list(fc.catalog_pages(strings, "other seed"))
    assert "\n".join(pages).split("\n") == strings
    lo, hi = fc.CATALOG_PAGE_CHARS
    assert all(lo <= len(p) <= hi + 40 for p in pages[:-1])


def test_clipped_cuts_at_a_line_end() -> None:
    line = "x" * 99 + "\n"
    text = line * (fc.MAX_CHARS // 100 + 5)
    clipped = fc.clipped(text)
    assert len(clipped) < fc.MAX_CHARS and text.startswith(clipped) and clipped.endswith("x")
    assert fc.clipped("short") == "short"


def gz(text: str) -> bytes:
    return gzip.compress(text.encode())


@pytest.fixture
def packages(tmp_path):
    """A tiny tree of unpacked packages: manual pages (one a .so link, one in two
    packages), a help page, an HTML help page and a language pack."""
    page = ".SH NAME\nfoo \\- does foo\n.SH DESCRIPTION\n" + "Foo does many things to files. " * 20 + "\n"
    files = {
        "manpages/usr/share/man/man1/foo.1.gz": gz(page),
        "manpages/usr/share/man/man1/bar.1.gz": gz(".so man1/foo.1\n"),
        "manpages-dev/usr/share/man/man3/foo.3.gz": gz(page),  # the same text again
        "manpages-de/usr/share/man/de/man1/foo.1.gz": gz(page.replace("Foo does", "Foo macht")),
        "gnome-user-docs/usr/share/help/ru/gnome-help/a.page":
            ("<page><info><p>credits</p></info><p>" + "Текст справки. " * 30 + "</p></page>").encode(),
        "libreoffice-help-ko/usr/share/libreoffice/help/ko/text/a.html":
            ("<html><body><p>" + "도움말 문서입니다. " * 40 + "</p></body></html>").encode(),
    }
    for name, data in files.items():
        path = tmp_path / "packages" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    xpi = io.BytesIO()
    with zipfile.ZipFile(xpi, "w") as z:
        z.writestr("localization/ar/a.ftl", "\n".join(f"key-{i} = نص عربي رقم {i}" for i in range(600)))
    pack = tmp_path / "packages/firefox-esr-l10n-ar/usr/lib/firefox-esr/langpack-ar.xpi"
    pack.parent.mkdir(parents=True)
    pack.write_bytes(xpi.getvalue())
    for pkg in (tmp_path / "packages").iterdir():
        (pkg / ".unpacked").touch()
    return tmp_path / "packages"


def test_extract_makes_documents_of_every_kind(packages) -> None:
    docs = fc.extract(packages)
    by_source = {d.source.split("#")[0]: d for d in docs}
    # the .so link and the copy in manpages-dev are left out
    assert {source: d.lang for source, d in by_source.items()} == {
        "catalog:langpack-ar.xpi/localization/ar/a.ftl": "ar",
        "help:ru/gnome-help/a.page": "ru",
        "lo-help:libreoffice-help-ko/usr/share/libreoffice/help/ko/text/a.html": "ko",
        "man:manpages-de/de/man1/foo.1.gz": "de",
        "man:manpages/man1/foo.1.gz": "en",
    }
    assert "credits" not in by_source["help:ru/gnome-help/a.page"].text
    assert all(len(d.text) >= fc.MIN_CHARS for d in docs)
    assert sum(d.source.startswith("catalog:") for d in docs) > 1  # cut into pages


def test_load_caches_and_names_the_missing_packages(packages, tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="install-deps.sh --bench"):
        fc.load(tmp_path / "nothing", tmp_path / "cache")
    first = fc.load(packages, tmp_path / "cache")
    assert list((tmp_path / "cache").glob("documents-*.json.gz"))
    (packages / "manpages/usr/share/man/man1/foo.1.gz").unlink()  # the cache answers now
    assert fc.load(packages, tmp_path / "cache") == first
