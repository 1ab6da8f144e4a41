"""Copies, fingerprint designs and measures of bench_fingerprint_quality.py (a library,
not a benchmark: scripts/bench.sh runs bench_*.py).

- Copies as re-crawls and reposts make them, each seeded by its page (deterministic):
  a timestamp line added and one number changed; a span of 1 % of the characters
  replaced by another span of the page; typography (spaces to NBSP/U+3000/thin
  space, straight to curly quotes, zero-width characters and soft hyphens inside
  words, full-width forms); the first two lines upper-cased; accents and harakat
  dropped.
- Fingerprints: version 1 (hashing.simhash, equal to SQL), the baseline
  (1e0ng/simhash's features: character 4-grams of the lower-cased NFKC text
  without punctuation or spaces), and version 2 designs over the version 2
  normalization (docs/fingerprint-spec.md), here from Python's unicodedata as a
  stand-in for the spec's pinned tables.
- Measures: recall@k of copies, near pairs of a corpus and which are false
  (character 5-gram Jaccard < 0.3).

The designs are measured with a vectorized stand-in for XXH3 of each feature's
UTF-8 (a token's XXH3 mixed with its neighbours' by splitmix64; a character n-gram
from its code points): any good 64-bit hash of distinct features gives the same
statistics, and per feature XXH3 calls in Python would take minutes. The rows
named "shipped" call the package's own functions.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np
import xxhash

from pysimhash_sql import hashing

# -- copies ----------------------------------------------------------------------------

_ASCII_NUMBER = re.compile(r"[0-9]+")
_EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)
SPAN_SHARE = 0.01
NBSP_SHARE = 0.10
# Other typography, per space / per letter.
IDEOGRAPHIC_SPACE_SHARE = 0.02
THIN_SPACE_SHARE = 0.02
INVISIBLE_SHARE = 0.02
FULL_WIDTH_SHARE = 0.03
_INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u00ad", "\u2060", "\ufeff")


def line_added(text: str, rng: random.Random) -> str:
    """A timestamp line added at the top or the bottom, one number changed."""
    numbers = list(_ASCII_NUMBER.finditer(text))
    if numbers:
        m = rng.choice(numbers)
        text = text[: m.start()] + str(int(m.group()) + rng.randint(1, 9)) + text[m.end() :]
    stamp = _EPOCH + timedelta(seconds=rng.randrange(3 * 365 * 86400))
    line = f"Retrieved {stamp:%Y-%m-%d %H:%M:%S} UTC"
    return f"{line}\n{text}" if rng.random() < 0.5 else f"{text}\n{line}"


def stamped(text: str, rng: random.Random) -> str:
    """text with a line `Last updated <time> UTC` at the top or the bottom (seeded time)."""
    stamp = _EPOCH + timedelta(seconds=rng.randrange(3 * 365 * 86400))
    line = f"Last updated {stamp:%Y-%m-%d %H:%M:%S} UTC"
    return f"{line}\n{text}" if rng.random() < 0.5 else f"{text}\n{line}"


def stamp_pair(text: str, seed: str) -> tuple[str, str]:
    """The page with a timestamp line, and the same page with another time on that
    line (a page that differs only in one timestamp)."""
    where = random.Random(f"stamp:{seed}").random()
    first, second = (random.Random(f"stamp:{seed}:{n}") for n in (1, 2))
    first.random = second.random = lambda: where  # the same side, another time
    return stamped(text, first), stamped(text, second)


def numbers_changed(text: str, rng: random.Random) -> str:
    """Every number (run of ASCII digits) replaced by another of as many digits."""

    def other(m: re.Match) -> str:
        old = m.group()
        while True:
            new = str(rng.randint(1 if len(old) > 1 else 0, 9)) + "".join(
                str(rng.randint(0, 9)) for _ in range(len(old) - 1))
            if new != old:
                return new

    return _ASCII_NUMBER.sub(other, text)


def number_share(text: str) -> float:
    """The share of numbers among the tokens of text (letters and digits apart)."""
    tokens = _TOKEN.findall(text)
    return sum(t[0].isdigit() for t in tokens) / len(tokens) if tokens else 0.0


_TOKEN = re.compile(r"[0-9]+|[^\W\d_]+")


def span_replaced(text: str, rng: random.Random) -> str:
    """A span of 1 % of the characters replaced by another span of the page."""
    k = max(1, round(len(text) * SPAN_SHARE))
    at = rng.randrange(len(text) - k + 1)
    # The other span does not overlap this one (for pages of at least 2k characters).
    choices = [i for i in (rng.randrange(len(text) - k + 1) for _ in range(20)) if abs(i - at) >= k] or [0]
    src = choices[0]
    return text[:at] + text[src : src + k] + text[at + k :]


def _full_width(c: str) -> str:
    return chr(ord(c) - 0x21 + 0xFF01) if "!" <= c <= "~" else c


def typography(text: str, rng: random.Random) -> str:
    """Spaces to NBSP (10 %), U+3000 and thin spaces; curly quotes; zero-width characters
    and soft hyphens inside words; full-width forms -- what changes no word."""
    out = []
    double_open = True
    prev = " "
    for c in text:
        if c == " ":
            r = rng.random()
            c = (
                "\u00a0" if r < NBSP_SHARE
                else "\u3000" if r < NBSP_SHARE + IDEOGRAPHIC_SPACE_SHARE
                else "\u2009" if r < NBSP_SHARE + IDEOGRAPHIC_SPACE_SHARE + THIN_SPACE_SHARE
                else c
            )
        elif c == '"':
            c, double_open = ("\u201c" if double_open else "\u201d"), not double_open
        elif c == "'":
            c = "\u2019" if prev.isalnum() else "\u2018"
        elif c.isalnum():
            if prev.isalnum() and rng.random() < INVISIBLE_SHARE:
                out.append(rng.choice(_INVISIBLE))
            if rng.random() < FULL_WIDTH_SHARE:
                c = _full_width(c)
        out.append(c)
        prev = c
    return "".join(out)


def case_changed(text: str, rng: random.Random) -> str:
    """The first two lines upper-cased."""
    lines = text.split("\n")
    return "\n".join([line.upper() for line in lines[:2]] + lines[2:])


def marks_dropped(text: str, rng: random.Random) -> str:
    """Accents, harakat and other combining marks dropped (as a keyboard without them types)."""
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


# name -> (what the table says, the copy function)
COPIES: dict[str, tuple[str, Callable[[str, random.Random], str]]] = {
    "line": ("a timestamp line added, one number changed", line_added),
    "span": ("a span of 1 % of the characters replaced by another from the page", span_replaced),
    "typography": ("typography: NBSP/U+3000, curly quotes, zero-width, soft hyphens, full-width", typography),
    "case": ("first two lines upper-cased", case_changed),
    "marks": ("accents / harakat dropped", marks_dropped),
    "stamp": ("only the time of a timestamp line differs (the page has one)", None),
}
# Copies that must NOT be found: a page's numbers all changed.
NUMBERS_COPY = ("every number changed", numbers_changed)


def make_copy(kind: str, text: str, seed: str) -> str:
    """The copy of `kind` of text, seeded by `seed` (the page's name)."""
    if kind == "stamp":
        return stamp_pair(text, seed)[1]
    return COPIES[kind][1](text, random.Random(f"{kind}:{seed}"))


def make_copy_of(copy: tuple[str, Callable[[str, random.Random], str]], text: str, seed: str) -> str:
    """A copy by a (title, function) pair such as NUMBERS_COPY, seeded by `seed`."""
    return copy[1](text, random.Random(f"{copy[0]}:{seed}"))


def make_original(kind: str, text: str, seed: str) -> str:
    """The page a copy of `kind` is compared with: the page itself, or for "stamp"
    the page with its timestamp line."""
    return stamp_pair(text, seed)[0] if kind == "stamp" else text


# -- version 2 normalization (stand-in) --------------------------------------------------

# Scripts.txt ranges of the scripts whose every character is a token of its own.
_ISOLATED_RANGES = (
    (0x2E80, 0x2FDF), (0x3005, 0x3005), (0x3007, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x16FE2, 0x16FE3), (0x16FF0, 0x16FF1),
    (0x20000, 0x323AF),  # Han
    (0x3041, 0x3096), (0x309D, 0x309F), (0x1B001, 0x1B11F), (0x1F200, 0x1F200),  # Hiragana
    (0x30A1, 0x30FA), (0x30FD, 0x30FF), (0x31F0, 0x31FF), (0x32D0, 0x32FE), (0x3300, 0x3357),
    (0xFF66, 0xFF6F), (0xFF71, 0xFF9D), (0x1AFF0, 0x1B000), (0x1B120, 0x1B122), (0x1B164, 0x1B167),  # Katakana
    (0x02EA, 0x02EB), (0x3105, 0x312F), (0x31A0, 0x31BF),  # Bopomofo
    (0x0E01, 0x0E3A), (0x0E40, 0x0E5B),  # Thai
    (0x0E81, 0x0EDF),  # Lao
    (0x1780, 0x17DD), (0x17E0, 0x17E9), (0x17F0, 0x17F9), (0x19E0, 0x19FF),  # Khmer
    (0x1000, 0x109F), (0xA9E0, 0xA9FE), (0xAA60, 0xAA7F),  # Myanmar
)


def isolated(c: str) -> bool:
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in _ISOLATED_RANGES)


