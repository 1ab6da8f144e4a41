"""Simhash fingerprints, exactly as docs/fingerprint-spec.md defines them.

Text fingerprints are computed by one of two implementations of the spec
(IMPLEMENTATION says which is in use): the compiled fingerprint core,
pysimhash_sql._simhash_core (pg_ext/src/core: the C the extension runs, built
with the package where a C compiler and xxhash.h are at hand; GIL released),
or the pure-Python code of this module (PURE_PYTHON: the executable reference
of the spec, used where the module is missing or PYSIMHASH_SQL_PURE_PYTHON=1).
Both give the same bits, and the same exceptions.  fingerprints() computes
many at once, on every core.

Text fingerprints come in spec versions (TEXT_SPEC_VERSIONS) that are never
comparable: simhash() is version 1, simhash_v2() version 2, simhash_v3()
version 3, and fingerprint(text, version=...) any of them, by number.

Fingerprints and hashes are unsigned ints in 0 .. 2**64-1. Where a hash is an
input, a negative int in the signed 64-bit range is read as its two's-complement
bit pattern, as SQL reads a bigint.

Also drop-in equivalents of simhash-py's functions: unsigned_hash,
num_differing_bits, compute, shingle and find_all.
"""

from __future__ import annotations

import importlib
import numbers
import operator
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache, partial
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, TypeVar

from ._cpus import usable_cpus
from .fingerprint import MAX_FINGERPRINT, check_fingerprint
from .text_spec import TEXT_SPEC_VERSION_LATEST, TEXT_SPEC_VERSIONS, TextFingerprint, check_version

if TYPE_CHECKING:
    import numpy as np


class _OnFirstUse:
    """A module imported when one of its attributes is first read, then bound
    in this module's globals under its own name: numpy and the pure-Python
    reference's modules, which the compiled core's callers (the CLI's
    fingerprint) never need, cost them no start (numpy alone: some 80 ms)."""

    def __init__(self, alias: str, module: str) -> None:
        self._alias, self._module = alias, module

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._module, __package__)
        globals()[self._alias] = module
        return getattr(module, attr)


if not TYPE_CHECKING:
    np = _OnFirstUse("np", "numpy")
xxhash = _OnFirstUse("xxhash", "xxhash")
text_v2 = _OnFirstUse("text_v2", ".text_v2")
text_v3 = _OnFirstUse("text_v3", ".text_v3")
_xxh3 = _OnFirstUse("_xxh3", "._xxh3")
_find_all = _OnFirstUse("_find_all", "._find_all")


# Names of this module that live in the reference's modules, read there when
# first asked for: UNICODE_VERSION (the Unicode of its tables), find_all's rule.
_NAMES_ON_FIRST_USE = {"UNICODE_VERSION": ".unicode_tables", "MAX_BLOCKS": "._find_all",
                       "blocks_exceed_distance": "._find_all"}


