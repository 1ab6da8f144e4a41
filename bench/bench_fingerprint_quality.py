"""Fingerprint quality: recall of near-duplicate copies and false pairs, by language and family.

On real text nobody here wrote (bench/fingerprint_corpus.py: Debian's translated
manual pages and documentation, Arabic and Thai message catalogs, and families of
pages sharing a template: changelogs, release notes, API references, character-set
tables, generated catalogue pages), versions 1, 2 and 3 of the text fingerprint (the
package's, XXH3), the baseline (1e0ng/simhash's character 4-grams) and feature designs
through a stand-in hash side by side:

- recall@3: the share of copies (bench/fingerprint_quality.py: line added, span
  replaced, typography, case, marks, one timestamp changed) within 3 bits of their
  page, by language and length (>= 2,000 characters; 800-2,000), on up to --pages
  pages each;
- numbers changed: of pages whose numbers are at least a fifth of their tokens, the
  share whose copy with every number changed is NOT within 3 bits (up to 5 x --pages
  pages of the catalogue families and as many other pages);
- false pairs: pairs of documents within 3 bits (and 4, 5, 6) whose character
  5-gram Jaccard is below 0.3, next to all pairs within 3 bits, over the whole
  corpus (--docs N: N documents of a seeded shuffle), and those within 3 bits by
  family (both documents of one family; "none" otherwise);
- features per character of each design (a proxy of its cost in C);
- a summary of the goals of each row (issue 48).

Options: --quick (40 pages, 5,000 documents), --pages N, --copies N (of each kind
per page), --docs N, --designs SPEC,... (tokN: token N-shingles, chrN: character
N-grams of the token stream, W*: weight, + to combine; flags /run: a feature
equal to the one before it does not vote, /set: each distinct feature votes once,
/sN: 1 in N features votes, /num: numbers are word characters (not separators),
/nonum: so, but tokens of digits only left out, /capN: a distinct feature votes at
most N times, /powA: a distinct feature votes its weight x count**A, /numsW: a number
is a token of its own and a feature with one votes W x, /nshW: so, W x a ramp of the
numbers' share of the tokens (10 % to 20 %, /rampLO-HI: LO % to HI %; /wshare: of the
words, a run of Chinese characters one word), /lnumW: a line's numbers one more
feature; e.g. tok3+chr4/run, 2*tok3+chr5/run/s2, tok3+2*chr5/run/nums0.5/pow0.5, and
version 3: tok3+2*chr5/run/cap32/nsh2/wshare/ramp15-25), --kinds (copies measured),
--skip-shipped (no rows of the package's own simhash_v2 and simhash_v3, the slow ones),
--skip-recall, --skip-false-pairs. docs/fingerprint-quality.md has the tables.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import unicodedata
from collections import defaultdict

import numpy as np

import fingerprint_corpus as corpus
import fingerprint_quality as fq
from pysimhash_sql import hashing

K = 3
# Pages whose numbers are at least this share of their tokens: their copy with every
# number changed must not be within K bits.
NUMBER_SHARE = 0.2
# The families' kinds, in the order the table shows them; pairs of documents not of
# one family are "none".
FAMILY_KINDS = ("changelog", "release-notes", "api", "tables", "catalogue", "none")
BUCKETS = {">= 2,000": (2000, 10**9), "800-2,000": (800, 2000)}
RECALL_LANGUAGES = ("en", "de", "fr", "ru", "zh", "ja", "ko", "th", "ar")
# The script a page of a language must mostly be in to count as that language
# (untranslated pages of translated manuals are English).
SCRIPTS = {
    "ru": ("CYRILLIC",), "zh": ("CJK",), "ja": ("CJK", "HIRAGANA", "KATAKANA"),
    "ko": ("HANGUL",), "th": ("THAI",), "ar": ("ARABIC",),
}
MIN_SCRIPT_SHARE = 0.5
JACCARD_DIFFERENT = 0.3
# Different pairs are counted within these radii too: a design's precision at 3 bits
# rests on few pairs, and families of related pages enter together.
FALSE_PAIR_RADII = (3, 4, 5, 6)
# Version 2's design (token 3 + 2x char 5, runs once, numbers separate), version 3's
# (docs/fingerprint-spec.md §8) and the runners-up of each (docs/design/fingerprint.md).
V3_DESIGN = "tok3+2*chr5/run/cap32/nsh2/wshare/ramp15-25"
DESIGNS = ("tok3+2*chr5/run", V3_DESIGN, "tok3+2*chr5/run/cap8/nsh2", "tok3+2*chr5/run/cap16/nsh2/wshare/ramp15-25",
           "tok3+chr5/run", "tok3+chr4/run")


def in_script(text: str, lang: str) -> bool:
    prefixes = SCRIPTS.get(lang)
    if not prefixes:
        return True
    letters = [c for c in text if c.isalpha()]
    hits = sum(unicodedata.name(c, "").startswith(prefixes) for c in letters)
    return bool(letters) and hits / len(letters) >= MIN_SCRIPT_SHARE


def recall_pages(docs: list[corpus.Document], per_bucket: int) -> dict[tuple[str, str], list[corpus.Document]]:
    """Up to per_bucket pages of each language and length bucket, seeded (not the
    generated catalogue pages: numbers_table measures them)."""
    pages = {}
    docs = [d for d in docs if d.family_kind != "catalogue"]
    for lang in RECALL_LANGUAGES:
        for bucket, (lo, hi) in BUCKETS.items():
            fit = [d for d in docs if d.lang == lang and lo <= len(d.text) < hi and in_script(d.text, lang)]
            pages[lang, bucket] = random.Random(f"{lang}:{bucket}").sample(fit, min(per_bucket, len(fit)))
    return pages


def row_functions(shipped_row: bool = True, baseline_row: bool = True) -> dict:
    """name -> (fingerprint of a text, its number of features or None) of the rows
    that are not version 2 designs: version 1, the baseline, the shipped version 2."""
    rows = {"version 1": (fq.v1_simhash, fq.v1_feature_count)}
    if baseline_row:
        rows["baseline"] = (fq.baseline_simhash, fq.baseline_feature_count)
    shipped = fq.shipped_v2() if shipped_row else None
    if shipped is not None:
        rows["version 2 (shipped)"] = (shipped, fq.shipped_v2_feature_count())
    if shipped_row:
        rows["version 3 (shipped)"] = (hashing.simhash_v3, fq.shipped_v3_feature_count)
    return rows


SHIPPED_ROW = True  # --skip-shipped: False
BASELINE_ROW = True  # --skip-baseline: False


def fingerprint_all(texts: list[str], designs: list[fq.Design],
                    counts: bool = False) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Fingerprints of texts by every row; and with counts the features per
    character of each row (of the package's rows: slow, so only where printed)."""
    out = {}
    chars = max(1, sum(map(len, texts)))
    per_char = {}
    for name, (f, count) in row_functions(SHIPPED_ROW, BASELINE_ROW).items():
        out[name] = np.fromiter(map(f, texts), np.uint64, len(texts))
        if counts and count is not None:
            per_char[name] = sum(map(count, texts)) / chars
    fp = fq.Fingerprinter(designs)
    per_design = defaultdict(list)
    for t in texts:
        for name, v in fp(t).items():
            per_design[name].append(v)
    for d in designs:
        out[d.name] = np.array(per_design[d.name], np.uint64)
        per_char[d.name] = fp.features[d.name] / chars
    return out, per_char