def _dropped(c: str) -> bool:
    return unicodedata.category(c) in ("Mn", "Me", "Cf") or unicodedata.combining(c) != 0 or c == "\u0640"


def normalized_char(c: str, numbers: bool = False) -> str:
    """One code point's part of the token stream: its token characters, a space
    where it separates tokens (numbers too, as the spec has it, unless `numbers`:
    then they are word characters, as in the first drafts of version 2),
    isolated-script characters spaced as tokens of their own."""
    out = []
    word = "LN" if numbers else "L"
    for d in unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", c).casefold()):
        category = unicodedata.category(d)
        if _dropped(d):
            continue
        if category[0] not in word and category != "Mc":
            out.append(" ")
        elif isolated(d):
            out.append(f" {d} ")
        else:
            out.append(d)
    return "".join(out)


_NUMBER_MARK = "\x00"
# number_char(c, spaced=False): what an isolated-script letter becomes (word_count counts a run once).
_ISOLATED_MARK = "\x01"
_WORD_PIECES = re.compile("\x01+|[^\x01]+")


def word_count(tokens: Iterable[str]) -> int:
    """The words of tokens of Normalizer(number_char(c, spaced=False)): a run of
    isolated-script letters one word, apart from the letters and digits beside it."""
    return sum(len(_WORD_PIECES.findall(t)) for t in tokens)


