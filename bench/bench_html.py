"""HTML -> text -> fingerprint pipelines, side by side on a crawl of real pages.

Usage: python bench/bench_html.py [--quick] [--pages N] [--refetches N] [--only NAME,...]
                                  [--article-benchmark DIR]

The corpus (bench/refetch_noise.py): Debian's HTML documentation (postgresql-doc-15,
python3-doc), each page put into a news-site template and fetched 1 + --refetches
times with new noise (URL, timestamp, ads, related-articles sidebar, one more
comment).  Per pipeline, in one run:

- pages/s per core: fetches / process CPU seconds of extraction + fingerprint;
- recall: re-fetches whose fingerprint is within 3 bits of the original fetch's
  (a page without a fingerprint counts as missed);
- false pairs: pairs of different pages with fetches within 3 bits (the "gold"
  row shows the pairs the pages' own main content already has);
- none: original fetches that got no fingerprint (too little text);
- P / R / F1: bag-of-tokens precision, recall and F1 of the extracted text against
  the page's gold main content (its own content without its site's navigation),
  mean over the original fetches.

With --article-benchmark DIR (a checkout of scrapinghub/article-extraction-benchmark:
181 real news pages and their article bodies), first: each pipeline's pages/s on
those pages and its F1 as the benchmark's evaluate.py computes it (4-gram shingles).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from refetch_noise import Fetch, Page, fetches, load_pages

from pysimhash_sql import hashing

K = 3
Pipeline = Callable[[str, str], "str | None"]  # (html, url) -> text to fingerprint


def raw_html(html: str, url: str) -> str:
    return html


def visible_text(html: str, url: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html)


def trafilatura_markdown(html: str, url: str) -> str | None:
    import trafilatura

    return trafilatura.extract(html, url=url, output_format="markdown", include_comments=False)


def trafilatura_fast(html: str, url: str) -> str | None:
    import trafilatura

    return trafilatura.extract(html, url=url, output_format="txt", include_comments=False, fast=True)


def resiliparse_main(html: str, url: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, comments=False)


def readability(html: str, url: str) -> str | None:
    import lxml.html
    from readability import Document

    summary = Document(html, url=url).summary(html_partial=True)
    return lxml.html.fragment_fromstring(summary, create_parent="div").text_content()


def pysimhash_html(html: str, url: str) -> str | None:
    from pysimhash_sql import html as ours

    return ours.extract_text(html, url)


PIPELINES: dict[str, Pipeline] = {
    "raw HTML": raw_html,
    "visible text (resiliparse, all)": visible_text,
    "trafilatura 2 (markdown, no comments)": trafilatura_markdown,
    "trafilatura 2 fast=True (txt)": trafilatura_fast,
    "resiliparse main_content": resiliparse_main,
    "readability-lxml": readability,
    "pysimhash_sql.html.extract_text": pysimhash_html,
}


def token_f1(text: str | None, gold: str) -> tuple[float, float, float]:
    """Bag-of-tokens precision, recall and F1 (tokens as the fingerprint sees them)."""
    got, want = Counter(hashing.tokenize(text or "")), Counter(hashing.tokenize(gold))
    common = sum((got & want).values())
    p = common / sum(got.values()) if got else 0.0
    r = common / sum(want.values()) if want else 0.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def fingerprint(text: str | None) -> int | None:
    """The fingerprint of text, None below the minimum the package uses for HTML."""
    from pysimhash_sql.html import MIN_TOKENS

    if text is None or len(hashing.tokenize(text)) < MIN_TOKENS:
        return None
    return hashing.simhash(text)


def false_pairs(fps: list[int | None], page_of: list[int]) -> set[tuple[int, int]]:
    """Pairs of different pages with fingerprints within K bits."""
    pages_of: dict[int, set[int]] = {}
    for fp, page in zip(fps, page_of):
        if fp is not None:
            pages_of.setdefault(fp, set()).add(page)
    pairs = {pair for pages in pages_of.values() for pair in combinations(sorted(pages), 2)}
    for a, b in hashing.find_all(list(pages_of), 6, K):
        pairs |= {(min(p, q), max(p, q)) for p in pages_of[a] for q in pages_of[b] if p != q}
    return pairs


def measure(pipeline: Pipeline, crawl: list[Fetch], pages: list[Page]) -> dict:
    start = time.process_time()
    texts = [pipeline(f.html, f.url) for f in crawl]
    fps = [fingerprint(t) for t in texts]
    seconds = time.process_time() - start
    original = {f.page: fp for f, fp in zip(crawl, fps) if f.fetch == 0}
    refetched = [(f.page, fp) for f, fp in zip(crawl, fps) if f.fetch > 0]
    found = sum(fp is not None and original[p] is not None and (fp ^ original[p]).bit_count() <= K
                for p, fp in refetched)
    quality = [token_f1(t, pages[f.page].gold) for f, t in zip(crawl, texts) if f.fetch == 0]
    return {
        "pages/s": len(crawl) / seconds,
        "recall": found / len(refetched) if refetched else float("nan"),
        "false pairs": len(false_pairs(fps, [f.page for f in crawl])),
        "none": sum(fp is None for fp in original.values()),
        **{k: sum(q[i] for q in quality) / len(quality) for i, k in enumerate(("P", "R", "F1"))},
    }


def gold_row(pages: list[Page]) -> dict:
    fps = [fingerprint(p.gold) for p in pages]
    return {"pages/s": float("nan"), "recall": 1.0, "false pairs": len(false_pairs(fps, list(range(len(pages))))),
            "none": sum(fp is None for fp in fps), "P": 1.0, "R": 1.0, "F1": 1.0}


# -- the article-extraction benchmark (scrapinghub/article-extraction-benchmark) ---------

SHINGLE_WORD = re.compile(r"\w+")


def shingle_counts(text: str, n: int = 4) -> Counter:
    """The benchmark's evaluate.py: 4-grams of \\w+ tokens (one shorter gram if fewer)."""
    tokens = SHINGLE_WORD.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n])