# The designs that are a spec version, through the stand-in hash.
SPEC_DESIGNS = {"tok3+2*chr5/run": "version 2", V3_DESIGN: "version 3"}


def label(name: str, designs: list[fq.Design]) -> str:
    for d in designs:
        if d.name == name:
            return f"stand-in {d}" + (f" (= {SPEC_DESIGNS[name]})" if name in SPEC_DESIGNS else "")
    return name


def recall_tables(docs, designs, per_bucket: int, copies_per_page: int, kinds: list[str]) -> dict:
    pages = recall_pages(docs, per_bucket)
    print("pages per language and length:", ", ".join(
        f"{lang} {len(pages[lang, '>= 2,000'])}/{len(pages[lang, '800-2,000'])}" for lang in RECALL_LANGUAGES))
    originals = [(key, d) for key, ds in pages.items() for d in ds]
    plain, _ = fingerprint_all([d.text for _, d in originals], designs)
    recall = {}  # (row, kind, lang, bucket) -> share
    paired = {}  # (kind, lang, bucket) -> version 3's hits less version 2's, a page each
    for kind in kinds:
        hits = defaultdict(list)
        for n in range(copies_per_page):
            seeds = [f"{d.source}#{n}" if n else d.source for _, d in originals]
            base = plain
            if kind == "stamp":  # the original has a timestamp line too
                base, _ = fingerprint_all([fq.make_original(kind, d.text, seed)
                                           for (_, d), seed in zip(originals, seeds)], designs)
            copies = [fq.make_copy(kind, d.text, seed) for (_, d), seed in zip(originals, seeds)]
            fps, _ = fingerprint_all(copies, designs)
            for row, values in fps.items():
                within = fq.popcount(values ^ base[row]) <= K
                for (key, _), ok in zip(originals, within.tolist()):
                    hits[row, kind, *key].append(ok)
        recall.update({cell: sum(oks) / len(oks) for cell, oks in hits.items()})
        for (row, k, *key), oks in hits.items():
            if row == SHIPPED_V3 and (SHIPPED_V2, k, *key) in hits:
                # hits of a cell: copy round by copy round, the cell's pages in order
                v3 = np.array(oks, float).reshape(copies_per_page, -1)
                v2 = np.array(hits[SHIPPED_V2, k, *key], float).reshape(copies_per_page, -1)
                paired[k, *key] = (v3 - v2).mean(axis=0)
    rows = list(plain)
    for kind in kinds:
        title = fq.COPIES[kind][0]
        print(f"\nrecall@{K}: {title}")
        print("| row | length | " + " | ".join(RECALL_LANGUAGES) + " | worst |")
        print("|---|---|" + "---|" * (len(RECALL_LANGUAGES) + 1))
        for row in rows:
            for bucket in BUCKETS:
                vals = [recall.get((row, kind, lang, bucket)) for lang in RECALL_LANGUAGES]
                cells = ["-" if v is None else f"{v:.2f}" for v in vals]
                worst = min(v for v in vals if v is not None)
                print(f"| {label(row, designs)} | {bucket} | " + " | ".join(cells) + f" | {worst:.2f} |")
        print_paired(kind, paired)
    return recall