def number_char(c: str, spaced: bool = True) -> str:
    """normalized_char, but a digit 0-9 the normalization makes (from `1`, `１`, `①`, `²`, ...)
    is marked as one: Normalizer joins consecutive marked ones into a number token of its
    own (text spec version 3; digits of other scripts separate, as in version 2)."""
    out = []
    if not spaced and isolated(c) and normalized_char(c).strip():  # a letter of a run that is one word
        return _ISOLATED_MARK
    for d in normalized_char(c, numbers=True):
        out.append(f"{_NUMBER_MARK}{d}{_NUMBER_MARK}" if "0" <= d <= "9" else d if d.isalpha() or d == " "
                   or unicodedata.category(d) == "Mc" else " ")
    return "".join(out)


class Normalizer:
    """Version 2 tokens of texts (Python's Unicode data stands in for the spec's tables)."""

    def __init__(self, char: Callable[[str], str] = normalized_char):
        self._char = char
        self._table: dict[int, str] = {}

    def tokens(self, text: str) -> list[str]:
        new = {c for c in set(text) if ord(c) not in self._table}
        for c in new:
            self._table[ord(c)] = self._char(c)
        out = text.translate(self._table)
        if _NUMBER_MARK in out:  # numbers of their own: digits join, a number is a token
            out = out.replace(_NUMBER_MARK * 2, "").replace(_NUMBER_MARK, " ")
        return out.split()


