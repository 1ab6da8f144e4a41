"""Python's hashing layer and the SQL functions agree bit for bit (docs/fingerprint-spec.md):
every implementation of the package (the compiled core and the pure-Python
reference, toolbox.implementations) gives SQL's fingerprint."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import hashing
from toolbox.implementations import assert_every_implementation_gives
from toolbox.text_vectors import load_vectors

MASK64 = 2**64 - 1

# Texts that stress the tokenizer: ASCII letters/digits/punctuation/control
# characters, Latin-1, CJK, emoji, and runs of separators.
characters = st.one_of(
    st.sampled_from(list("aAzZ09 \t\n\r.,;:!?'\"-_()[]{}\\/@#$%^&*+=<>|~`\x01\x1f\x7f")),
    st.characters(min_codepoint=0x80, max_codepoint=0x2FF),
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
)
texts = st.text(characters, max_size=200)
shingle_sizes = st.integers(1, 6)


def signed(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


@settings(max_examples=1000, deadline=None)
@given(texts, shingle_sizes)
def test_text_fingerprint_matches_sql(shared_db: psycopg.Connection, text: str, size: int) -> None:
    row = shared_db.execute(
        "SELECT simhash(%(t)s, %(s)s)::text, simhash_tokens(%(t)s), simhash_shingles(%(t)s, %(s)s)",
        {"t": text, "s": size},
    ).fetchone()
    assert_every_implementation_gives(int(row[0]), text, 1, size)
    assert row[1] == hashing.tokenize(text)
    assert row[2] == hashing.shingles(text, size)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_feature_hash_matches_sql(shared_db: psycopg.Connection, feature: str) -> None:
    got = shared_db.execute("SELECT simhash_feature_hash(%s)", (feature,)).fetchone()[0]
    assert got == signed(hashing.feature_hash(feature))


def test_long_text_matches_sql(shared_db: psycopg.Connection) -> None:
    text = " ".join(f"Word{i % 977} ünïcode-{i % 13}, end." for i in range(100_000))
    got = shared_db.execute("SELECT simhash(%s)::text, simhash(%s, 1)::text", (text, text)).fetchone()
    assert_every_implementation_gives(int(got[0]), text, 1)
    assert_every_implementation_gives(int(got[1]), text, 1, 1)


@pytest.mark.parametrize("size", [255, 256, 257, 1000, 2999, 3000, 3001])
def test_long_shingles_match_sql(shared_db: psycopg.Connection, size: int) -> None:
    """Shingles longer than the tokens C keeps offsets for take its other path."""
    text = " ".join(f"w{i % 101}" for i in range(3000))
    got = shared_db.execute("SELECT simhash(%s, %s)::text", (text, size)).fetchone()[0]
    assert_every_implementation_gives(int(got), text, 1, size)


hash_lists = st.lists(st.integers(-(2**63), 2**63 - 1), max_size=600)


@settings(max_examples=300, deadline=None)
@given(hash_lists)
def test_vote_matches_sql(shared_db: psycopg.Connection, hashes: list[int]) -> None:
    got = shared_db.execute("SELECT simhash(%s::bigint[])::text", (hashes,)).fetchone()[0]
    assert int(got) == hashing.compute([h & MASK64 for h in hashes]) == hashing.vote(hashes)
    assert int(got) == hashing.PURE_PYTHON.vote(np.array(hashes, np.int64).view(np.uint64))


# Every copy of C's vector code (simhash.debug_simd: the best this CPU runs, AVX2, none).
SIMD_LEVELS = ["auto", "avx2", "none"]


@pytest.fixture(params=SIMD_LEVELS)
def simd_db(shared_db: psycopg.Connection, request: pytest.FixtureRequest) -> Iterator[psycopg.Connection]:
    shared_db.execute(f"SET simhash.debug_simd = {request.param}")
    try:
        yield shared_db
    finally:
        shared_db.execute("RESET simhash.debug_simd")


@pytest.mark.parametrize("size", [31, 32, 33, 63, 64, 65, 127, 128, 129, 3967, 3968, 3969, 4096, 70_001])
def test_long_votes_match_sql(simd_db: psycopg.Connection, size: int) -> None:
    """Arrays past C's vectors of hashes (32, 64 or 128 a step: plain, AVX2,
    AVX-512) and the byte counters' capacity, of mostly all-ones hashes, so
    that every counter runs full."""
    rng = random.Random(size)
    hashes = [-1 if rng.random() < 0.9 else rng.randrange(-(2**63), 2**63) for _ in range(size)]
    got = simd_db.execute("SELECT simhash(%s::bigint[])::text", (hashes,)).fetchone()[0]
    assert int(got) == hashing.compute([h & MASK64 for h in hashes])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**63), 2**63 - 1),
            st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
        ),
        max_size=100,
    )
)
def test_weighted_vote_matches_sql(shared_db: psycopg.Connection, pairs: list[tuple[int, float]]) -> None:
    hashes = [h for h, _ in pairs]
    weights = [w for _, w in pairs]
    got = shared_db.execute(
        "SELECT simhash(%s::bigint[], %s::float8[])::text", (hashes, weights)
    ).fetchone()[0]
    assert int(got) == hashing.simhash_weighted(pairs)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, MASK64), st.integers(0, MASK64))
def test_hamming_distance_matches_sql(shared_db: psycopg.Connection, a: int, b: int) -> None:
    got = shared_db.execute(
        "SELECT hamming_distance(%s::text::simhash64, %s::text::simhash64)", (str(a), str(b))
    ).fetchone()[0]
    assert got == hashing.hamming_distance(a, b) == hashing.num_differing_bits(a, b)


# -- the text fingerprint version 2 (spec §6) ---------------------------------------

# Characters of every script and class the spec names: letters with and without
# marks, scripts written without spaces, Hangul in all its forms, compatibility
# forms, spaces, format characters, punctuation, symbols, emoji, private use,
# unassigned code points, and beyond the BMP.
SCRIPT_RANGES = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x52F), (0x530, 0x58F),
    (0x590, 0x5FF), (0x600, 0x6FF), (0x750, 0x77F), (0x900, 0x97F), (0x980, 0x9FF), (0xE00, 0xE7F),
    (0xE80, 0xEFF), (0xF00, 0xFFF), (0x1000, 0x109F), (0x10A0, 0x10FF), (0x1100, 0x11FF), (0x1200, 0x137F),
    (0x13A0, 0x13FF), (0x1780, 0x17FF), (0x1E00, 0x1FFF), (0x2000, 0x206F), (0x2070, 0x209F),
    (0x2100, 0x24FF), (0x2E80, 0x2FDF), (0x3000, 0x30FF), (0x3100, 0x318F), (0x3200, 0x33FF),
    (0x4E00, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xE000, 0xE0FF), (0xF900, 0xFAFF),
    (0xFB00, 0xFDFF), (0xFE00, 0xFE6F), (0xFE70, 0xFFFF), (0x10300, 0x1034F), (0x1D400, 0x1D7FF),
    (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF), (0x2F800, 0x2FA1F), (0xE0000, 0xE01EF), (0xF0000, 0xF00FF),
]
script_characters = st.one_of(
    *(st.characters(min_codepoint=lo, max_codepoint=hi, exclude_categories=("Cs",)) for lo, hi in SCRIPT_RANGES),
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
)
script_texts = st.text(script_characters, max_size=120)


@settings(max_examples=600, deadline=None)
@given(script_texts)
def test_text_v2_matches_sql(shared_db: psycopg.Connection, text: str) -> None:
    row = shared_db.execute(
        "SELECT simhash_v2(%(t)s)::text, simhash_v2_tokens(%(t)s), simhash_v2_features(%(t)s)", {"t": text}
    ).fetchone()
    assert int(row[0]) == hashing.fingerprint(text, version=2)
    assert_every_implementation_gives(int(row[0]), text, 2)
    assert row[1] == hashing.tokenize_v2(text)
    assert row[2] == hashing.features_v2(text)


def test_text_v2_long_texts_match_sql(shared_db: psycopg.Connection) -> None:
    """Texts far longer than C's first buffer and Python's batches, and a
    token longer than both."""
    rng = random.Random(28)
    words = ["Word", "ÜNÏCODE", "日本語の", "한국어", "ภาษา", "ﬃ", "x\u0301", "\u200b", "，", " ", "\u00a0"]
    texts = [
        "".join(rng.choice(words) for _ in range(200_000)),
        "한" * 300_000,
        "a" * 100_000 + " b c",
    ]
    for text in texts:
        got = shared_db.execute("SELECT simhash_v2(%s)::text", (text,)).fetchone()[0]
        assert_every_implementation_gives(int(got), text, 2)


def test_text_v2_mixed_runs_match_sql(simd_db: psycopg.Connection) -> None:
    """ASCII words of every length among characters of other scripts, as in
    translated manual pages: C's runs of ASCII start and stop everywhere, and
    its batches of hashes fill at every offset."""
    rng = random.Random(2828)
    pieces = ["中", "文", "é", "ß", "—", "。", "passwd", "a", "to", "the", "[options]", " ", "  ", "\n", "-h", "x1"]
    for _ in range(20):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(500, 5000)))
        got = simd_db.execute("SELECT simhash_v2(%s)::text", (text,)).fetchone()[0]
        assert_every_implementation_gives(int(got), text, 2)


def test_text_v2_repeated_letters_match_sql(simd_db: psycopg.Connection) -> None:
    """Runs of one letter of every length among words: the n-grams the runs
    rule drops, at every lane of C's vectors of n-grams and across them."""
    rng = random.Random(2829)
    pieces = ["the", "copy", "of", " ", ", ", "\n", "é", "中"] + [c * k for c in "az" for k in range(1, 21)]
    for _ in range(20):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(300, 3000)))
        got = simd_db.execute("SELECT simhash_v2(%s)::text", (text,)).fetchone()[0]
        assert_every_implementation_gives(int(got), text, 2)