SHIPPED_V2, SHIPPED_V3 = "version 2 (shipped)", "version 3 (shipped)"


def print_paired(kind: str, paired: dict) -> None:
    """Version 3's recall less version 2's on the same copies, with a 95 % interval
    over the pages (each page's share of its copies: pages vary far more than copies),
    so that a goal of "at least version 2's - 0.02" reads past the sampling noise."""
    cells = {(lang, bucket): d for (k, lang, bucket), d in paired.items() if k == kind}
    if not cells:
        return
    print(f"\n{SHIPPED_V3} - {SHIPPED_V2}, the same copies ({kind}): difference [95 % interval over the pages]")
    print("| length | " + " | ".join(RECALL_LANGUAGES) + " |")
    print("|---|" + "---|" * len(RECALL_LANGUAGES))
    for bucket in BUCKETS:
        out = []
        for lang in RECALL_LANGUAGES:
            d = cells.get((lang, bucket))
            if d is None or len(d) < 2:
                out.append("-")
                continue
            half = 1.96 * d.std(ddof=1) / np.sqrt(len(d))
            out.append(f"{d.mean():+.3f} [{d.mean() - half:+.3f}, {d.mean() + half:+.3f}]")
        print(f"| {bucket} | " + " | ".join(out) + " |")


def numbers_table(docs, designs, per_group: int) -> dict[str, float]:
    """Of pages whose numbers are >= NUMBER_SHARE of their tokens, the share whose copy
    with every number changed is NOT within K bits, by group (the catalogue families;
    every other page), and beside it the share of their "stamp" copies within K bits;
    returns row -> the share apart over both groups."""
    fit = [d for d in docs if len(d.text) >= 800 and fq.number_share(d.text) >= NUMBER_SHARE]
    groups = {
        "catalogue": [d for d in fit if d.family_kind == "catalogue"],
        "other pages": [d for d in fit if d.family_kind != "catalogue"],
    }
    groups = {g: random.Random(g).sample(ds, min(per_group, len(ds))) for g, ds in groups.items()}
    pages = [d for ds in groups.values() for d in ds]
    base, _ = fingerprint_all([d.text for d in pages], designs)
    changed, _ = fingerprint_all([fq.make_copy_of(fq.NUMBERS_COPY, d.text, d.source) for d in pages], designs)
    stamped, _ = fingerprint_all([fq.make_original("stamp", d.text, d.source) for d in pages], designs)
    restamped, _ = fingerprint_all([fq.make_copy("stamp", d.text, d.source) for d in pages], designs)
    print(f"\nnumbers changed: pages whose numbers are >= {NUMBER_SHARE:.0%} of their tokens, every number "
          f"changed; the share NOT within {K} bits of the page, and of their stamp copies the share within ("
          + ", ".join(f"{g} {len(ds)}" for g, ds in groups.items()) + " pages)")
    print("| row | " + " | ".join(f"{g}: apart | {g}: stamp within" for g in groups) + " | all apart |")
    print("|---|" + "---|" * (2 * len(groups) + 1))
    overall = {}
    for row in base:
        apart = (fq.popcount(base[row] ^ changed[row]) > K).tolist()
        kept = (fq.popcount(stamped[row] ^ restamped[row]) <= K).tolist()
        cells, start = [], 0
        for ds in groups.values():
            end = start + len(ds)
            for values in (apart, kept):
                part = values[start:end]
                cells.append(f"{sum(part) / len(part):.2f}" if part else "-")
            start = end
        overall[row] = sum(apart) / max(1, len(apart))
        print(f"| {label(row, designs)} | " + " | ".join(cells) + f" | {overall[row]:.2f} |")
    return overall


