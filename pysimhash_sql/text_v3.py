"""The tokens of the text fingerprint version 3 (docs/fingerprint-spec.md §8):
version 2's normalisation and tokens (text_v2.py), except that the digits 0-9
the normalisation makes are token characters of their own kind, DIGIT: a run of
them is a number token, apart from the letters around it (`x200` is `x`, `200`).
hashing.py makes features and fingerprints of them.
"""

from __future__ import annotations

import numpy as np

from . import text_v2
from . import unicode_tables as ut

# The class of a digit 0-9 the normalisation makes (the tables say SEPARATOR).
DIGIT = 4
_SPACE = 0x20
_ZERO, _NINE = 0x30, 0x39


def _written(out: np.ndarray, kind: np.ndarray, after_solo: bool) -> tuple[str, int, int, bool]:
    """Normalised characters of the given kinds as text whose spaces separate the
    tokens: each separator a space, each SOLO character between spaces, and a
    space wherever a run of letters meets a run of digits.  Also how many SOLO
    characters follow a SOLO character (after_solo: the one before the first
    does), how many numbers there are, and whether the last character is SOLO."""
    kind = np.where((kind == ut.SEPARATOR) & (out >= _ZERO) & (out <= _NINE), DIGIT, kind)
    middle = np.where(kind == ut.SEPARATOR, _SPACE, out).astype("<u4")
    solo = kind == ut.SOLO
    in_token = (kind == ut.WORD) | (kind == DIGIT)
    meets = np.zeros(kind.size, bool)
    meets[1:] = in_token[1:] & in_token[:-1] & (kind[1:] != kind[:-1])
    before = np.where(solo | meets, _SPACE, 0).astype("<u4")
    after = np.where(solo, _SPACE, 0).astype("<u4")
    written = np.stack([before, middle, after], axis=1).ravel()
    following = int(np.count_nonzero(solo[1:] & solo[:-1])) + bool(solo.size and solo[0] and after_solo)
    digit = kind == DIGIT
    numbers = int(np.count_nonzero(digit[1:] & ~digit[:-1])) + bool(digit.size and digit[0])
    return (written[written != 0].tobytes().decode("utf-32-le"), following, numbers,
            bool(solo[-1]) if solo.size else after_solo)


def tokenized(text: str) -> tuple[list[list[bytes]], int, int]:
    """The tokens of text (spec §8.2) as UTF-8 bytes, in lists covering about
    text_v2's batch of characters each; the number of words (§8.3: the tokens, a
    run of SOLO characters one word) and of numbers among them."""
    # A lone surrogate cannot be encoded: UnicodeEncodeError, as in versions 1 and 2.
    codes = np.frombuffer(text.encode("utf-32-le"), "<u4")
    batches, words, numbers, after_solo = [], 0, 0, False
    start = 0
    while start < codes.size:
        # A batch starts at a separator or a SOLO character, never inside a number.
        end = text_v2.cut(codes, start, digits=True)
        written, following, found, after_solo = _written(*text_v2.characters(codes[start:end]), after_solo)
        batches.append(written.encode("utf-8").split())
        words += len(batches[-1]) - following
        numbers += found
        start = end
    return batches, words, numbers
