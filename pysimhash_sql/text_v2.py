"""The tokens of the text fingerprint version 2 (docs/fingerprint-spec.md §6),
bit for bit as the C core makes them (pg_ext/src/core/text_v2.c).

Every code point goes through the generated tables of unicode_tables.py (one
Unicode version, whatever Python's own is), vectorised with numpy: the code
points of a batch of text are looked up at once, expanded into the characters
they become, and written out with a space around every separator and every
SOLO character, so that splitting at spaces yields the tokens.  hashing.py
makes features and fingerprints of them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from . import unicode_tables as ut

# Characters of text tokenised at a time: bounds the memory a huge text takes.
_BATCH_CHARS = 1 << 20
# Hangul syllables, decomposed algorithmically (Unicode §3.12).
_HANGUL_FIRST, _HANGUL_COUNT = 0xAC00, 11172
_L_FIRST, _V_FIRST, _T_BEFORE, _V_COUNT, _T_COUNT = 0x1100, 0x1161, 0x11A7, 21, 28
_SPACE = 0x20
_KIND_BITS = 24


def _ascii_table() -> bytes:
    """bytes.translate() table for ASCII text: a token byte as written (A-Z
    lowered), a space where the tables say SEPARATOR; the fast path for ASCII."""
    out = bytearray(b" " * 256)  # bytes >= 0x80 never reach the fast path
    for c, value in enumerate(_values(np.arange(0x80, dtype=np.uint32)).tolist()):
        written = c
        if value >= ut.MAPPED:  # A-Z: one lowercase letter each
            entry = int(ut.POOL[ut.MAPPING_OFFSETS[value - ut.MAPPED]])
            written, value = entry & 0xFFFFFF, entry >> _KIND_BITS
        if value == ut.WORD:
            out[c] = written
    return bytes(out)


def _values(codes: np.ndarray) -> np.ndarray:
    """The table value of each code point (uint32 array)."""
    block = ut.STAGE1[codes >> ut.BLOCK_SHIFT].astype(np.uint32)
    return ut.STAGE2[(block << ut.BLOCK_SHIFT) | (codes & ut.BLOCK_MASK)]


_ASCII = _ascii_table()


def _bmp_tables() -> tuple[np.ndarray, np.ndarray]:
    """For each code point of the BMP that becomes one character: that
    character and its kind; _EXPAND for every other one (dropped, mapped to
    several characters, Hangul syllables).  One gather each for most text."""
    codes = np.arange(0x10000, dtype=np.uint32)
    values = _values(codes).astype(np.int64)
    out, kind = codes.copy(), values.copy()
    mapped = values >= ut.MAPPED
    m = values[mapped] - ut.MAPPED
    single = ut.MAPPING_OFFSETS[m + 1].astype(np.int64) - ut.MAPPING_OFFSETS[m] == 1
    entry = ut.POOL[ut.MAPPING_OFFSETS[m]].astype(np.int64)
    out[mapped] = np.where(single, entry & 0xFFFFFF, 0)
    kind[mapped] = np.where(single, entry >> _KIND_BITS, _EXPAND)
    kind[values == ut.DROP] = _EXPAND
    kind[_HANGUL_FIRST : _HANGUL_FIRST + _HANGUL_COUNT] = _EXPAND
    return out, kind.astype(np.uint8)


_EXPAND = 255
_BMP_CHAR, _BMP_KIND = _bmp_tables()


def characters(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normalised characters of code points (spec §6.2) and their kinds
    (WORD, SOLO, SEPARATOR; dropped characters are gone); text_v3 shares it."""
    if codes.size and codes.max() < 0x10000:  # one character each, looked up at once
        out, kind = _BMP_CHAR[codes], _BMP_KIND[codes]
        if not (kind == _EXPAND).any():
            return out, kind
    hangul = codes - np.uint32(_HANGUL_FIRST)  # wraps around below the first syllable
    is_hangul = hangul < _HANGUL_COUNT
    return _expanded(codes, _values(codes).astype(np.int64), hangul.astype(np.int64), is_hangul)


def _normalised(codes: np.ndarray) -> str:
    """The normalised characters of code points (spec §6.2), each separator a
    space and each SOLO character between spaces (§6.3)."""
    return _written(*characters(codes))