def family_of_pair(docs, a: int, b: int) -> str:
    """The family kind of a pair of documents of one family, else "none"."""
    fa = docs[a].family
    return docs[a].family_kind if fa and fa == docs[b].family else "none"


def false_pair_table(docs, designs, limit: int | None) -> dict[str, int]:
    if limit:
        docs = random.Random("false-pairs").sample(docs, min(limit, len(docs)))
    texts = [d.text for d in docs]
    start = time.perf_counter()
    fps, per_char = fingerprint_all(texts, designs, counts=True)
    seconds = time.perf_counter() - start
    grams: dict[int, set] = {}

    def g(i):
        if i not in grams:
            grams[i] = fq.gram_set(texts[i])
        return grams[i]

    print(f"\nfalse pairs: {len(docs):,} documents in {len({d.lang for d in docs})} languages, "
          f"{sum(map(len, texts)):,} characters (fingerprinted in {seconds:.0f} s); clearly different: "
          f"character 5-gram Jaccard < {JACCARD_DIFFERENT}")
    family_docs = defaultdict(int)
    for d in docs:
        family_docs[d.family_kind or "none"] += 1
    print(f"| row | pairs within {K} bits | " + " | ".join(f"different within {k}" for k in FALSE_PAIR_RADII)
          + " | features per character |")
    print("|---|---|" + "---|" * (len(FALSE_PAIR_RADII) + 1))
    by_family = {}  # row -> family kind -> different pairs within K
    for row, values in fps.items():
        cells = []
        for k in FALSE_PAIR_RADII:
            pairs = fq.near_doc_pairs(values, k)
            different = [(a, b) for a, b in pairs.tolist() if fq.jaccard(g(a), g(b)) < JACCARD_DIFFERENT]
            if k == K:
                within = len(pairs)
                by_family[row] = counts = dict.fromkeys(FAMILY_KINDS, 0)
                for a, b in different:
                    counts[family_of_pair(docs, a, b)] += 1
            cells.append(f"{len(different):,}")
        fpc = f"{per_char[row]:.2f}" if row in per_char else "-"
        print(f"| {label(row, designs)} | {within:,} | " + " | ".join(cells) + f" | {fpc} |")
    print(f"\ndifferent pairs within {K} bits by family (both documents of one family; none: the others)")
    print("| row | " + " | ".join(f"{f} ({family_docs[f]:,} docs)" for f in FAMILY_KINDS) + " | all |")
    print("|---|" + "---|" * (len(FAMILY_KINDS) + 1))
    for row, counts in by_family.items():
        print(f"| {label(row, designs)} | " + " | ".join(f"{counts[f]:,}" for f in FAMILY_KINDS)
              + f" | {sum(counts.values()):,} |")
    return {row: sum(counts.values()) for row, counts in by_family.items()}


