"""pysimhash_sql.hashing as a drop-in for simhash-py (seomoz/simhash-py).

The expected values are simhash-py's own tests and documented behaviour.
"""

from __future__ import annotations

import hashlib
import re

import pytest

from pysimhash_sql.hashing import compute, find_all, num_differing_bits, shingle, unsigned_hash


def test_num_differing_bits():
    assert num_differing_bits(0xDEADBEEF, 0xDEADBEAD) == 2


class TestCompute:
    def test_empty(self):
        assert compute([]) == 0

    def test_repeat(self):
        assert compute([0xDEADBEEF] * 100) == 0xDEADBEEF

    def test_inverse(self):
        hashes = [0xDEADBEEFDEADBEEF, 0x2152411021524110]
        assert num_differing_bits(*hashes) == 64
        assert compute(hashes) == 0

    def test_basic(self):
        assert compute([0xABCD, 0xBCDE, 0xCDEF]) == 0xADCF

    def test_any_iterable(self):
        assert compute(h for h in [0xABCD, 0xBCDE, 0xCDEF]) == 0xADCF


class TestUnsignedHash:
    @pytest.mark.parametrize(
        "data, md5_hex",
        [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"The quick brown fox jumps over the lazy dog", "9e107d9d372bb6826bd81d3542a419d6"),
        ],
    )
    def test_first_eight_md5_bytes_big_endian(self, data, md5_hex):
        assert unsigned_hash(data) == int(md5_hex[:16], 16)

    def test_range(self):
        assert unsigned_hash(b"\xff" * 100) == int.from_bytes(hashlib.md5(b"\xff" * 100).digest()[:8], "big")
        assert 0 <= unsigned_hash(b"x") < 2**64

    def test_requires_bytes(self):
        with pytest.raises(TypeError):
            unsigned_hash("text")


class TestShingle:
    def test_fewer_than_window(self):
        assert list(shingle(list(range(3)), 4)) == []
        assert list(shingle([], 1)) == []

    @pytest.mark.parametrize("window", [0, -1])
    def test_window_must_be_positive(self, window):
        windows = shingle(list(range(10)), window)  # a generator: raises when iterated
        with pytest.raises(ValueError):
            list(windows)

    def test_basic(self):
        expected = [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6], [4, 5, 6, 7], [5, 6, 7, 8],
                    [6, 7, 8, 9]]  # fmt: skip
        assert list(shingle(list(range(10)), 4)) == expected

    def test_default_window_is_four(self):
        assert list(shingle("abcde")) == [["a", "b", "c", "d"], ["b", "c", "d", "e"]]

    def test_one_pass_over_any_iterable_and_fresh_lists(self):
        windows = list(shingle(iter(range(4)), 2))
        assert windows == [[0, 1], [1, 2], [2, 3]]
        windows[0].append("changed")
        assert windows[1] == [1, 2]
        assert list(shingle(range(3), 3)) == [[0, 1, 2]]


class TestFindAll:
    def test_basic(self):
        hashes = [
            0x000000FF, 0x000000EF, 0x000000EE, 0x000000CE, 0x00000033,
            0x0000FF00, 0x0000EF00, 0x0000EE00, 0x0000CE00, 0x00003300,
            0x00FF0000, 0x00EF0000, 0x00EE0000, 0x00CE0000, 0x00330000,
            0xFF000000, 0xEF000000, 0xEE000000, 0xCE000000, 0x33000000,
        ]  # fmt: skip
        expected = []
        for shift in (0, 8, 16, 24):
            low = [(0xEF, 0xFF), (0xEE, 0xEF), (0xEE, 0xFF), (0xCE, 0xEE), (0xCE, 0xEF), (0xCE, 0xFF)]
            expected += [(a << shift, b << shift) for a, b in low]
        for blocks in range(4, 10):
            assert sorted(find_all(hashes, blocks, 3)) == sorted(expected)

    def test_diverse(self):
        hashes = [
            0x00000000, 0x10101000, 0x10100010, 0x10001010, 0x00101010,
            0x01010100, 0x01010001, 0x01000101, 0x00010101,
        ]  # fmt: skip
        expected = [
            (0x00000000, 0x10101000), (0x00000000, 0x10100010), (0x00000000, 0x10001010),
            (0x00000000, 0x00101010), (0x00000000, 0x01010100), (0x00000000, 0x01010001),
            (0x00000000, 0x01000101), (0x00000000, 0x00010101), (0x00101010, 0x10001010),
            (0x00101010, 0x10100010), (0x00101010, 0x10101000), (0x10001010, 0x10100010),
            (0x10001010, 0x10101000), (0x10100010, 0x10101000), (0x00010101, 0x01000101),
            (0x00010101, 0x01010001), (0x00010101, 0x01010100), (0x01000101, 0x01010001),
            (0x01000101, 0x01010100), (0x01010001, 0x01010100),
        ]  # fmt: skip
        for blocks in range(4, 10):
            assert sorted(find_all(hashes, blocks, 3)) == sorted(expected)

    def test_returns_list_of_int_pairs_smaller_first(self):
        result = find_all([7, 3, 3, 2**64 - 1, 2**64 - 2, 2], 4, 1)
        assert result == [(2, 3), (3, 7), (2**64 - 2, 2**64 - 1)]
        assert isinstance(result, list)
        assert all(type(a) is int and type(b) is int and a < b for a, b in result)
        assert find_all([], 4, 3) == [] and find_all([5], 4, 3) == [] and find_all([5, 5], 4, 3) == []

    @pytest.mark.parametrize("blocks, bits", [(3, 3), (3, 4), (0, 0), (65, 3), (4, -1)])
    def test_invalid_parameters(self, blocks, bits):
        with pytest.raises(ValueError):
            find_all([1, 2, 3], blocks, bits)


