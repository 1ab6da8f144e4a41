"""XXH3-64 (seed 0) of many short byte strings at once, in numpy: the features
of the text fingerprint version 2 are 4 to 16 bytes long mostly, and one call
of xxhash per feature would cost more than everything else.

This is xxHash 0.8's XXH3_len_4to8_64b, XXH3_len_9to16_64b and
XXH3_len_17to128_64b (the algorithm is stable since 0.8.0) with the default
secret and seed 0; other lengths go through the xxhash package.  Exactness
against xxhash: tests/package/test_text_v2.py.
"""

from __future__ import annotations

import numpy as np
import xxhash

# readLE64(kSecret + 8) ^ readLE64(kSecret + 16), and so on (XXH3_kSecret, seed 0).
_BITFLIP_4TO8 = np.uint64(0xC73AB174C5ECD5A2)
_BITFLIP1_9TO16 = np.uint64(0x6782737BEA4239B9)
_BITFLIP2_9TO16 = np.uint64(0xAF56BC3B0996523A)
# The first 128 bytes of XXH3_kSecret as little-endian 64-bit words (len 17 to 128).
_SECRET = np.array([
    0xBE4BA423396CFEB8, 0x1CAD21F72C81017C, 0xDB979083E96DD4DE, 0x1F67B3B7A4A44072,
    0x78E5C0CC4EE679CB, 0x2172FFCC7DD05A82, 0x8E2443F7744608B8, 0x4C263A81E69035E0,
    0xCB00C391BB52283C, 0xA32E531B8B65D088, 0x4EF90DA297486471, 0xD8ACDEA946EF1938,
    0x3F349CE33F76FAA8, 0x1D4F0BC7C7BBDCF9, 0x3159B4CD4BE0518A, 0x647378D9C97E9FC8,
], np.uint64)
_PRIME64_1 = np.uint64(0x9E3779B185EBCA87)
_PRIME_MX2 = np.uint64(0x9FB21C651E98DF25)
_PRIME_AVALANCHE = np.uint64(0x165667919E3779F9)
_LOW32 = np.uint64(0xFFFFFFFF)
# The shift amounts, as uint64 (a Python int would make numpy convert every time).
_SHIFT = [np.uint64(n) for n in range(64)]


def _u(n: int) -> np.uint64:
    return _SHIFT[n]


def _words(data: bytes, nbytes: int) -> np.ndarray:
    """The little-endian word of nbytes (4 or 8) starting at every byte of data."""
    padded = data + bytes(8)
    dtype = np.dtype("<u4" if nbytes == 4 else "<u8")
    return np.ndarray((len(data),), dtype, padded, 0, (1,)).astype(np.uint64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _u(r)) | (x >> _u(64 - r))


def _len_4to8(words32: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    input1 = words32[starts]
    input2 = words32[starts + lengths - 4]
    h = (input2 + (input1 << _u(32))) ^ _BITFLIP_4TO8
    # XXH3_rrmxmx
    h ^= _rotl(h, 49) ^ _rotl(h, 24)
    h *= _PRIME_MX2
    h ^= (h >> _u(35)) + lengths.astype(np.uint64)
    h *= _PRIME_MX2
    return h ^ (h >> _u(28))


def _mul128_fold64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The low and high 64 bits of the 128-bit products, XORed (XXH_mult64to128's portable form)."""
    a_lo, a_hi, b_lo, b_hi = a & _LOW32, a >> _u(32), b & _LOW32, b >> _u(32)
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi
    cross = (lo_lo >> _u(32)) + (hi_lo & _LOW32) + lo_hi
    upper = (hi_lo >> _u(32)) + (cross >> _u(32)) + hi_hi
    lower = (cross << _u(32)) | (lo_lo & _LOW32)
    return lower ^ upper


def _avalanche(h: np.ndarray) -> np.ndarray:
    h ^= h >> _u(37)
    h *= _PRIME_AVALANCHE
    return h ^ (h >> _u(32))


def _len_9to16(words64: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    input_lo = words64[starts] ^ _BITFLIP1_9TO16
    input_hi = words64[starts + lengths - 8] ^ _BITFLIP2_9TO16
    swapped = input_lo.byteswap()
    return _avalanche(lengths.astype(np.uint64) + swapped + input_hi + _mul128_fold64(input_lo, input_hi))


def _mix16(words64: np.ndarray, at: np.ndarray, secret_word: int) -> np.ndarray:
    """XXH3_mix16B of the 16 bytes at `at`, with the secret's 16 bytes from word secret_word."""
    return _mul128_fold64(words64[at] ^ _SECRET[secret_word], words64[at + 8] ^ _SECRET[secret_word + 1])


def _len_17to128(words64: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    acc = lengths.astype(np.uint64) * _PRIME64_1
    acc += _mix16(words64, starts, 0) + _mix16(words64, starts + lengths - 16, 2)
    for above, first, last in ((32, 4, 6), (64, 8, 10), (96, 12, 14)):  # (len > above: more 16-byte pairs)
        more = np.flatnonzero(lengths > above)
        s, n = starts[more], lengths[more]
        acc[more] += _mix16(words64, s + 16 * (first // 4), first) + _mix16(words64, s + n - 16 * (first // 4) - 16, last)
    return _avalanche(acc)


def xxh3_spans(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """XXH3-64, seed 0, of data[starts[i]:ends[i]] for every i (uint64)."""
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(ends, np.int64) - starts
    out = np.empty(starts.size, np.uint64)
    short = (lengths >= 4) & (lengths <= 8)
    medium = (lengths >= 9) & (lengths <= 16)
    long = (lengths >= 17) & (lengths <= 128)
    with np.errstate(over="ignore"):
        if short.any():
            out[short] = _len_4to8(_words(data, 4), starts[short], lengths[short])
        if (medium | long).any():
            words64 = _words(data, 8)
            out[medium] = _len_9to16(words64, starts[medium], lengths[medium])
            out[long] = _len_17to128(words64, starts[long], lengths[long])
    for i in np.flatnonzero(~(short | medium | long)).tolist():
        out[i] = xxhash.xxh3_64_intdigest(data[starts[i] : starts[i] + lengths[i]])
    return out