def baseline_text(text: str) -> str:
    """1e0ng/simhash's text: NFKC, lower-cased, only word characters (no spaces)."""
    return "".join(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


_WORD = re.compile(r"\w+")


# -- feature hashes (vectorized stand-in for XXH3 of each feature) ------------------------

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, element-wise."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def gram_hashes(items: np.ndarray, n: int, domain: int) -> np.ndarray:
    """A hash of every n consecutive items (uint64), or of all of them when fewer."""
    n = min(n, items.size)
    if n == 0:
        return np.empty(0, np.uint64)
    count = items.size - n + 1
    acc = np.full(count, np.uint64(domain * 0x9E3779B9), np.uint64)
    for j in range(n):
        acc = _mix(acc + items[j : j + count].astype(np.uint64) + _GOLDEN)
    return acc


class TokenHashes:
    """XXH3-64 of tokens' UTF-8, each token hashed once."""

    def __init__(self):
        self._cache: dict[str, int] = {}

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        cache = self._cache
        out = np.empty(len(tokens), np.uint64)
        for i, t in enumerate(tokens):
            h = cache.get(t)
            if h is None:
                h = cache[t] = xxhash.xxh3_64_intdigest(t.encode("utf-8", "surrogatepass"))
            out[i] = h
        return out


def code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)


