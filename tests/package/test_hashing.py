"""Pure-Python tests of pysimhash_sql.hashing against docs/fingerprint-spec.md.

The reference functions below restate the spec with plain loops, independently
of the implementation, which is vectorised and batched.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import _find_all, hashing
from pysimhash_sql.hashing import (
    MASK64,
    feature_hash,
    find_all,
    hamming_distance,
    shingles,
    simhash,
    simhash_weighted,
    tokenize,
    vote,
)
from toolbox import ROOT, brute_force_hash_pairs
from toolbox import brute_force_pairs as brute_force_id_pairs
from toolbox.data import clustered_rows

# -- reference implementation: the spec, one step at a time -----------------------


def ref_tokens(data: bytes) -> list[bytes]:
    tokens, current = [], bytearray()
    for byte in data:
        if ord("A") <= byte <= ord("Z"):
            current.append(byte + 32)
        elif ord("a") <= byte <= ord("z") or ord("0") <= byte <= ord("9") or byte >= 0x80:
            current.append(byte)
        elif current:
            tokens.append(bytes(current))
            current = bytearray()
    if current:
        tokens.append(bytes(current))
    return tokens


def ref_features(tokens: list[bytes], s: int) -> list[bytes]:
    if not tokens:
        return []
    if len(tokens) < s:
        return [b" ".join(tokens)]
    return [b" ".join(tokens[j : j + s]) for j in range(len(tokens) - s + 1)]


def ref_vote(hashes: list[int]) -> int:
    result = 0
    for bit in range(64):
        set_ = sum(1 for h in hashes if h >> bit & 1)
        if set_ > len(hashes) - set_:
            result |= 1 << bit
    return result


def ref_weighted(pairs: list[tuple[int, float]]) -> int:
    result = 0
    for bit in range(64):
        s1 = s0 = 0.0
        for h, w in pairs:  # += on floats: one IEEE addition at a time, in order
            if h >> bit & 1:
                s1 += w
            else:
                s0 += w
        if s1 > s0:
            result |= 1 << bit
    return result


def ref_simhash(data: bytes, s: int = 3) -> int:
    return ref_vote([xxhash.xxh3_64_intdigest(f) for f in ref_features(ref_tokens(data), s)])


def brute_force_pairs(hashes, k: int) -> list[tuple[int, int]]:
    return brute_force_hash_pairs((h & MASK64 for h in hashes), k)


# Text that exercises every byte class: ASCII letters of both cases, digits,
# punctuation, white space, control characters, and 2-, 3- and 4-byte UTF-8.
tricky_text = st.text(
    alphabet=st.sampled_from(list("aAzZmM09 \t\n\r,.-_'\x00\x01\x1f\x7fé\u00c9ßı€\u2028😀\ufeff")),
    max_size=60,
)
any_text = st.one_of(tricky_text, st.text(max_size=80))
hash64 = st.integers(min_value=0, max_value=MASK64)


# -- XXH3 (spec §3.4) -------------------------------------------------------------


def sanity_buffer(n: int) -> bytes:
    """The input of xxHash's own sanity tests (xsum_sanity_check.c)."""
    out, gen = bytearray(), 2654435761
    for _ in range(n):
        out.append(gen >> 56)
        gen = gen * 0x9E3779B185EBCA8D & MASK64
    return bytes(out)


@pytest.mark.parametrize(
    "length, expected",
    [
        (0, 0x2D06800538D394C2),
        (1, 0xC44BDFF4074EECDB),
        (6, 0x27B56A84CD2D7325),
        (12, 0xA713DAF0DFBB77E7),
        (24, 0xA3FE70BF9D3510EB),
        (48, 0x397DA259ECBA1F11),
        (80, 0xBCDEFBBB2C47C90A),
        (195, 0xCD94217EE362EC3A),
        (403, 0xCDEB804D65C6DEA4),
        (512, 0x617E49599013CB6B),
        (2048, 0xDD59E2C3A5F038E0),
        (2367, 0xCB37AEB9E5D361ED),
    ],
)
def test_feature_hash_matches_xxh3_sanity_vectors(length, expected):
    assert feature_hash(sanity_buffer(length)) == expected