# -- the text fingerprint version 3 (spec §8) ---------------------------------------

# Every script, with numbers among them: digits of every form (ASCII, full
# width, circled, superscript, fractions, other scripts' digits).
number_pieces = st.sampled_from(["0", "12", "3.5", "2024-05-01", "x200", "１２", "①", "²", "½", "٣", "३", "〇"])
number_texts = st.lists(st.one_of(script_characters, number_pieces), max_size=80).map("".join)


def v3_row(db: psycopg.Connection, text: str) -> tuple:
    """simhash_v3, its tokens, and its features with their votes as (feature, votes) pairs."""
    row = db.execute(
        "SELECT simhash_v3(t)::text, simhash_v3_tokens(t), f.features, f.votes"
        " FROM (SELECT %s::text AS t) x, LATERAL ("
        "  SELECT coalesce(array_agg(feature ORDER BY n), '{}') AS features,"
        "         coalesce(array_agg(votes ORDER BY n), '{}') AS votes"
        "  FROM simhash_v3_features(t) WITH ORDINALITY AS f(feature, votes, n)) f", (text,)
    ).fetchone()
    return row[0], row[1], list(zip(row[2], row[3]))


@settings(max_examples=600, deadline=None)
@given(number_texts)
def test_text_v3_matches_sql(shared_db: psycopg.Connection, text: str) -> None:
    row = v3_row(shared_db, text)
    assert int(row[0]) == hashing.fingerprint(text, version=3)
    assert_every_implementation_gives(int(row[0]), text, 3)
    assert row[1] == hashing.tokenize_v3(text)
    assert row[2] == hashing.features_v3(text)