def __getattr__(name: str) -> Any:
    if name in _NAMES_ON_FIRST_USE:
        return getattr(importlib.import_module(_NAMES_ON_FIRST_USE[name], __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "MASK64",
    "TEXT_SPEC_VERSIONS",
    "TEXT_SPEC_VERSION_LATEST",
    "UNICODE_VERSION",
    "tokenize",
    "shingles",
    "feature_hash",
    "simhash",
    "tokenize_v2",
    "features_v2",
    "simhash_v2",
    "tokenize_v3",
    "features_v3",
    "simhash_v3",
    "fingerprint",
    "fingerprints",
    "fingerprint_batches",
    "in_order",
    "fingerprint_values",
    "IMPLEMENTATION",
    "PURE_PYTHON",
    "simhash_weighted",
    "vote",
    "hamming_distance",
    "unsigned_hash",
    "num_differing_bits",
    "compute",
    "shingle",
    "find_all",
]

# The largest fingerprint under the name this module exported first (its home:
# fingerprint.MAX_FINGERPRINT).
MASK64 = MAX_FINGERPRINT
Text = str | bytes | bytearray | memoryview
T = TypeVar("T")
R = TypeVar("R")

# Version 2's features (spec §6.4): shingles of V2_TOKEN_SHINGLE tokens, each
# voting V2_TOKEN_WEIGHT times, and n-grams of V2_CHAR_GRAM characters of the
# tokens joined by single spaces, each voting V2_CHAR_WEIGHT times (a size of 0
# leaves that part out); with V2_RUNS_ONCE, a feature whose hash is the hash of
# the feature of its part just before it does not vote.  C's home of the same
# constants: core/text_walk.h.
V2_TOKEN_SHINGLE = 3
V2_TOKEN_WEIGHT = 1
V2_CHAR_GRAM = 5
V2_CHAR_WEIGHT = 2
V2_RUNS_ONCE = True

# Version 3's features (spec §8): version 2's kinds, sizes, weights and runs rule
# (the V2_* constants above, read by both), then each distinct feature of a kind
# (by hash) votes at most V3_MAX_VOTES times (its first occurrences), and a
# feature with a digit in it votes V3_NUMBER_WEIGHT x a ramp of the text's
# share of numbers among its words (a run of SOLO characters one word) instead of once: 0 up to V3_NUMBER_SHARE[0] %, 1 from
# V3_NUMBER_SHARE[1] % on, in V3_RAMP_STEPS steps (integers: a feature without
# a digit votes its weight x V3_RAMP_STEPS).  C's home of the same constants:
# pg_ext/src/core/text_v3.c.
V3_MAX_VOTES = 32
V3_NUMBER_WEIGHT = 2
V3_NUMBER_SHARE = (15, 25)
V3_RAMP_STEPS = 16

# Normalised bytes split into tokens at a time: bounds the memory a huge text takes.
_BATCH_BYTES = 1 << 20
# Spec §3.2 as one bytes.translate(): separator bytes become spaces, A-Z become
# a-z, every other token byte (a-z, 0-9, >= 0x80) stays.
_NORMALISE = bytes(
    c + 32 if 0x41 <= c <= 0x5A
    else c if 0x30 <= c <= 0x39 or 0x61 <= c <= 0x7A or c >= 0x80
    else 0x20
    for c in range(256)
)


@cache
def _byte_bits() -> np.ndarray:
    """_byte_bits()[v, i] is bit i of the byte value v."""
    return np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.int64)


# -- input checking ---------------------------------------------------------------


def _as_bytes(text: Text) -> bytes:
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, Text):
        return bytes(text)
    raise TypeError(f"expected str or bytes, not {type(text).__name__}")


def _hash_int(value) -> int:
    """A 64-bit hash from an int in -2**63 .. 2**64-1 (negative: two's complement)."""
    value = operator.index(value)
    if not -(1 << 63) <= value <= MASK64:
        raise ValueError(f"{value} is not a 64-bit hash")
    return value & MASK64


def _shingle_size(shingle_size: int) -> int:
    shingle_size = operator.index(shingle_size)
    if shingle_size < 1:
        raise ValueError(f"shingle_size must be at least 1, not {shingle_size}")
    return shingle_size


def _weights(weights: list) -> np.ndarray:
    # Type checks per type rather than per item: numbers.Real is a slow ABC check.
    for kind in set(map(type, weights)) - {float, int}:
        if not issubclass(kind, numbers.Real):
            raise TypeError(f"a weight must be a real number, not {kind.__name__}")
    try:
        w = np.array(list(map(float, weights)), np.float64)
    except OverflowError:
        raise ValueError("a weight is out of the float range") from None
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite (no NaN or infinity)")
    return w


def _hash_array(hashes) -> np.ndarray:
    """The hashes as a 1-D uint64 array (see the module docstring for signed values)."""
    if isinstance(hashes, np.ndarray) and hashes.ndim == 1 and hashes.dtype.kind in "iu":
        signed = hashes.dtype.kind == "i"
        # Contiguous: a strided slice (hashes[::2]) cannot be viewed as bytes.
        return np.ascontiguousarray(hashes.astype(np.int64 if signed else np.uint64, copy=False)).view(np.uint64)
    seq = hashes if isinstance(hashes, list | tuple) else list(hashes)
    # Fast path for non-negative ints: fromiter alone would also take floats and
    # numeric strings, and numpy 1.x wraps negative ints with a warning.
    if set(map(type, seq)) <= {int} and (not seq or min(seq) >= 0):
        try:
            return np.fromiter(seq, np.uint64, len(seq))
        except OverflowError:  # beyond 64 bits: _hash_int raises the error
            pass
    return np.fromiter(map(_hash_int, seq), np.uint64, len(seq))