def test_feature_hash_of_str_hashes_its_utf8():
    assert feature_hash("") == 0x2D06800538D394C2
    assert feature_hash("ünïcode €") == xxhash.xxh3_64_intdigest("ünïcode €".encode())
    assert feature_hash(bytearray(b"ab")) == feature_hash(b"ab") == feature_hash("ab")
    with pytest.raises(TypeError):
        feature_hash(42)


# -- tokens and features (spec §3.2, §3.3) ----------------------------------------


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("The quick, brown fox!", ["the", "quick", "brown", "fox"]),
        ("", []),
        (" \t\n\r\x0b\x0c", []),
        ("!!!...---", []),
        ("ABC xyz 0123", ["abc", "xyz", "0123"]),
        ("MiXeD9Case", ["mixed9case"]),
        ("snake_case kebab-case it's", ["snake", "case", "kebab", "case", "it", "s"]),
        ("a\x00b\x01c\x1fd\x7fe", ["a", "b", "c", "d", "e"]),
        ("ÄÖÜ äöü", ["ÄÖÜ", "äöü"]),  # non-ASCII keeps its case
        ("ÉCOLE", ["École"]),  # only the ASCII letters are lowered
        ("naïve café", ["naïve", "café"]),
        ("日本語のテキスト", ["日本語のテキスト"]),
        ("emoji😀inside", ["emoji😀inside"]),
        ("a\u00a0b\u2028c\u3000d", ["a\u00a0b\u2028c\u3000d"]),  # non-ASCII spaces are token bytes
        ("  leading and trailing  ", ["leading", "and", "trailing"]),
    ],
)
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens
    assert tokenize(text.encode()) == [t.encode() for t in tokens]


def test_tokenize_bytes_at_and_above_0x80_are_token_bytes():
    letters = b"abcdefghijklmnopqrstuvwxyz"
    assert tokenize(bytes(range(256))) == [b"0123456789", letters, letters, bytes(range(0x80, 0x100))]
    # Invalid UTF-8 is fine as bytes: it is used as it is.
    assert tokenize(b"\xff\xfeAB\x80 C") == [b"\xff\xfeab\x80", b"c"]


@pytest.mark.parametrize(
    "text, s, features",
    [
        ("The quick, brown fox!", 2, ["the quick", "quick brown", "brown fox"]),
        ("The quick, brown fox!", 3, ["the quick brown", "quick brown fox"]),
        ("The quick, brown fox!", 4, ["the quick brown fox"]),
        ("The quick, brown fox!", 5, ["the quick brown fox"]),  # n < s: one feature
        ("The quick, brown fox!", 1, ["the", "quick", "brown", "fox"]),
        ("one", 3, ["one"]),
        ("one  ,  two", 3, ["one two"]),  # joined by single spaces
        ("", 1, []),
        ("", 3, []),
        (" ,;\n", 3, []),
        ("a b c", 3, ["a b c"]),  # n == s
    ],
)
def test_shingles(text, s, features):
    assert shingles(text, s) == features
    assert shingles(text.encode(), s) == [f.encode() for f in features]


def test_shingle_size_is_validated():
    for bad in (0, -1):
        with pytest.raises(ValueError):
            shingles("a b", bad)
        with pytest.raises(ValueError):
            simhash("a b", bad)
    with pytest.raises(TypeError):
        simhash("a b", 2.5)
    with pytest.raises(TypeError):
        simhash(123)


def test_surrogates_cannot_be_encoded():
    with pytest.raises(UnicodeEncodeError):
        simhash("\ud800")


# -- the text fingerprint (spec §3) -------------------------------------------------


def test_worked_example():
    expected = ref_vote([xxhash.xxh3_64_intdigest(f) for f in (b"the quick", b"quick brown", b"brown fox")])
    assert simhash("The quick, brown fox!", 2) == expected == 0x7AFFC44A680966C6


def test_simhash_edge_cases():
    assert simhash("") == 0
    assert simhash("   \n\t ") == 0
    assert simhash("?!") == 0
    # One token: one feature, so the fingerprint is that feature's hash.
    assert simhash("Word") == feature_hash("word")
    assert simhash("a b", 3) == feature_hash("a b")
    # Case and separators of ASCII do not matter; non-ASCII case does.
    assert simhash("Hello, World! How are you?") == simhash("hello world how are you")
    assert simhash("Ärger über alles") != simhash("ärger über alles")
    # Default shingle size is 3.
    text = "one two three four five six"
    assert simhash(text) == simhash(text, 3) == ref_simhash(text.encode(), 3)


