"""Python's hashing layer and the SQL functions agree bit for bit (docs/fingerprint-spec.md)."""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import hashing

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


@settings(max_examples=2000, deadline=None)
@given(texts, shingle_sizes)
def test_text_fingerprint_matches_sql(shared_db: psycopg.Connection, text: str, size: int) -> None:
    row = shared_db.execute(
        "SELECT simhash(%(t)s, %(s)s)::text, simhash_tokens(%(t)s), simhash_shingles(%(t)s, %(s)s)",
        {"t": text, "s": size},
    ).fetchone()
    assert int(row[0]) == hashing.simhash(text, size)
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
    assert [int(v) for v in got] == [hashing.simhash(text), hashing.simhash(text, 1)]


@pytest.mark.parametrize("size", [255, 256, 257, 1000, 2999, 3000, 3001])
def test_long_shingles_match_sql(shared_db: psycopg.Connection, size: int) -> None:
    """Shingles longer than the tokens C keeps offsets for take its other path."""
    text = " ".join(f"w{i % 101}" for i in range(3000))
    got = shared_db.execute("SELECT simhash(%s, %s)::text", (text, size)).fetchone()[0]
    assert int(got) == hashing.simhash(text, size)


hash_lists = st.lists(st.integers(-(2**63), 2**63 - 1), max_size=600)


@settings(max_examples=300, deadline=None)
@given(hash_lists)
def test_vote_matches_sql(shared_db: psycopg.Connection, hashes: list[int]) -> None:
    got = shared_db.execute("SELECT simhash(%s::bigint[])::text", (hashes,)).fetchone()[0]
    assert int(got) == hashing.compute([h & MASK64 for h in hashes]) == hashing.vote(hashes)


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