def _written(out: np.ndarray, kind: np.ndarray) -> str:
    """Characters of the given kinds, each separator a space and each SOLO
    character between spaces."""
    # A space before and after each SOLO character (0: nothing), the character
    # itself or, for a separator, a space.
    middle = np.where(kind == ut.SEPARATOR, _SPACE, out).astype("<u4")
    solo = kind == ut.SOLO
    if solo.any():
        around = np.where(solo, _SPACE, 0).astype("<u4")
        written = np.stack([around, middle, around], axis=1).ravel()
        middle = written[written != 0]
    return middle.tobytes().decode("utf-32-le")


def _expanded(codes, values, hangul, is_hangul) -> tuple[np.ndarray, np.ndarray]:
    """What each code point becomes, dropped, mapped and Hangul ones too:
    the characters and their kinds."""
    mapped = (values >= ut.MAPPED) & ~is_hangul
    m = np.where(mapped, values - ut.MAPPED, 0)
    lengths = np.where(mapped, ut.MAPPING_OFFSETS[m + 1].astype(np.int64) - ut.MAPPING_OFFSETS[m], 1)
    lengths[is_hangul] = np.where(hangul[is_hangul] % _T_COUNT, 3, 2)
    lengths[(values == ut.DROP) & ~is_hangul] = 0
    # Each output character: which input it comes from, and its place there.
    source = np.repeat(np.arange(codes.size), lengths)
    place = np.arange(source.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out = codes[source].astype(np.int64)
    kind = values[source]
    from_map = mapped[source]
    entry = ut.POOL[ut.MAPPING_OFFSETS[m[source[from_map]]] + place[from_map]].astype(np.int64)
    out[from_map] = entry & 0xFFFFFF
    kind[from_map] = entry >> _KIND_BITS
    from_hangul = is_hangul[source]
    s, k = hangul[source[from_hangul]], place[from_hangul]
    out[from_hangul] = np.select(
        [k == 0, k == 1],
        [_L_FIRST + s // (_V_COUNT * _T_COUNT), _V_FIRST + s % (_V_COUNT * _T_COUNT) // _T_COUNT],
        _T_BEFORE + s % _T_COUNT,
    )
    kind[from_hangul] = ut.WORD
    return out, kind


def cut(codes: np.ndarray, start: int, digits: bool = False) -> int:
    """Where the batch from start ends: before a separator or SOLO character
    (a token never spans it) at or after start + _BATCH_CHARS, else the end;
    with `digits` (text_v3, where 0-9 are token characters) not before 0-9."""
    at = start + _BATCH_CHARS
    while at < codes.size:
        window = codes[at : at + _BATCH_CHARS]
        values = _values(window)
        boundary = values == ut.SEPARATOR
        if digits:
            boundary &= (window < 0x30) | (window > 0x39)
        safe = np.flatnonzero(boundary | (values == ut.SOLO))
        if safe.size:
            return at + int(safe[0])
        at += _BATCH_CHARS
    return codes.size


def split_at_spaces(norm: bytes, batch: int) -> Iterator[list[bytes]]:
    """The tokens of bytes in which every separator is a space (and no token
    byte is ASCII white space), in lists covering about `batch` bytes each;
    version 1's tokenizer (hashing.py) shares it."""
    start = 0
    while start < len(norm):
        end = norm.find(b" ", start + batch)  # cut between two tokens
        end = len(norm) if end < 0 else end
        yield norm[start:end].split()
        start = end


def token_batches(text: str) -> Iterator[list[bytes]]:
    """The tokens of text (spec §6.3) as UTF-8 bytes, in lists covering about
    _BATCH_CHARS characters each."""
    if text.isascii():
        yield from split_at_spaces(text.encode("ascii").translate(_ASCII), _BATCH_CHARS)
        return
    # A lone surrogate cannot be encoded: UnicodeEncodeError, as in version 1.
    codes = np.frombuffer(text.encode("utf-32-le"), "<u4")
    start = 0
    while start < codes.size:
        end = cut(codes, start)
        # bytes.split() splits at ASCII white space, which _normalised leaves
        # only as the spaces it wrote.
        yield _normalised(codes[start:end]).encode("utf-8").split()
        start = end


def as_text(data: str | bytes) -> str:
    """A text; bytes are read as UTF-8, each ill-formed sequence a U+FFFD (a
    separator, spec §6.1)."""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")