@settings(max_examples=500, deadline=None)
@given(text=any_text, s=st.integers(1, 5))
def test_simhash_matches_reference_on_text(text, s):
    data = text.encode()
    assert tokenize(text) == [t.decode() for t in ref_tokens(data)]
    assert shingles(text, s) == [f.decode() for f in ref_features(ref_tokens(data), s)]
    assert simhash(text, s) == simhash(data, s) == hashing.PURE_PYTHON.simhash(text, s) == ref_simhash(data, s)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=100), s=st.integers(1, 4))
def test_simhash_matches_reference_on_bytes(data, s):
    assert tokenize(data) == ref_tokens(data)
    assert simhash(data, s) == hashing.PURE_PYTHON.simhash(data, s) == ref_simhash(data, s)


@settings(max_examples=200, deadline=None)
@given(text=any_text, s=st.integers(1, 4), batch=st.integers(1, 8))
def test_batch_boundaries_do_not_change_anything(text, s, batch):
    """The pure-Python implementation's batches (the compiled core has its own: tests/package/test_core_module.py)."""
    data = text.encode()
    with mock.patch.object(hashing, "_BATCH_BYTES", batch):
        assert tokenize(data) == ref_tokens(data)
        assert shingles(data, s) == ref_features(ref_tokens(data), s)
        assert hashing.PURE_PYTHON.simhash(data, s) == ref_simhash(data, s)


def test_long_input_matches_reference():
    rng = random.Random(7)
    words = ["Alpha", "beta", "GAMMA", "dé", "ünï", "日本", "x9", "0", "😀"]
    seps = [" ", ", ", "\n", "--", "\x00", "\t\t"]
    text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(400_000))
    data = text.encode()
    assert len(data) > 2 * hashing._BATCH_BYTES
    for s in (1, 3):
        assert simhash(text, s) == hashing.PURE_PYTHON.simhash(text, s) == ref_simhash(data, s)
    # A single token far longer than a batch.
    long_token = b"Ab\xc3\xa9" * 1_000_000
    assert tokenize(long_token) == [long_token.lower()]
    assert simhash(b" " + long_token + b" z", 2) == feature_hash(long_token.lower() + b" z")


# -- votes (spec §1, §2) ------------------------------------------------------------


@pytest.mark.parametrize(
    "hashes, expected",
    [
        ([], 0),
        ([0b1100, 0b1010, 0b0110], 0b1110),
        ([0b1, 0b0], 0),  # a tie gives 0
        ([0b1, 0b1, 0b0], 0b1),
        ([0xDEADBEEF] * 7, 0xDEADBEEF),
        ([MASK64], MASK64),
        ([-1], MASK64),  # a signed int64 is read as its bit pattern
        ([-1, 0], 0),
        ([-1, -1, 0], MASK64),
        ([-(2**63), 2**63, 5], 2**63),
        ([2**63, 2**63 + 1, 1], 2**63 + 1),
    ],
)
def test_vote_by_hand(hashes, expected):
    assert vote(hashes) == expected
    assert vote(iter(hashes)) == expected


def test_vote_accepts_numpy_arrays():
    assert vote(np.array([-1, -1, 0], np.int64)) == MASK64
    assert vote(np.array([2**63, 2**63, 1], np.uint64)) == 2**63
    assert vote(np.array([3, 1, 1], np.uint8)) == 1
    assert vote(np.array([], np.float64)) == 0
    rng = np.random.default_rng(3)
    for n in (1023, 1024, 5000):  # either side of the switch to counting byte values
        many = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
        assert vote(many) == vote(many.tolist()) == ref_vote(many.tolist())
    # Ties at large counts stay ties.
    assert vote([MASK64] * 600 + [0] * 600) == 0
    assert vote([MASK64] * 601 + [0] * 600) == MASK64


@pytest.mark.parametrize(
    "bad, error",
    [
        ([2**64], ValueError),
        ([-(2**63) - 1], ValueError),
        ([1.0], TypeError),
        (["1"], TypeError),
        ([None], TypeError),
    ],
)
def test_vote_rejects_non_hashes(bad, error):
    with pytest.raises(error):
        vote([1, 2] + bad)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=-(2**63), max_value=MASK64), max_size=40))