def shingle_scores(true: str, pred: str) -> tuple[float | None, float | None]:
    """Precision and recall of one page as evaluate.py scores them (None: not counted)."""
    t, p = shingle_counts(true), shingle_counts(pred)
    tp, fp, fn = sum((t & p).values()), sum((p - t).values()), sum((t - p).values())
    if fp == fn == 0:
        return 1.0, 1.0
    return (tp / (tp + fp) if tp + fp else None), (tp / (tp + fn) if tp + fn else None)


def article_benchmark(directory: Path, chosen: dict[str, Pipeline]) -> None:
    """F1 against the benchmark's ground truth (as its evaluate.py computes it) and pages/s."""
    truth = json.loads((directory / "ground-truth.json").read_text("utf-8"))
    pages = [(gzip.decompress((directory / "html" / f"{key}.html.gz").read_bytes()).decode("utf-8"),
              item.get("url") or "", item["articleBody"]) for key, item in sorted(truth.items())]
    print(f"\n{len(pages)} pages of the article-extraction benchmark "
          f"({sum(len(h) for h, _, _ in pages) / len(pages) / 1000:.0f} kB of HTML each on average)")
    width = max(map(len, PIPELINES))
    print(f"{'pipeline':<{width}}  {'pages/s':>8}  {'P':>5}  {'R':>5}  {'F1':>5}")
    for name, pipeline in chosen.items():
        if pipeline in (raw_html,):
            continue
        start = time.process_time()
        texts = [pipeline(html, url) for html, url, _ in pages]
        seconds = time.process_time() - start
        scores = [shingle_scores(true, text or "") for (_, _, true), text in zip(pages, texts)]
        p = statistics.mean(s[0] for s in scores if s[0] is not None)
        r = statistics.mean(s[1] for s in scores if s[1] is not None)
        print(f"{name:<{width}}  {len(pages) / seconds:8.1f}  {p:5.3f}  {r:5.3f}  {2 * p * r / (p + r):5.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="120 pages, one re-fetch each")
    parser.add_argument("--pages", type=int, help="an even sample of this many pages (default: all)")
    parser.add_argument("--refetches", type=int, help="re-fetches per page (default 2)")
    parser.add_argument("--only", help="comma-separated pipeline names (substrings)")
    parser.add_argument("--article-benchmark", type=Path, metavar="DIR",
                        help="also score against a checkout of scrapinghub/article-extraction-benchmark")
    args, _ = parser.parse_known_args()
    chosen = {n: p for n, p in PIPELINES.items() if not args.only or any(o in n for o in args.only.split(","))}
    if args.article_benchmark:
        article_benchmark(args.article_benchmark, chosen)
    pages = load_pages(args.pages or (120 if args.quick else None))
    crawl = fetches(pages, args.refetches or (1 if args.quick else 2))
    print(f"{len(pages)} pages ({Counter(p.source for p in pages)}), {len(crawl)} fetches, "
          f"{sum(len(f.html) for f in crawl) / len(crawl) / 1000:.0f} kB of HTML each on average; "
          f"recall and false pairs within {K} bits")
    width = max(map(len, PIPELINES))
    print(f"\n{'pipeline':<{width}}  {'pages/s':>8}  {'recall':>7}  {'false pairs':>11}  {'none':>5}  "
          f"{'P':>5}  {'R':>5}  {'F1':>5}")
    print_row("gold main content (reference)", gold_row(pages), width)
    for name, pipeline in chosen.items():
        try:
            print_row(name, measure(pipeline, crawl, pages), width)
        except ImportError as e:
            print(f"{name:<{width}}  skipped: {e}")


def print_row(name: str, r: dict, width: int) -> None:
    print(f"{name:<{width}}  {r['pages/s']:8.1f}  {r['recall']:7.1%}  {r['false pairs']:11}  {r['none']:5}  "
          f"{r['P']:5.3f}  {r['R']:5.3f}  {r['F1']:5.3f}", flush=True)


if __name__ == "__main__":
    main()