# -- the text fingerprint (spec §3) -----------------------------------------------


def _token_batches(data: bytes) -> Iterator[list[bytes]]:
    """The tokens of data (spec §3.2), in lists covering about _BATCH_BYTES each."""
    # After translate() every separator is a space, and bytes.split() splits at
    # ASCII white space only, so it yields exactly the tokens.
    return text_v2.split_at_spaces(data.translate(_NORMALISE), _BATCH_BYTES)


def _shingle_windows(token_batches: Iterable[list[bytes]], s: int) -> Iterator[tuple[list[bytes], bool]]:
    """The walk of spec §3.3 over tokens given in batches: (tokens, True) for
    each batch with the last s - 1 tokens before it prepended, whose s-token
    runs are the shingles; or, when there are 1 <= n < s tokens in all,
    (tokens, False): one feature of all of them."""
    window: list[bytes] = []  # the last s - 1 tokens: shingles that span two batches
    found = False
    for batch in token_batches:
        tokens = window + batch
        if len(tokens) >= s:
            found = True
            yield tokens, True
        window = tokens[max(0, len(tokens) - s + 1) :]
    if window and not found:
        yield window, False


def _shingle_batches(token_batches: Iterable[list[bytes]], s: int) -> Iterator[Iterable[bytes]]:
    """The features (spec §3.3) of tokens given in batches, as joined copies."""
    for tokens, shingles in _shingle_windows(token_batches, s):
        yield map(b" ".join, zip(*(islice(tokens, i, None) for i in range(s)))) if shingles else [b" ".join(tokens)]


def _features(data: bytes, s: int) -> Iterator[bytes]:
    """The features of data (spec §3.3)."""
    return chain.from_iterable(_shingle_batches(_token_batches(data), s))


def _decoded(items: list[bytes], like: Text) -> list:
    # Tokens and features of UTF-8 text are valid UTF-8: in version 1 every byte
    # >= 0x80 is a token byte, so a boundary never falls inside a multi-byte
    # character; version 2 writes whole characters.
    return [item.decode("utf-8") for item in items] if isinstance(like, str) else items


def tokenize(text: Text) -> list:
    """The tokens of text (spec §3.2): str for str input, bytes for bytes input."""
    return _decoded(list(chain.from_iterable(_token_batches(_as_bytes(text)))), text)


def shingles(text: Text, shingle_size: int = 3) -> list:
    """The features of text (spec §3.3): str for str input, bytes for bytes input."""
    return _decoded(list(_features(_as_bytes(text), _shingle_size(shingle_size))), text)


def feature_hash(feature: Text) -> int:
    """XXH3-64, seed 0, of the feature's UTF-8 bytes, unsigned (spec §3.4)."""
    return xxhash.xxh3_64_intdigest(_as_bytes(feature))


def simhash(text: Text, shingle_size: int = 3) -> TextFingerprint:
    """The fingerprint of text, spec version 1 (spec §3); bytes are used as they are.
    An int that carries its version (text_spec.TextFingerprint)."""
    return TextFingerprint(_IMPLEMENTATION.simhash(text, _shingle_size(shingle_size)), 1)


def _vote_features(features: Iterable[bytes]) -> int:
    """The vote (spec §1) over the XXH3-64 hashes of features."""
    return _vote_array(np.fromiter(map(xxhash.xxh3_64_intdigest, features), np.uint64))


# -- the text fingerprint, version 2 (spec §6) -------------------------------------


def _v2_text(text: Text) -> str:
    if isinstance(text, str):
        return text
    return text_v2.as_text(_as_bytes(text))


def _v2_tokens(text: Text) -> Iterator[list[bytes]]:
    return text_v2.token_batches(_v2_text(text))


# Features as spans of a buffer: data[starts[i]:ends[i]] for every i.
Spans = "tuple[bytes, np.ndarray, np.ndarray]"