def test_vote_matches_reference(hashes):
    assert vote(hashes) == ref_vote([h & MASK64 for h in hashes])


def test_weighted_vote_is_summed_in_input_order():
    # 1e16 + 1.0 rounds back to 1e16, so where the 1.0 is added matters.
    big, small = 1e16, 1.0
    in_order = [(1, big), (1, small), (1, -big), (0, 0.5)]  # S1 = 0.0 on bit 0
    reordered = [(1, big), (1, -big), (1, small), (0, 0.5)]  # S1 = 1.0 on bit 0
    assert simhash_weighted(in_order) == ref_weighted(in_order) == 0
    assert simhash_weighted(reordered) == ref_weighted(reordered) == 1


def test_weighted_vote_is_not_summed_pairwise():
    # Added one at a time to 1e16, each 0.9 rounds away; summed among themselves
    # first, as pairwise summation (numpy's sum()) does, they would not.
    rng = random.Random(11)
    small = [(rng.getrandbits(64), 0.9) for _ in range(3000)]
    pairs = [(0, 1e16), (MASK64, 1e16)] + small + [(0, -1e16), (MASK64, -1e16)]
    assert simhash_weighted(pairs) == ref_weighted(pairs) == 0
    h = np.array([p[0] for p in pairs], np.uint64)
    w = np.array([p[1] for p in pairs])
    pairwise = 0
    for bit in range(64):
        set_ = (h >> np.uint64(bit)) & np.uint64(1) == 1
        pairwise |= int(w[set_].sum() > w[~set_].sum()) << bit
    assert pairwise != 0


def test_weighted_vote_inputs():
    assert simhash_weighted([]) == simhash_weighted({}) == 0
    # A mapping, text features, bytes features and int hashes all work.
    assert simhash_weighted({"a": 1.0}) == feature_hash("a")
    assert simhash_weighted([(b"a", 2)]) == feature_hash("a")
    assert simhash_weighted([(-1, 1.0)]) == MASK64
    assert simhash_weighted([(np.int64(-1), np.float32(1.0))]) == MASK64
    # Negative weights vote against: a single negative weight gives S1 < S0 = 0.
    assert simhash_weighted([(MASK64, -1.0)]) == 0
    assert simhash_weighted([(0, -1.0)]) == MASK64
    # Sums may overflow to infinity, as IEEE doubles do in C.
    huge = [(1, 1.5e308), (1, 1.5e308), (0, 1e308), (1, -1e308)]
    assert simhash_weighted(huge) == ref_weighted(huge) == 1
    # Equal weights reduce to the unweighted vote.
    hashes = [0b1100, 0b1010, 0b0110]
    assert simhash_weighted([(h, 1.0) for h in hashes]) == vote(hashes)


@pytest.mark.parametrize(
    "pairs, error",
    [
        ([(1, float("nan"))], ValueError),
        ([(1, float("inf"))], ValueError),
        ([(1, float("-inf"))], ValueError),
        ([(1, 10**400)], ValueError),
        ([(2**64, 1.0)], ValueError),
        ([(-(2**63) - 1, 1.0)], ValueError),
        ([(1, "1.0")], TypeError),
        ([(1.5, 1.0)], TypeError),
        ([(None, 1.0)], TypeError),
    ],
)
def test_weighted_vote_rejects_bad_input(pairs, error):
    with pytest.raises(error):
        simhash_weighted([(0, 1.0)] + pairs)


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=-(2**63), max_value=MASK64), finite), max_size=30))
def test_weighted_vote_matches_reference(pairs):
    assert simhash_weighted(pairs) == ref_weighted([(h & MASK64, w) for h, w in pairs])


# -- Hamming distance (spec §4) -----------------------------------------------------


def test_hamming_distance():
    assert hamming_distance(0, 0) == 0
    assert hamming_distance(0, MASK64) == 64
    assert hamming_distance(0xDEADBEEF, 0xDEADBEAD) == 2
    assert hamming_distance(np.uint64(1), 3) == 1
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            hamming_distance(bad, 0)
        with pytest.raises(ValueError):
            hamming_distance(0, bad)
    with pytest.raises(TypeError):
        hamming_distance(1.0, 0)