# -- designs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One kind of feature: token shingles ("tok") or character n-grams of the token
    stream joined by single spaces ("chr"), of `size`, each voting `weight` times."""

    kind: str
    size: int
    weight: int = 1

    def __str__(self):
        return f"{self.weight}x " * (self.weight != 1) + f"{'token' if self.kind == 'tok' else 'char'} {self.size}"


@dataclass(frozen=True)
class Design:
    name: str
    parts: tuple[Part, ...]
    unique: bool = False  # each distinct feature votes once (a set, not a multiset)
    runs: bool = False  # a feature equal to the one just before it does not vote
    sample: int = 1  # only features whose (remixed) hash is 0 modulo this vote
    # How numbers count: "separate" (the spec: numbers separate tokens), "tokens"
    # (numbers are word characters), "nonum" (as tokens, but tokens of digits only left
    # out), "own" (a number is a token of its own, letters and digits apart: x200 is
    # x 200; a feature with a number in it votes number_weight x its part's weight).
    numbers: str = "separate"
    cap: int = 0  # > 0: each distinct feature votes at most this many times
    power: float = 1.0  # != 1: each distinct feature votes weight x count**power times
    number_weight: float = 1.0
    line_numbers: float = 0  # > 0: a line's numbers, all of them, are one more feature voting this many times
    # "own" numbers whose weight follows their share of the page's tokens: number_weight x
    # a ramp from 0 at NUMBER_RAMP[0] to 1 at NUMBER_RAMP[1] and above.
    number_ramp: bool = False
    ramp: tuple[float, float] | None = None  # /rampLO-HI: the ramp's ends (shares), None: NUMBER_RAMP
    # /wshare: the share of numbers among words, a run of isolated-script letters one word
    # (as number_share counts), not among tokens (one a Chinese character)
    word_share: bool = False

    def __str__(self):
        return " + ".join(map(str, self.parts)) + (", distinct" if self.unique else "") + (
            ", runs once" if self.runs else "") + (f", 1 in {self.sample}" if self.sample > 1 else "") + (
            {"separate": "", "tokens": ", numbers as tokens", "nonum": ", numbers as tokens but no number tokens",
             "own": f", numbers tokens of their own at {self.number_weight:g}x"
             + (" their share's ramp" if self.number_ramp else "")
             + (f" {self.ramp[0]:.0%}-{self.ramp[1]:.0%}" if self.ramp else "")
             + (" of words" if self.word_share else "")}[
                self.numbers]) + (f", at most {self.cap} votes" if self.cap else "") + (
            f", count^{self.power:g} votes" if self.power != 1 else "") + (
            f", a line's numbers one feature x{self.line_numbers:g}" if self.line_numbers else "")


def parse_design(spec: str) -> Design:
    """'tok3+2*chr5' with optional flags: '/set' (each distinct feature votes once),
    '/run' (runs vote once), '/sN' (1 in N features votes, chosen by hash), '/num'
    (numbers are word characters, not separators), '/nonum' (so, but tokens of
    digits only left out), '/capN' (a distinct feature votes at most N times), '/powA'
    (a distinct feature votes its weight x count**A), '/numsW' (a number is a token of
    its own, letters and digits apart, and a feature with a number votes W x), '/lnumW'
    (the numbers of a line, all of them, are one more feature voting W times), '/nshW'
    (as numsW, but W x a ramp of the numbers' share of the tokens, NUMBER_RAMP), '/rampLO-HI'
    (with nshW: the ramp from LO % to HI %) -> Design."""
    body, *flags = spec.split("/")
    sample = cap = 0
    power = number_weight = 1.0
    line_numbers = 0.0
    ramp = None
    for flag in flags:
        if m := re.fullmatch(r"ramp(\d+)-(\d+)", flag):
            ramp = (int(m.group(1)) / 100, int(m.group(2)) / 100)
            if not ramp[0] < ramp[1]:
                raise ValueError(f"design {spec!r}: /rampLO-HI needs LO < HI")
        elif re.fullmatch(r"lnum\d+(\.\d+)?", flag):
            line_numbers = float(flag[4:])
        elif re.fullmatch(r"pow\d+(\.\d+)?", flag):
            power = float(flag[3:])
        elif re.fullmatch(r"nums\d+(\.\d+)?", flag):
            number_weight = float(flag[4:])
        elif re.fullmatch(r"nsh\d+(\.\d+)?", flag):
            number_weight = float(flag[3:])
        elif re.fullmatch(r"s[1-9]\d*", flag):
            sample = int(flag[1:])
        elif re.fullmatch(r"cap[1-9]\d*", flag):
            cap = int(flag[3:])
        elif flag not in ("set", "run", "num", "nonum", "wshare"):
            raise ValueError(f"design {spec!r}: a flag after / is set, run, num, nonum, sN, capN, powA, numsW, nshW, lnumW or rampLO-HI")
    parts = []
    for part in body.split("+"):
        weight, _, rest = part.rpartition("*")
        m = re.fullmatch(r"(tok|chr)(\d+)", rest)
        if not m:
            raise ValueError(f"design part {part!r}: expected tokN or chrN, optionally W*")
        parts.append(Part(m.group(1), int(m.group(2)), int(weight or 1)))
    by_share = any(f.startswith("nsh") for f in flags)
    if ramp and not by_share:
        raise ValueError(f"design {spec!r}: /rampLO-HI goes with /nshW")
    own = by_share or any(f.startswith("nums") for f in flags)
    numbers = "own" if own else "nonum" if "nonum" in flags else "tokens" if "num" in flags else "separate"
    return Design(spec, tuple(parts), "set" in flags, "run" in flags, sample or 1, numbers, cap, power, number_weight,
                  line_numbers, by_share, ramp, "wshare" in flags)


def _counts(h: np.ndarray) -> np.ndarray:
    """How many of the hashes have each of the 64 bits set."""
    if h.size == 0:
        return np.zeros(64, np.int64)
    return np.unpackbits(h.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little").sum(
        0, dtype=np.int64
    )


def vote_parts(parts: Iterable[tuple[np.ndarray, int | np.ndarray]]) -> int:
    """The weighted vote of (hashes, weight) groups, a weight for the group or one a
    hash: bit i set iff the weight of hashes with it set exceeds the weight of those
    with it clear."""
    total = np.zeros(64, np.float64)
    n = 0.0
    for h, w in parts:
        if isinstance(w, np.ndarray):
            if h.size:
                total += w @ np.unpackbits(h.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
                n += w.sum()
        else:
            total += w * _counts(h)
            n += w * h.size
    return int(np.packbits(2 * total > n, bitorder="little").view("<u8")[0])


_DIGITS = re.compile(r"[0-9]+")


# Which of h are among the first `cap` occurrences of their value: version 3's cap.
_capped_mask = hashing.first_occurrences


def _capped(h: np.ndarray, cap: int) -> np.ndarray:
    """h without the occurrences of each value after its first `cap`."""
    return h[_capped_mask(h, cap)]


def _windows_any(flags: np.ndarray, n: int) -> np.ndarray:
    """For every n consecutive flags (or all of them when fewer), whether any is set
    (aligned with gram_hashes)."""
    n = min(n, flags.size)
    if n == 0:
        return np.zeros(0, bool)
    c = np.concatenate(([0], np.cumsum(flags, dtype=np.int64)))
    return c[n:] - c[:-n] > 0


class Fingerprinter:
    """Fingerprints of texts by every design at once (the normalization runs once a text)."""

    def __init__(self, designs: Sequence[Design]):
        self.designs = list(designs)
        self.normalizer = Normalizer()
        self.with_numbers = Normalizer(lambda c: normalized_char(c, numbers=True))
        self.own_numbers = Normalizer(number_char)
        self.number_words = Normalizer(lambda c: number_char(c, spaced=False))
        self.token_hashes = TokenHashes()
        self.features = {d.name: 0 for d in self.designs}
        self.chars = 0

    def __call__(self, text: str) -> dict[str, int]:
        streams = {}  # Design.numbers -> (tokens, their hashes, code points of them joined or None)

        def stream(numbers: str):
            if numbers not in streams:
                if numbers == "separate":
                    tokens = self.normalizer.tokens(text)
                elif numbers == "own":
                    tokens = self.own_numbers.tokens(text)
                else:
                    tokens = self.with_numbers.tokens(text)
                    if numbers == "nonum":
                        tokens = [t for t in tokens if not _DIGITS.fullmatch(t)]
                streams[numbers] = [tokens, self.token_hashes(tokens), None]
            return streams[numbers]

        self.chars += len(text)
        out = {}
        line_hashes = None
        for d in self.designs:
            groups = []
            s = stream(d.numbers)
            for p in d.parts:
                if p.kind == "tok":
                    h = gram_hashes(s[1], p.size, 1)
                else:
                    if s[2] is None:
                        s[2] = code_points(" ".join(s[0]))
                    h = gram_hashes(s[2], p.size, 2)
                # A feature's own weight (a number in it, "own" numbers), else None: all 1.
                w = None
                if d.numbers == "own" and (d.number_weight != 1 or d.number_ramp):
                    number_tokens = np.fromiter(map(_is_number_token, s[0]), bool, len(s[0]))
                    flags = number_tokens if p.kind == "tok" else _is_number_char(s[2])
                    weight = d.number_weight
                    if d.number_ramp:
                        lo, hi = d.ramp or NUMBER_RAMP
                        if d.word_share:
                            words = word_count(self.number_words.tokens(text))
                            share = number_tokens.sum() / words if words else 0.0
                        else:
                            share = number_tokens.mean() if number_tokens.size else 0.0
                        weight *= min(1.0, max(0.0, (share - lo) / (hi - lo)))
                    w = np.where(_windows_any(flags, p.size), weight, 1.0)
                keep = None
                if d.unique:
                    _, keep = np.unique(h, return_index=True)
                elif d.runs and h.size > 1:
                    keep = np.flatnonzero(np.concatenate(([True], h[1:] != h[:-1])))
                if keep is not None:
                    h = h[keep]
                    w = None if w is None else w[keep]
                masks = []
                if d.cap:
                    masks.append(_capped_mask(h, d.cap))
                if d.sample > 1:
                    masks.append(_mix(h ^ _GOLDEN) % np.uint64(d.sample) == 0)
                for m in masks:
                    h = h[m]
                    w = None if w is None else w[m]
                self.features[d.name] += p.weight * h.size
                if d.power != 1:
                    values, first, counts = np.unique(h, return_index=True, return_counts=True)
                    each = p.weight * counts.astype(np.float64) ** d.power
                    groups.append((values, each if w is None else each * w[first]))
                elif w is not None:
                    groups.append((h, p.weight * w))
                else:
                    groups.append((h, p.weight))
            if d.line_numbers:
                if line_hashes is None:
                    line_hashes = line_number_hashes(text)
                groups.append((line_hashes, d.line_numbers))
                self.features[d.name] += d.line_numbers * line_hashes.size
            out[d.name] = vote_parts(groups)
        return out


_OWN_NUMBERS = Normalizer(number_char)
# /nshW: the weight of features with a number rises from 0 where numbers are this
# share of the tokens to W where they are that share or more.
NUMBER_RAMP = (0.1, 0.2)


def line_number_hashes(text: str) -> np.ndarray:
    """A hash of the numbers of each line that has any (all of them, in order, as the
    tokens of numbers of their own: typography inside a number changes nothing)."""
    out = []
    for line in text.splitlines():
        numbers = [t for t in _OWN_NUMBERS.tokens(line) if _is_number_token(t)]
        if numbers:
            out.append(xxhash.xxh3_64_intdigest(" ".join(numbers).encode(), seed=3))
    return np.array(out, np.uint64)


def _is_number_token(token: str) -> bool:
    return "0" <= token[0] <= "9"


def _is_number_char(cps: np.ndarray) -> np.ndarray:
    """Which code points are numbers (the digits 0-9: number_char leaves no other)."""
    return (cps >= 0x30) & (cps <= 0x39)


def baseline_simhash(text: str) -> int:
    """The baseline's fingerprint: 1e0ng/simhash's character 4-grams (vectorized hash)."""
    return vote_parts([(gram_hashes(code_points(baseline_text(text)), 4, 3), 1)])


def baseline_feature_count(text: str) -> int:
    n = len(baseline_text(text))
    return min(n, max(1, n - 3))


def v1_simhash(text: str) -> int:
    return hashing.simhash(text)


def v1_feature_count(text: str) -> int:
    n = len(hashing.tokenize(text))
    return min(n, max(1, n - 2))


def shipped_v2() -> Callable[[str], int] | None:
    """The package's version 2 text fingerprint, once it exists."""
    return getattr(hashing, "simhash_v2", None)


def shipped_v2_feature_count() -> Callable[[str], int] | None:
    """The number of features of the package's version 2, once it shows them."""
    features = getattr(hashing, "features_v2", None)
    return None if features is None else (lambda text: len(features(text)))


def shipped_v3_feature_count(text: str) -> float:
    """The votes of the package's version 3 in units of a feature without a digit
    voting once (as version 2's count: a character 5-gram counts twice)."""
    return sum(votes for _, votes in hashing.features_v3(text)) / hashing.V3_RAMP_STEPS


# -- measures -----------------------------------------------------------------------------


def popcount(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.uint64)
    return np.unpackbits(x.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1).sum(1)


def gram_set(text: str, n: int = 5) -> set[str]:
    t = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return {t[i : i + n] for i in range(max(1, len(t) - n + 1))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def near_doc_pairs(fingerprints: np.ndarray, k: int = 3) -> np.ndarray:
    """Every pair (i, j), i < j, of documents whose fingerprints are within k bits
    (equal ones too), from the package's find_all over the distinct values."""
    fps = np.asarray(fingerprints, np.uint64)
    values, inverse = np.unique(fps, return_inverse=True)
    members: dict[int, list[int]] = {}
    for doc, v in enumerate(inverse.tolist()):
        members.setdefault(v, []).append(doc)
    pairs = []
    for docs in members.values():  # equal fingerprints
        pairs.extend((a, b) for i, a in enumerate(docs) for b in docs[i + 1 :])
    index = {int(v): i for i, v in enumerate(values.tolist())}
    for a, b in hashing.find_all(values.tolist(), k + 1, k):
        pairs.extend((x, y) if x < y else (y, x) for x in members[index[a]] for y in members[index[b]])
    return np.array(sorted(pairs), np.int64).reshape(-1, 2)
