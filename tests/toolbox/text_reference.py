"""The text fingerprints of versions 2 and 3 as their spec says them
(docs/fingerprint-spec.md §6, §8), one character at a time, reading the
Unicode tables directly: the plain reference that tests/package/test_text_v2.py
and test_text_v3.py hold the vectorised implementations (pysimhash_sql/
text_v2.py, text_v3.py, hashing.py) to, and the texts hypothesis draws."""

from __future__ import annotations

from fractions import Fraction

import xxhash
from hypothesis import strategies as st

from pysimhash_sql import hashing
from pysimhash_sql import unicode_tables as ut

# -- version 2 (§6) ------------------------------------------------------------------


def ref_chars(c: int) -> list[tuple[int, int]]:
    """What code point c becomes (spec §6.2): (code point, kind) pairs."""
    if 0xAC00 <= c < 0xAC00 + 11172:
        s = c - 0xAC00
        jamo = [0x1100 + s // 588, 0x1161 + s % 588 // 28] + ([0x11A7 + s % 28] if s % 28 else [])
        return [(j, ut.WORD) for j in jamo]
    value = int(ut.STAGE2[(int(ut.STAGE1[c >> ut.BLOCK_SHIFT]) << ut.BLOCK_SHIFT) | (c & ut.BLOCK_MASK)])
    if value < ut.MAPPED:
        return [(c, value)]
    m = value - ut.MAPPED
    return [(int(e) & 0xFFFFFF, int(e) >> 24) for e in ut.POOL[ut.MAPPING_OFFSETS[m] : ut.MAPPING_OFFSETS[m + 1]]]


def ref_tokens(text: str) -> list[str]:
    tokens, current = [], ""
    for char in text:
        for c, kind in ref_chars(ord(char)):
            if kind == ut.WORD:
                current += chr(c)
            elif kind in (ut.SOLO, ut.SEPARATOR):
                if current:
                    tokens.append(current)
                current = ""
                if kind == ut.SOLO:
                    tokens.append(chr(c))
    return tokens + [current] if current else tokens


def ref_grams(items: list[str], n: int, joiner: str) -> list[str]:
    """Every n consecutive items joined; all of them when there are fewer; none of none."""
    if not items or n == 0:
        return []
    return [joiner.join(items[j : j + n]) for j in range(len(items) - n + 1)] or [joiner.join(items)]


def ref_runs_once(features: list[str]) -> list[str]:
    """Under V2_RUNS_ONCE, without the features equal to the one just before
    (equal hashes: for these short strings, equal features)."""
    if not hashing.V2_RUNS_ONCE:
        return features
    return [f for i, f in enumerate(features) if i == 0 or f != features[i - 1]]


def ref_features(text: str) -> list[str]:
    """The token shingles, then the character n-grams (spec §6.4), each part
    without its runs, repeated as many times as its weight."""
    tokens = ref_tokens(text)
    shingles = ref_runs_once(ref_grams(tokens, hashing.V2_TOKEN_SHINGLE, " "))
    grams = ref_runs_once(ref_grams(list(" ".join(tokens)), hashing.V2_CHAR_GRAM, ""))
    return shingles * hashing.V2_TOKEN_WEIGHT + grams * hashing.V2_CHAR_WEIGHT


def ref_simhash_v2(text: str) -> int:
    """Each feature votes once per time it is listed: its weight."""
    hashes = [xxhash.xxh3_64_intdigest(f.encode()) for f in ref_features(text)]
    return sum(1 << bit for bit in range(64) if 2 * sum(h >> bit & 1 for h in hashes) > len(hashes))


script_text = st.text(
    st.one_of(
        st.sampled_from(list("aZ09 .,-'\t\u00a0\u00ad\u200b\u3000“”，。ـ\u064e")),
        st.characters(min_codepoint=0x80, max_codepoint=0x24F),
        st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),
        st.characters(min_codepoint=0xAC00, max_codepoint=0xAD00),
        st.characters(min_codepoint=0xE00, max_codepoint=0xEFF),
        st.characters(min_codepoint=0xFB00, max_codepoint=0xFFFF, exclude_categories=("Cs",)),
        st.characters(exclude_categories=("Cs",)),
    ),
    max_size=80,
)


# -- version 3 (§8) ------------------------------------------------------------------

DIGITS = "0123456789"


def ref_words_v3(text: str) -> tuple[list[str], int]:
    """Version 2's tokens, but a digit 0-9 the normalisation makes is a token
    character of its own kind: runs of letters and runs of digits are tokens
    apart.  And the number of words: the tokens, a run of SOLO characters one."""
    tokens, current, current_kind, words, previous = [], "", None, 0, None
    for char in text:
        for c, kind in ref_chars(ord(char)):
            if kind == ut.DROP:
                continue
            if kind == ut.SEPARATOR and chr(c) in DIGITS:
                kind = "digit"
            if kind == ut.SOLO and previous != ut.SOLO:
                words += 1
            previous = kind
            if kind in (ut.WORD, "digit") and (kind == current_kind or not current):
                current, current_kind = current + chr(c), kind
                continue
            if current:
                tokens.append(current)
                words += 1
            current, current_kind = "", None
            if kind == ut.SOLO:
                tokens.append(chr(c))
            elif kind in (ut.WORD, "digit"):
                current, current_kind = chr(c), kind
    return (tokens + [current], words + 1) if current else (tokens, words)


def ref_tokens_v3(text: str) -> list[str]:
    return ref_words_v3(text)[0]


def ref_ramp(words: int, numbers: int) -> int:
    """floor(steps x (share of numbers among the words - low) / (high - low)), within 0 .. steps."""
    if not words:
        return 0
    low, high = (Fraction(p, 100) for p in hashing.V3_NUMBER_SHARE)
    steps = hashing.V3_RAMP_STEPS
    return min(steps, max(0, int((Fraction(numbers, words) - low) / (high - low) * steps // 1)))


def ref_features_v3(text: str) -> list[tuple[str, int]]:
    """(feature, votes) of the features that vote: each part without its runs,
    each distinct feature at its first V3_MAX_VOTES occurrences only, votes its
    weight x (V3_RAMP_STEPS, or V3_NUMBER_WEIGHT x the ramp with a digit in it)."""
    tokens, words = ref_words_v3(text)
    ramp = ref_ramp(words, sum(t[0] in DIGITS for t in tokens))
    out = []
    for features, weight in ((ref_grams(tokens, hashing.V2_TOKEN_SHINGLE, " "), hashing.V2_TOKEN_WEIGHT),
                             (ref_grams(list(" ".join(tokens)), hashing.V2_CHAR_GRAM, ""), hashing.V2_CHAR_WEIGHT)):
        seen: dict[str, int] = {}
        for feature in ref_runs_once(features):
            seen[feature] = seen.get(feature, 0) + 1
            votes = weight * (hashing.V3_NUMBER_WEIGHT * ramp if set(feature) & set(DIGITS) else hashing.V3_RAMP_STEPS)
            if seen[feature] <= hashing.V3_MAX_VOTES and votes:
                out.append((feature, votes))
    return out


def ref_simhash_v3(text: str) -> int:
    """The weighted vote (§2) of the features, in integers."""
    pairs = [(xxhash.xxh3_64_intdigest(f.encode()), v) for f, v in ref_features_v3(text)]
    total = sum(v for _, v in pairs)
    return sum(1 << bit for bit in range(64) if 2 * sum(v for h, v in pairs if h >> bit & 1) > total)