def test_text_v3_features_past_the_cap_match_sql(shared_db: psycopg.Connection) -> None:
    """Features 32, 33 and many more times: each votes at its first 32 occurrences only, in
    simhash_v3_features too (which counts the features of its sketch's hot slots)."""
    rng = random.Random(4848)
    texts = [unit * times for unit in ("the cat sat ", "x1 y2 ", "近似重复") for times in (32, 33, 50)]
    texts.append(" ".join(rng.choice(["a", "b1", "the", "中文", "2024", "Ünï"]) for _ in range(5_000)))
    for text in texts:
        row = v3_row(shared_db, text)
        assert int(row[0]) == hashing.fingerprint(text, version=3)
        assert row[2] == hashing.features_v3(text)


def test_text_v3_vectors_match_sql(shared_db: psycopg.Connection) -> None:
    for vector in load_vectors(3):
        got = shared_db.execute("SELECT simhash_v3(%s)::text", (vector["text"],)).fetchone()[0]
        assert int(got) == int(vector["simhash_v3"], 16), vector["name"]
        assert_every_implementation_gives(int(got), vector["text"], 3)


def test_text_v3_long_texts_match_sql(simd_db: psycopg.Connection) -> None:
    """Texts far longer than C's first buffer and table of counts: a template
    repeated far apart (the cap), tables of figures (the ramp), every script."""
    rng = random.Random(48)
    words = ["Word", "ÜNÏCODE", "日本語の", "한국어", "ภาษา", "٣", " ", "\n", ", ", "2025", "12.99", "x86_64"]
    texts = [
        "".join(rng.choice(words) for _ in range(100_000)),
        "\n".join(f"* [{rng.randint(0, 99)}] see https://example.org/commit by author {i}" for i in range(5_000)),
        " ".join(f"{rng.randint(0, 10**6)} item {i % 50}" for i in range(20_000)),
        "한" * 100_000,
    ]
    for text in texts:
        got = simd_db.execute("SELECT simhash_v3(%s)::text", (text,)).fetchone()[0]
        assert_every_implementation_gives(int(got), text, 3)


def test_text_v3_texts_one_after_another_match_sql(shared_db: psycopg.Connection) -> None:
    """Texts in turn in one backend, which keeps the memory of the cap's sketches
    and logs between calls (what the text before left in it, and a text past
    what it keeps: SIMHASH_CORE_SCRATCH_LIMIT) and gives the same bits."""
    rng = random.Random(4849)
    words = ["the", "cat", "x1", "2024", "近似重复", "Ünï", " ", "\n"]
    sizes = [300_000, 40, 20_000, 1_500_000, 7, 300_000, 33 * 4]
    for size in sizes:
        text = "".join(rng.choice(words) for _ in range(size // 3))
        got = shared_db.execute("SELECT simhash_v3(%s)::text", (text,)).fetchone()[0]
        assert int(got) == hashing.fingerprint(text, version=3), len(text)