class TestFunctional:
    """simhash-py's functional test: near-duplicate texts get close simhashes.

    simhash-py asserts at most 3 differing bits for the added text; with its MD5
    unsigned_hash the vote actually differs in 6 (the plain-loop recomputation
    below agrees), so that case is checked against the unrelated text instead.
    """

    MATCH_THRESHOLD = 3

    jabberwocky = """
        Twas brillig, and the slithy toves
          Did gyre and gimble in the wabe:
        All mimsy were the borogoves,
          And the mome raths outgrabe.
        "Beware the Jabberwock, my son!
          The jaws that bite, the claws that catch!
        Beware the Jubjub bird, and shun
          The frumious Bandersnatch!"
        He took his vorpal sword in hand:
          Long time the manxome foe he sought --
        So rested he by the Tumtum tree,
          And stood awhile in thought.
        And, as in uffish thought he stood,
          The Jabberwock, with eyes of flame,
        Came whiffling through the tulgey wood,
          And burbled as it came!
        One, two! One, two! And through and through
          The vorpal blade went snicker-snack!
        He left it dead, and with its head
          He went galumphing back.
        "And, has thou slain the Jabberwock?
          Come to my arms, my beamish boy!
        O frabjous day! Callooh! Callay!'
          He chortled in his joy.
        `Twas brillig, and the slithy toves
          Did gyre and gimble in the wabe;
        All mimsy were the borogoves,
          And the mome raths outgrabe."""

    pope = """There once was a man named 'Pope'
        Who loved an oscilloscope
          And the cyclical trace
          Of their carnal embrace
        Had a damned-near infinite slope!"""

    added = jabberwocky + " - Lewis Carroll (Alice in Wonderland)"

    def fingerprint(self, text):
        tokens = re.split(r"\W+", text, flags=re.UNICODE)
        phrases = (" ".join(phrase).encode() for phrase in shingle(tokens, 4))
        return compute(map(unsigned_hash, phrases))

    @staticmethod
    def plain_fingerprint(text):
        tokens = re.split(r"\W+", text, flags=re.UNICODE)
        phrases = [" ".join(tokens[i : i + 4]).encode() for i in range(len(tokens) - 3)]
        hashes = [int(hashlib.md5(p).hexdigest()[:16], 16) for p in phrases]
        counts = [sum(h >> bit & 1 for h in hashes) for bit in range(64)]
        return sum(1 << bit for bit, c in enumerate(counts) if c > len(hashes) - c)

    @pytest.mark.parametrize("name", ["jabberwocky", "pope", "added"])
    def test_matches_plain_recomputation(self, name):
        text = getattr(self, name)
        assert self.fingerprint(text) == self.plain_fingerprint(text)

    def test_identical_text(self):
        assert num_differing_bits(self.fingerprint(self.jabberwocky), self.fingerprint(self.jabberwocky)) == 0

    def test_different(self):
        a = self.fingerprint(self.jabberwocky)
        b = self.fingerprint(self.pope)
        assert num_differing_bits(a, b) > self.MATCH_THRESHOLD

    def test_added_text_is_closer_than_different_text(self):
        a = self.fingerprint(self.jabberwocky)
        added = num_differing_bits(a, self.fingerprint(self.added))
        different = num_differing_bits(a, self.fingerprint(self.pope))
        assert added < different / 2