@given(hash64, hash64)
def test_hamming_distance_matches_reference(a, b):
    assert hamming_distance(a, b) == bin(a ^ b).count("1")


# -- find_all -----------------------------------------------------------------------


def clustered_hashes(rng: random.Random, n: int) -> list[int]:
    """Random hashes, many near copies of a few centres, and exact duplicates."""
    centres = [rng.getrandbits(64) for _ in range(max(1, n // 8))]
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.2:
            out.append(rng.getrandbits(64))
        elif kind < 0.3 and out:
            out.append(rng.choice(out))
        else:
            h = rng.choice(centres)
            for bit in rng.sample(range(64), rng.randint(0, 5)):
                h ^= 1 << bit
            out.append(h)
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 60, 300])
@pytest.mark.parametrize(
    "blocks, k",
    [(1, 0), (2, 1), (3, 2), (4, 3), (5, 3), (6, 3), (6, 5), (7, 0), (8, 4), (10, 3), (16, 2), (64, 1)],
)
def test_find_all_matches_brute_force(n, blocks, k):
    hashes = clustered_hashes(random.Random(n * 1000 + blocks * 10 + k), n)
    assert find_all(hashes, blocks, k) == brute_force_pairs(hashes, k)


@pytest.mark.parametrize("blocks, k", [(6, 3), (2, 1), (1, 0), (3, 0), (12, 10)])
def test_find_all_with_long_runs_of_equal_keys(blocks, k):
    # Hashes differing only in their lowest 10 bits share most tables' keys:
    # runs of hundreds of rows side by side; 1-3 blocks are 21-64 bits wide
    # (not the radix sort of 16-bit blocks).
    rng = random.Random(5)
    high = rng.getrandbits(64) & ~1023
    hashes = [high | rng.getrandbits(10) for _ in range(300)] + clustered_hashes(rng, 100)
    assert find_all(hashes, blocks, k) == brute_force_pairs(hashes, k)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=-(2**63), max_value=MASK64), max_size=30),
    st.data(),
)
def test_find_all_matches_brute_force_property(hashes, data):
    # Near duplicates of the generated hashes, so that there are pairs to find.
    near = [h & MASK64 ^ 1 << data.draw(st.integers(0, 63)) for h in hashes[:10]]
    blocks = data.draw(st.integers(1, 10))
    k = data.draw(st.integers(0, min(blocks - 1, 4)))
    assert find_all(hashes + near, blocks, k) == brute_force_pairs(hashes + near, k)


@pytest.mark.parametrize("threads", [1, 3])
@settings(max_examples=100, deadline=None)
@given(data=clustered_rows(max_k=8))
def test_id_pairs_match_brute_force(threads, data):
    # The plain back end's find_all: rows (ids in any order, exact duplicates),
    # every blocks the caller may give, and the default; the tables searched
    # in one thread or several (each pair still once).
    rows, k, blocks = data
    rows = [(i, fp) for i, fp in rows if fp is not None]
    ids = np.array([i for i, _ in rows], np.int64)
    fps = np.array([fp for _, fp in rows], np.uint64)
    assert sorted(_find_all.id_pairs(ids, fps, k, blocks, threads)) == brute_force_id_pairs(rows, k)


@pytest.mark.parametrize("blocks, k", [(5, 3), (8, 6), (4, 0), (10, 4)])
def test_row_pairs_in_threads_equal_one_thread(blocks, k):
    # Enough rows for long runs of equal keys in every table, each pair found
    # in several tables but kept once, whichever thread searches its table.
    hashes = np.array(clustered_hashes(random.Random(blocks * 10 + k), 4000), np.uint64)
    one = _find_all.row_pairs(hashes, _find_all.block_masks(blocks), k, threads=1)
    pairs = sorted(zip(*(side.tolist() for side in one)))
    assert len(pairs) > 500 and len(set(pairs)) == len(pairs)
    for threads in (2, 3, None):
        found = _find_all.row_pairs(hashes, _find_all.block_masks(blocks), k, threads)
        assert sorted(zip(*(side.tolist() for side in found))) == pairs


