"""The fingerprint quality benchmark's corpus builder (bench/fingerprint_corpus.py):
each extractor on small real-format inputs, and the whole pipeline on a tiny
tree of unpacked packages (independent of the real corpus)."""

from __future__ import annotations

import gzip
import io
import re
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


def test_pod_text_resolves_codes_and_keeps_headings() -> None:
    pod = ("=pod\n\n=head1 NAME\n\nperlx - C<isa> and L<perlop/Operators>, C<< $a <=> $b >>\n\n"
           "=begin html\n\n<p>skipped</p>\n\n=end html\n\n=over 4\n\n=item B<-w>\n\nwarns\n\n=back\n")
    assert fc.pod_text(pod).splitlines() == ["NAME", "perlx - isa and perlop/Operators, $a <=> $b", "-w", "warns"]


def test_sections_join_releases_into_pages_of_seeded_lengths() -> None:
    text = "".join(f"Version {v}\n" + "x" * 999 + "\n" for v in range(100))
    pages = list(fc.sections(text, re.compile(r"^Version ", re.MULTILINE), "seed"))
    assert "".join(p + "\n" for p in pages) == text  # every section, in order
    assert all(p.startswith("Version ") for p in pages)
    lo, hi = fc.CHANGELOG_PAGE_CHARS
    assert all(lo <= len(p) <= hi + 1000 for p in pages[:-1])
    assert pages == list(fc.sections(text, re.compile(r"^Version ", re.MULTILINE), "seed"))


def test_catalogue_pages_are_seeded_families_full_of_numbers() -> None:
    words = fc.vocabulary(["alpha beta gamma delta epsilon " * 3, "zeta theta alpha"])
    assert words[0] == "alpha" and len(words) == 7
    pages = list(fc.catalogue_pages(words, 5))
    assert pages == list(fc.catalogue_pages(words, 5))
    assert [p.family for p in pages] == [f"catalogue:{n}" for n in fc.CATALOGUES for _ in range(5)]
    assert len({p.text for p in pages}) == len(pages)
    for p in pages:
        if p.family == "catalogue:products":  # prose too
            continue
        tokens = re.findall(r"[0-9]+|[^\W\d_]+", p.text)
        assert sum(t.isdigit() for t in tokens) >= len(tokens) / 5, p.source


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
    changelog = "".join(f"Version v2.{v}.0; changes since v2.{v - 1}.0:\n\nSomeone (2):\n"
                        + f"      change number {v} of many\n" * 200 for v in range(30, 0, -1))
    files = {
        "manpages/usr/share/man/man7/iso_8859-2.7.gz": gz(page.replace("foo", "iso_8859-2")),
        "git/usr/share/doc/git/changelog.gz": gz(changelog),
        "git/usr/share/doc/git/RelNotes/2.1.0.txt": ("Git 2.1 Release Notes\n" + "* fixed a bug. " * 30).encode(),
        "perl-doc/usr/share/perl/5.36.0/pod/perl5360delta.pod":
            ("=head1 NAME\n\nperl5360delta - what is new\n\n" + "Use C<isa> with L<perlop>. " * 20).encode(),
        "perl-doc/usr/share/perl/5.36.0/pod/perlfunc.pod":
            ("=head1 NAME\n\nperlfunc - functions\n\n" + "B<print> prints a list. " * 20).encode(),
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
    assert {source: (d.lang, d.family) for source, d in by_source.items()} == {
        "catalog:langpack-ar.xpi/localization/ar/a.ftl": ("ar", ""),
        "help:ru/gnome-help/a.page": ("ru", ""),
        "lo-help:libreoffice-help-ko/usr/share/libreoffice/help/ko/text/a.html": ("ko", ""),
        "man:manpages-de/de/man1/foo.1.gz": ("de", ""),
        "man:manpages/man1/foo.1.gz": ("en", ""),
        "man:manpages/man7/iso_8859-2.7.gz": ("en", "tables:charsets"),
        "changelog:git": ("en", "changelog:git"),
        "relnotes:git/2.1.0.txt": ("en", "release-notes:git"),
        "relnotes:perl/perl5360delta.pod": ("en", "release-notes:perl"),
        "api:perl/perlfunc.pod": ("en", "api:perl"),
        **{f"catalogue:{name}": ("en", f"catalogue:{name}") for name in fc.CATALOGUES},
    }
    assert sum(d.family == "changelog:git" for d in docs) > 1  # a page per few releases
    assert sum(d.family == "catalogue:prices" for d in docs) == fc.CATALOGUE_PAGES
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