def _one_span(data: bytes) -> Spans:
    return data, np.zeros(1, np.int64), np.full(1, len(data), np.int64)


def _token_shingle_spans(token_batches: Iterable[list[bytes]], s: int) -> Iterator[Spans]:
    """Shingles of s tokens (spec §3.3, §6.4), as spans of the tokens joined by single spaces."""
    for tokens, shingles in _shingle_windows(token_batches, s):
        if not shingles:
            yield _one_span(b" ".join(tokens))
            continue
        lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
        starts = np.cumsum(lengths + 1) - lengths - 1
        yield b" ".join(tokens), starts[: len(tokens) - s + 1], (starts + lengths)[s - 1 :]


def _char_gram_spans(token_batches: Iterable[list[bytes]], n: int) -> Iterator[Spans]:
    """The n-grams of characters of the tokens joined by single spaces (spec §6.4);
    one feature of them all when there are fewer than n characters."""
    carry = ""  # the last n - 1 characters: n-grams that span two batches
    started = found = False
    for batch in token_batches:
        if not batch:
            continue
        joined = b" ".join(batch).decode("utf-8")
        chars = carry + " " + joined if started else joined
        started = True
        if len(chars) >= n:
            found = True
            data = chars.encode("utf-8")
            starts = np.flatnonzero((np.frombuffer(data, np.uint8) & 0xC0) != 0x80)  # each character's
            yield data, starts[: len(chars) - n + 1], np.append(starts[n:], len(data))
        carry = chars[max(0, len(chars) - n + 1) :]
    if carry and not found:
        yield _one_span(carry.encode("utf-8"))


def _v2_parts(text: Text) -> list[tuple[list[Spans], int]]:
    """The features of each part of version 2 that is used, with its weight."""
    parts = []
    if V2_TOKEN_SHINGLE:
        parts.append((list(_token_shingle_spans(_v2_tokens(text), V2_TOKEN_SHINGLE)), V2_TOKEN_WEIGHT))
    if V2_CHAR_GRAM:
        parts.append((list(_char_gram_spans(_v2_tokens(text), V2_CHAR_GRAM)), V2_CHAR_WEIGHT))
    return parts


def _span_hashes(spans: list[Spans]) -> np.ndarray:
    """The XXH3-64 hashes of a part's features (vectorised: _xxh3.py)."""
    return np.concatenate([np.empty(0, np.uint64), *(_xxh3.xxh3_spans(*batch) for batch in spans)])


def tokenize_v2(text: Text) -> list:
    """The tokens of text, spec version 2 (§6.3): str for str input, UTF-8
    bytes for bytes input (read as UTF-8, ill-formed sequences separating tokens)."""
    return _decoded(list(chain.from_iterable(_v2_tokens(text))), text)


def _voting(hashes: np.ndarray) -> np.ndarray:
    """Which of a part's features vote: under V2_RUNS_ONCE, not one whose hash is
    the hash of the feature just before it."""
    if not V2_RUNS_ONCE or hashes.size < 2:
        return np.ones(hashes.size, bool)
    return np.concatenate(([True], hashes[1:] != hashes[:-1]))


def features_v2(text: Text) -> list:
    """The features of text that vote, spec version 2 (§6.4): the token shingles,
    then the character n-grams, each part as many times as its weight (so that
    vote() of their hashes is the fingerprint); str for str input, bytes for bytes."""
    out = []
    for spans, weight in _v2_parts(text):
        features = [data[a:b] for data, starts, ends in spans for a, b in zip(starts.tolist(), ends.tolist())]
        out += [f for f, votes in zip(features, _voting(_span_hashes(spans)).tolist()) if votes] * weight
    return _decoded(out, text)


def simhash_v2(text: Text) -> TextFingerprint:
    """The fingerprint of text, spec version 2 (§6): SQL's simhash_v2(text).
    An int that carries its version (text_spec.TextFingerprint)."""
    return TextFingerprint(_IMPLEMENTATION.simhash_v2(text), 2)


# -- the text fingerprint, version 3 (spec §8) -------------------------------------


