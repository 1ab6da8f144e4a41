"""Throughput of the hashing layer (pysimhash_sql.hashing: the implementation in use, hashing.IMPLEMENTATION).

Usage: python bench/bench_python.py [--quick] [--cpu-time]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from benchlib import best_of, chinese_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from pysimhash_sql.hashing import compute, find_all, simhash, simhash_v2, simhash_weighted, vote

LICENSES = Path("/usr/share/common-licenses")


def corpus(size: int) -> str:
    """English text of about `size` bytes: the licenses shipped with Debian, repeated,
    or, where they are missing, Zipf-distributed words with some punctuation."""
    files = sorted(p for p in LICENSES.glob("*") if p.is_file()) if LICENSES.is_dir() else []
    if files:
        text = "\n".join(p.read_text("utf-8", "replace") for p in files)
    else:
        rng = np.random.default_rng(0)
        vocab = ["".join(rng.choice(list("etaoinshrdlcumwfgypbvkjxqz"), rng.integers(1, 10)))
                 for _ in range(20000)]
        ranks = np.minimum(rng.zipf(1.1, size // 5), len(vocab)) - 1
        text = " ".join(vocab[r] + (", " if r % 17 == 0 else "") for r in ranks.tolist())
    return (text * (size // len(text) + 1))[:size]


def random_hashes(n: int, near: int, rng: np.random.Generator) -> list[int]:
    """n random hashes, `near` of them copies of others with 1 to 3 bits flipped."""
    h = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    src = rng.integers(0, n - near, near)
    flips = np.zeros(near, np.uint64)
    for _ in range(3):
        flips |= np.uint64(1) << rng.integers(0, 64, near).astype(np.uint64)
    h[n - near :] = h[src] ^ flips
    return h.tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs, one run each")
    parser.add_argument(
        "--cpu-time", action="store_true", help="time in process CPU seconds: steadier on a busy machine"
    )
    args = parser.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    size, n, repeat = (2_000_000, 100_000, 1) if args.quick else (20_000_000, 1_000_000, 3)
    rng = np.random.default_rng(42)
    rows = []

    text = corpus(size)
    chinese = chinese_text()
    texts = {
        "English": text,
        # Latin text that is not all ASCII: version 2 leaves its ASCII fast path.
        "English, 1% NBSP": "".join(w + ("\u00a0" if i % 100 == 99 else " ") for i, w in enumerate(text.split(" "))),
        "Chinese": (chinese * (size // 3 // len(chinese) + 1))[: size // 3] if chinese else None,
    }
    for name, function in [("simhash", simhash), ("simhash_v2", simhash_v2)]:
        for label, sample in texts.items():
            if sample is None:
                rows.append((f"{name}(text), {label}", float("nan"), "missing: Debian's manpages-zh"))
                continue
            mb = len(sample.encode()) / 1e6
            t, _ = best_of(repeat, lambda: function(sample), clock)
            rows.append((f"{name}(text), {label}, one {mb:.0f} MB text", t, f"{mb / t:.1f} MB/s"))
            docs = [sample[i : i + 2000] for i in range(0, len(sample), 2000)]
            t, _ = best_of(repeat, lambda: [function(d) for d in docs], clock)
            rate = f"{mb / t:.1f} MB/s, {len(docs) / t:,.0f} docs/s"
            rows.append((f"{name}(text), {label}, {len(docs):,} docs of 2,000 characters", t, rate))

    hashes = random_hashes(n, n // 100, rng)
    array = np.array(hashes, np.uint64)
    t, _ = best_of(repeat, lambda: vote(array), clock)
    rows.append((f"vote(uint64 array of {n:,})", t, f"{n / t / 1e6:.1f} M hashes/s"))
    t, _ = best_of(repeat, lambda: compute(hashes), clock)
    rows.append((f"compute(list of {n:,} ints)", t, f"{n / t / 1e6:.1f} M hashes/s"))
    m = n // 10
    pairs = list(zip(hashes[:m], rng.standard_normal(m).tolist()))
    t, _ = best_of(repeat, lambda: simhash_weighted(pairs), clock)
    rows.append((f"simhash_weighted({m:,} pairs)", t, f"{m / t / 1e6:.2f} M pairs/s"))

    for blocks in (5, 6):
        t, found = best_of(repeat, lambda: find_all(hashes, blocks, 3), clock)
        rows.append((f"find_all({n:,} hashes, {blocks}, 3)", t, f"{len(found):,} pairs"))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'seconds':>8}  result")
    for name, seconds, result in rows:
        print(f"{name:<{width}}  {seconds:8.3f}  {result}")


if __name__ == "__main__":
    main()