@pytest.mark.parametrize("slice_rows", [1, 7, 150, 5000])
def test_row_pairs_in_slices_equal_brute_force(slice_rows):
    # The search cuts each group's rows into slices where the last block's
    # value changes: runs of equal keys (the 10-bit family) longer than a
    # slice stay whole, each pair is found once, whatever the slice size.
    rng = random.Random(slice_rows)
    high = rng.getrandbits(64) & ~1023
    hashes = [high | rng.getrandbits(10) for _ in range(300)] + clustered_hashes(rng, 700)
    fps = np.array(hashes, np.uint64)
    a, b = _find_all.row_pairs(fps, _find_all.block_masks(5), 3, threads=1, slice_rows=slice_rows)
    found = sorted(zip(a.tolist(), b.tolist(), _find_all.popcount(fps[a] ^ fps[b]).tolist()))
    assert found == brute_force_id_pairs(list(enumerate(hashes)), 3)


@pytest.mark.parametrize("blocks, k, sort_chunk_rows", [(5, 3, 1), (5, 3, 97), (4, 2, 250), (3, 1, 64)])
def test_pair_batches_sorted_in_chunks_equal_brute_force(blocks, k, sort_chunk_rows):
    # Each group's order sorted by counting a chunk of rows at a time (blocks
    # of up to 16 bits; 3 blocks are wider: argsorted whole), the slices
    # searched in threads, each pair once in 4-byte positions.
    rng = random.Random(blocks * 100 + sort_chunk_rows)
    hashes = clustered_hashes(rng, 900)
    fps = np.array(hashes, np.uint64)
    for threads in (1, 3):
        batches = list(_find_all.pair_batches(fps, _find_all.block_masks(blocks), k, threads, slice_rows=40,
                                              sort_chunk_rows=sort_chunk_rows))
        assert {a.dtype for a, _ in batches} == {np.dtype(np.uint32)}
        a, b = (np.concatenate(side) for side in zip(*batches))
        found = sorted(zip(a.tolist(), b.tolist(), _find_all.popcount(fps[a] ^ fps[b]).tolist()))
        assert found == brute_force_id_pairs(list(enumerate(hashes)), k)


def test_positions_are_4_bytes_up_to_2_to_the_32_rows():
    assert _find_all.index_dtype(0) == _find_all.index_dtype(1 << 32) == np.uint32  # positions up to 2**32 - 1
    assert _find_all.index_dtype((1 << 32) + 1) == np.int64


def test_id_pairs_refuse_an_id_twice():
    fps = np.array([1, 2, 3], np.uint64)
    assert sorted(_find_all.id_pairs(np.array([3, 1, 2], np.int64), fps, 3)) == [(1, 2, 1), (1, 3, 2), (2, 3, 1)]
    with pytest.raises(ValueError, match="unique ids"):
        _find_all.id_pairs(np.array([5, 1, 5], np.int64), fps, 3)


def test_find_all_input_forms():
    hashes = [0, 1, 3, 0xFF << 40]
    expected = [(0, 1), (0, 3), (1, 3)]
    assert find_all(hashes, 4, 2) == expected
    assert find_all(iter(hashes), 4, 2) == expected
    assert find_all(set(hashes), 4, 2) == expected
    assert find_all(np.array(hashes, np.uint64), 4, 2) == expected
    # -1 is the hash with every bit set; results are unsigned.
    assert find_all([-1, MASK64 ^ 1], 4, 1) == [(MASK64 ^ 1, MASK64)]


def test_popcount_fallback_matches_numpy():
    x = np.random.default_rng(9).integers(0, 2**64, 1000, dtype=np.uint64, endpoint=False)
    x[:3] = [0, MASK64, 1 << 63]
    assert _find_all._popcount_lut(x).tolist() == [bin(v).count("1") for v in x.tolist()]


def test_block_masks_follow_simhash_cpp():
    assert _find_all.block_masks(1) == [MASK64]
    widths = [12, 13, 13, 13, 13]  # bit 0 up to 12, 12 up to 25, ...
    starts = [0, 12, 25, 38, 51]
    assert _find_all.block_masks(5) == [(1 << w) - 1 << s for w, s in zip(widths, starts)]
    for blocks in range(1, 65):
        masks = _find_all.block_masks(blocks)
        assert sum(masks) == MASK64 and all(masks)


def test_hashing_imports_no_database_driver():
    code = "import json, sys, pysimhash_sql.hashing; print(json.dumps(list(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert [m for m in json.loads(run.stdout) if m.startswith(("psycopg", "sqlalchemy"))] == []