def number_ramp(words: int, numbers: int) -> int:
    """The ramp of version 3 (spec §8.3), 0 .. V3_RAMP_STEPS, for a text of
    `words` words of which `numbers` are numbers."""
    low, high = V3_NUMBER_SHARE
    above = 100 * numbers - low * words
    if words == 0 or above <= 0:
        return 0
    return min(V3_RAMP_STEPS, V3_RAMP_STEPS * above // ((high - low) * words))


def _digit_flags(spans: list[Spans]) -> np.ndarray:
    """Which features of a part have a digit 0-9 in them."""
    out = [np.empty(0, bool)]
    for data, starts, ends in spans:
        digits = np.frombuffer(data, np.uint8)
        seen = np.concatenate(([0], np.cumsum((digits >= 0x30) & (digits <= 0x39), dtype=np.int64)))
        out.append(seen[ends] > seen[starts])
    return np.concatenate(out)


def first_occurrences(hashes: np.ndarray, most: int) -> np.ndarray:
    """Which of the hashes are among the first `most` occurrences of their value."""
    if hashes.size <= most or np.unique(hashes, return_counts=True)[1].max() <= most:
        return np.ones(hashes.size, bool)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    group_start = np.maximum.accumulate(np.where(first, np.arange(hashes.size), 0))
    keep = np.empty(hashes.size, bool)
    keep[order] = np.arange(hashes.size) - group_start < most
    return keep


def _v3_parts(text: Text) -> list[tuple[list[Spans], np.ndarray, np.ndarray]]:
    """Each part of version 3: its features (spans), their hashes and their votes
    (0: the feature does not vote)."""
    batches, words, numbers = text_v3.tokenized(_v2_text(text))
    ramp = number_ramp(words, numbers)
    parts = []
    for spans, weight in ((list(_token_shingle_spans(batches, V2_TOKEN_SHINGLE)), V2_TOKEN_WEIGHT),
                          (list(_char_gram_spans(batches, V2_CHAR_GRAM)), V2_CHAR_WEIGHT)):
        hashes = _span_hashes(spans)
        votes = weight * np.where(_digit_flags(spans), V3_NUMBER_WEIGHT * ramp, V3_RAMP_STEPS)
        voting = _voting(hashes)
        voting[voting] = first_occurrences(hashes[voting], V3_MAX_VOTES)
        parts.append((spans, hashes, np.where(voting, votes, 0)))
    return parts


def tokenize_v3(text: Text) -> list:
    """The tokens of text, spec version 3 (§8.1): str for str input, UTF-8
    bytes for bytes input (read as UTF-8, ill-formed sequences separating tokens)."""
    return _decoded(list(chain.from_iterable(text_v3.tokenized(_v2_text(text))[0])), text)


def features_v3(text: Text) -> list[tuple]:
    """The features of text that vote, spec version 3 (§8.4), with their votes:
    (feature, votes) pairs, the token shingles first, then the character n-grams,
    so that simhash_weighted() of them is the fingerprint; features str for str
    input, bytes for bytes."""
    out = []
    for spans, _, votes in _v3_parts(text):
        features = [data[a:b] for data, starts, ends in spans for a, b in zip(starts.tolist(), ends.tolist())]
        out += [(f, v) for f, v in zip(features, votes.tolist()) if v]
    return list(zip(_decoded([f for f, _ in out], text), [v for _, v in out]))


def simhash_v3(text: Text) -> TextFingerprint:
    """The fingerprint of text, spec version 3 (§8): SQL's simhash_v3(text).
    An int that carries its version (text_spec.TextFingerprint)."""
    return TextFingerprint(_IMPLEMENTATION.simhash_v3(text), 3)


_FINGERPRINTS = {1: lambda text: simhash(text), 2: lambda text: simhash_v2(text), 3: lambda text: simhash_v3(text)}


def fingerprint(text: Text, *, version: int) -> TextFingerprint:
    """The fingerprint of text under the given spec version (TEXT_SPEC_VERSIONS;
    never implicit): simhash(text) for 1, simhash_v2(text) for 2, simhash_v3(text)
    for 3."""
    return _FINGERPRINTS[check_version(version)](text)


def _jobs(jobs: int | None) -> int:
    """How many cores fingerprint: jobs, or None for every one this process may
    run on (_cpus.usable_cpus)."""
    jobs = usable_cpus() if jobs is None else operator.index(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    return jobs


def fingerprints(texts: Iterable[Text], *, version: int, jobs: int | None = None) -> list[TextFingerprint]:
    """fingerprint(text, version=version) of every text, in order, computed in
    `jobs` threads (None: one a core it may run on); the compiled core
    releases the GIL, so they run at once (the pure-Python code computes
    them one by one whatever jobs says).  The first text that is not str or
    bytes raises as fingerprint() does."""
    version = check_version(version)
    values = _IMPLEMENTATION.fingerprints(list(texts), version, _jobs(jobs))
    return [TextFingerprint(value, version) for value in values]


def _fingerprint_list(texts: list, version: int, shingle_size: int) -> list[TextFingerprint]:
    """One batch of fingerprint_batches (a module-level function: a worker
    process can run it)."""
    return [TextFingerprint(value, version)
            for value in _IMPLEMENTATION.fingerprints(texts, version, 1, shingle_size)]


def fingerprint_values(texts: list, *, version: int, shingle_size: int | None = None) -> list[int]:
    """The fingerprints of a batch of texts as plain ints (no TextFingerprint:
    for a caller that holds millions, or tags them itself), computed in this
    thread: the work of a worker of in_order that fingerprints a batch and
    more (cli/jsonl.py).  shingle_size as fingerprint_batches's."""
    version = check_version(version)
    return _IMPLEMENTATION.fingerprints(texts, version, 1, _spec_shingle_size(version, shingle_size))


def _spec_shingle_size(version: int, shingle_size: int | None) -> int:
    """Version 1's shingle size (default 3); ValueError for one with another version."""
    if shingle_size is not None and version != 1:
        raise ValueError(f"shingle_size is a parameter of text spec version 1, not of version {version}")
    return _shingle_size(3 if shingle_size is None else shingle_size)


def fingerprint_batches(batches: Iterable[Iterable[Text]], *, version: int, shingle_size: int | None = None,
                        jobs: int | None = None) -> Iterator[list[TextFingerprint]]:
    """The fingerprints of each batch of texts, a list a batch, in order,
    computed on `jobs` cores (None: every one) while the next batches are read:
    for a stream of documents (the CLI's commands that fingerprint), whose
    reading then overlaps the fingerprinting.  At most 2 × jobs batches are
    in flight, so memory stays bounded however long the stream.  shingle_size
    is version 1's (default 3, as simhash(text))."""
    version = check_version(version)
    size, jobs = _spec_shingle_size(version, shingle_size), _jobs(jobs)
    yield from in_order(partial(_fingerprint_list, version=version, shingle_size=size), map(list, batches), jobs=jobs)


def in_order(function: Callable[[T], R], items: Iterable[T], *, jobs: int | None = None) -> Iterator[R]:
    """function(item) of each item, in order, computed on `jobs` cores (None:
    every one) while the next items are read, at most 2 × jobs in flight:
    where fingerprint_batches computes (threads over the compiled core, which
    releases the GIL; worker processes for the pure-Python code, so function
    and items must pickle: a module-level function, or a partial of one), for
    work that fingerprints a batch and more (the CLI's JSON Lines blocks:
    cli/jsonl.py)."""
    jobs = _jobs(jobs)
    if jobs == 1:
        yield from map(function, items)
        return
    with _IMPLEMENTATION.executor(jobs) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= 2 * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


# -- votes (spec §1, §2) ----------------------------------------------------------


def _bits_int(bits: np.ndarray) -> int:
    """The int whose bit i is bits[i], for 64 booleans."""
    return int(np.packbits(bits, bitorder="little").view("<u8")[0])


def _bit_counts(h: np.ndarray) -> tuple[np.ndarray, int]:
    """How many of the hashes have each bit set (64 int64), and how many hashes."""
    b = h.astype("<u8", copy=False).view(np.uint8).reshape(-1, 8)
    if h.size < 1024:
        # For few hashes a BLAS product of the bits is cheapest; float32 counts
        # are exact far beyond 1024.
        bits = np.unpackbits(b, axis=1, bitorder="little").astype(np.float32)
        set_counts = (np.ones(h.size, np.float32) @ bits).astype(np.int64)
    else:  # for many, counting byte values is cheapest, and exact integers
        byte_counts = np.stack([np.bincount(b[:, j], minlength=256) for j in range(8)])
        set_counts = (byte_counts @ _byte_bits()).ravel()
    return set_counts, h.size


def _vote_array(h: np.ndarray) -> int:
    set_counts, n = _bit_counts(h)
    return _bits_int(2 * set_counts > n)  # set > clear, where clear = n - set


def vote(hashes: Iterable[int]) -> int:
    """Bit i is set iff more hashes have it set than clear (spec §1); a tie gives 0."""
    return _IMPLEMENTATION.vote(hashes)


def simhash_weighted(features: Mapping | Iterable[tuple]) -> int:
    """The weighted vote (spec §2) of feature -> weight pairs, a mapping or an iterable.

    A feature is a str or bytes (hashed with feature_hash) or an int hash. Weights
    must be finite; the sums run in input order, as the spec defines them.
    """
    pairs = list(features.items() if isinstance(features, Mapping) else features)
    h = _hash_array([feature_hash(f) if isinstance(f, Text) else f for f, _ in pairs])
    w = _weights([weight for _, weight in pairs])
    sums = np.zeros((2, 64))  # S0 and S1 per bit
    for i in range(64):
        bit_set = (h >> np.uint64(i)) & np.uint64(1) == 1
        for side, terms in enumerate((w[~bit_set], w[bit_set])):
            # cumsum is the sequential recurrence r[j] = r[j-1] + x[j], so it adds in
            # input order as the spec demands; sum() would add pairwise. Sums of
            # finite weights may overflow to infinity (or NaN), as in C: no warning.
            with np.errstate(over="ignore", invalid="ignore"):
                sums[side, i] = np.cumsum(terms)[-1] if terms.size else 0.0
    return _bits_int(sums[1] > sums[0])


def hamming_distance(a: int, b: int) -> int:
    """The number of bits in which two unsigned 64-bit values differ (spec §4)."""
    return (check_fingerprint(a) ^ check_fingerprint(b)).bit_count()


# -- simhash-py (seomoz/simhash-py) equivalents -------------------------------------


def unsigned_hash(obj: bytes) -> int:
    """The first 8 bytes of obj's MD5 digest as a big-endian unsigned int."""
    import hashlib  # here: 3 ms of imports only for this

    return int.from_bytes(hashlib.md5(obj, usedforsecurity=False).digest()[:8], "big")


num_differing_bits = hamming_distance
compute = vote


def shingle(tokens: Iterable, window: int = 4) -> Iterator[list]:
    """Yield a new list of each `window` consecutive tokens, as simhash-py does.

    Like simhash-py's, this is a generator: ValueError for window <= 0 is raised
    when iteration starts.
    """
    if window <= 0:
        raise ValueError("Window size must be positive")
    current = deque(maxlen=window)
    for token in tokens:
        current.append(token)
        if len(current) == window:
            yield list(current)


def find_all(hashes: Iterable[int], number_of_blocks: int, different_bits: int) -> list[tuple[int, int]]:
    """All pairs (a, b), a < b, of distinct hashes that differ in at most
    different_bits bits, as sorted (int, int) tuples; duplicates count once."""
    if not _find_all.blocks_exceed_distance(number_of_blocks, different_bits):
        raise ValueError(
            f"need 0 <= different_bits < number_of_blocks <= {_find_all.MAX_BLOCKS}, got "
            f"different_bits={different_bits}, number_of_blocks={number_of_blocks}"
        )
    a, b = _find_all.near_pairs(_hash_array(hashes), number_of_blocks, different_bits)
    return list(zip(a.tolist(), b.tolist()))


# -- the implementations: the compiled core, or the pure-Python reference -----------------

class PurePython:
    """The spec in Python (numpy): the executable reference every other
    implementation is tested against.  Texts as the public functions take them."""

    name = "python"

    def simhash(self, text: Text, shingle_size: int) -> int:
        return _vote_features(_features(_as_bytes(text), shingle_size))

    def simhash_v2(self, text: Text) -> int:
        set_counts, votes = np.zeros(64, np.int64), 0
        for spans, weight in _v2_parts(text):
            hashes = _span_hashes(spans)
            counts, n = _bit_counts(hashes[_voting(hashes)])
            set_counts += weight * counts
            votes += weight * n
        return _bits_int(2 * set_counts > votes)

    def simhash_v3(self, text: Text) -> int:
        set_votes, all_votes = np.zeros(64, np.int64), 0
        for _, hashes, votes in _v3_parts(text):
            for weight in np.unique(votes[votes > 0]).tolist():
                counts, n = _bit_counts(hashes[votes == weight])
                set_votes += weight * counts
                all_votes += weight * n
        return _bits_int(2 * set_votes > all_votes)

    def vote(self, hashes) -> int:
        return _vote_array(np.ascontiguousarray(_hash_array(hashes), np.uint64))

    def fingerprints(self, texts: list, version: int, jobs: int, shingle_size: int = 3) -> list[int]:
        # Threads would only take turns holding the GIL.
        one = {1: partial(self.simhash, shingle_size=shingle_size), 2: self.simhash_v2, 3: self.simhash_v3}[version]
        return [one(text) for text in texts]

    @staticmethod
    def executor(jobs: int):
        """Where fingerprint_batches computes: processes (threads would only
        take turns holding the GIL)."""
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(jobs)


class Compiled:
    """The fingerprint core in C (pysimhash_sql/_core.c over pg_ext/src/core,
    the extension's own), the GIL released while it computes."""

    name = "c"
    # Shingles of more tokens than a text has make one feature of them all:
    # any size past the longest text's token count gives the same fingerprint.
    MAX_SHINGLE_SIZE = 1 << 62

    def __init__(self, core) -> None:
        self.core = core

    def simhash(self, text: Text, shingle_size: int) -> int:
        return self.core.fingerprint(_str_or_bytes(text), 1, min(shingle_size, self.MAX_SHINGLE_SIZE))

    def simhash_v2(self, text: Text) -> int:
        return self.core.fingerprint(_str_or_bytes(text), 2)

    def simhash_v3(self, text: Text) -> int:
        return self.core.fingerprint(_str_or_bytes(text), 3)

    def vote(self, hashes) -> int:
        if type(hashes) in (list, tuple):  # read in C, unless an item is not an int hash
            result = self.core.vote(hashes)
            if result is not NotImplemented:
                return result
        return self.core.vote(np.ascontiguousarray(_hash_array(hashes), np.uint64))

    def fingerprints(self, texts: list, version: int, jobs: int, shingle_size: int = 3) -> list[int]:
        # In one call of the core: jobs threads of its own each take the next
        # texts as they are done (none waits on another's share).
        texts = [text if isinstance(text, str | bytes) else _str_or_bytes(text) for text in texts]
        return self.core.fingerprints(texts, version, min(shingle_size, self.MAX_SHINGLE_SIZE), jobs)

    @staticmethod
    def executor(jobs: int):
        """Where fingerprint_batches computes: threads (the core releases the GIL)."""
        from concurrent.futures import ThreadPoolExecutor  # here: import pysimhash_sql stays as quick

        return ThreadPoolExecutor(jobs)


def _str_or_bytes(text: Text) -> str | bytes:
    """A text as the compiled core takes it: str or bytes (TypeError as _as_bytes)."""
    return text if isinstance(text, str | bytes) else _as_bytes(text)


def _compiled() -> Compiled | None:
    """The compiled core, unless PYSIMHASH_SQL_PURE_PYTHON=1 or it was not built."""
    if os.environ.get("PYSIMHASH_SQL_PURE_PYTHON") == "1":
        return None
    try:
        from . import _simhash_core
    except ImportError:
        return None
    return Compiled(_simhash_core)


PURE_PYTHON = PurePython()
COMPILED = _compiled()
_IMPLEMENTATION: Compiled | PurePython = COMPILED or PURE_PYTHON
# Which implementation computes the fingerprints: "c" (the compiled core) or "python".
IMPLEMENTATION = _IMPLEMENTATION.name