def summary(designs, recall: dict, numbers: dict, different: dict) -> None:
    """Each row against the goals of issue 48: worst language of each copy kind and
    length, numbers changed kept apart, different pairs within K bits."""
    rows = list(numbers or different or {r for r, *_ in recall})
    kinds = sorted({k for _, k, *_ in recall}, key=list(fq.COPIES).index)
    print("\nsummary: worst language (>= 2,000 / 800-2,000 characters) of each copy; numbers changed "
          f"NOT within {K} bits; different pairs within {K} bits")
    print("| row | " + "".join(f"{k} | " for k in kinds) + "numbers changed apart | different pairs |")
    print("|---|" + "---|" * (len(kinds) + 2))
    for row in rows:
        cells = []
        for kind in kinds:
            worst = []
            for bucket in BUCKETS:
                vals = [v for (r, k, _, b), v in recall.items() if r == row and k == kind and b == bucket]
                worst.append(f"{min(vals):.2f}" if vals else "-")
            cells.append(" / ".join(worst))
        n = f"{numbers[row]:.2f}" if row in numbers else "-"
        dp = f"{different[row]:,}" if row in different else "-"
        print(f"| {label(row, designs)} | " + "".join(f"{c} | " for c in cells) + f"{n} | {dp} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 pages a language and length, 5,000 documents")
    parser.add_argument("--pages", type=int, help="pages per language and length bucket (120)")
    parser.add_argument("--copies", type=int, default=1, help="copies of each kind per page (1)")
    parser.add_argument("--docs", type=int, help="documents of the false-pair corpus (all)")
    parser.add_argument("--designs", help="designs through the stand-in hash, comma-separated, or none ("
                        + ",".join(DESIGNS) + ")")
    parser.add_argument("--kinds", help="copies measured, comma-separated (" + ",".join(fq.COPIES) + ")")
    parser.add_argument("--skip-false-pairs", action="store_true")
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--skip-shipped", action="store_true",
                        help="no rows of the package's own simhash_v2 and simhash_v3 (slow)")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="no baseline row (its Python is most of a large recall run's time)")
    args, _ = parser.parse_known_args()  # other flags are other benchmarks'
    pages = args.pages or (40 if args.quick else 120)
    limit = args.docs or (5000 if args.quick else None)
    global SHIPPED_ROW, BASELINE_ROW
    SHIPPED_ROW = not args.skip_shipped
    BASELINE_ROW = not args.skip_baseline
    designs = [] if args.designs == "none" else [
        fq.parse_design(s) for s in (args.designs.split(",") if args.designs else DESIGNS)]
    try:
        docs = corpus.load()
    except FileNotFoundError as e:
        print(f"skipped: {e}")
        return
    recall, numbers, different = {}, {}, {}
    if not args.skip_recall:
        kinds = args.kinds.split(",") if args.kinds else list(fq.COPIES)
        unknown = set(kinds) - set(fq.COPIES)
        if unknown:
            parser.error(f"--kinds: unknown copies {sorted(unknown)} (known: {', '.join(fq.COPIES)})")
        recall = recall_tables(docs, designs, pages, args.copies, kinds)
        numbers = numbers_table(docs, designs, 5 * pages)
    if not args.skip_false_pairs:
        different = false_pair_table(docs, designs, limit)
    summary(designs, recall, numbers, different)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
