"""The simhash64 type seen from a client: parsing, binary I/O, encodings."""

from __future__ import annotations

import re

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

MAX = 2**64 - 1
HEX_LITERAL = re.compile(r"0[xX]([0-9a-fA-F]{1,16})")
DEC_LITERAL = re.compile(r"[0-9]+")


def reference_parse(literal: str) -> int | str:
    """The value a literal denotes, or the SQLSTATE it must raise."""
    body = literal.strip(" \t\n\r\v\f")
    if m := HEX_LITERAL.fullmatch(body):
        return int(m.group(1), 16)
    if DEC_LITERAL.fullmatch(body):
        value = int(body)
        return value if value <= MAX else "22003"
    return "22P02"


literal_chars = st.sampled_from(list("0123456789abcdefxX +-.\t\n_eE") + ["\u00e9", "\u0660"])


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.text(literal_chars, max_size=24),
        st.integers(0, MAX).map(str),
        st.integers(0, MAX).map(hex),
        st.integers(MAX + 1, 10**30).map(str),
        st.integers(-(10**20), -1).map(str),
    )
)
def test_input_matches_reference_and_never_crashes(shared_db: psycopg.Connection, literal: str) -> None:
    expected = reference_parse(literal)
    if isinstance(expected, int):
        got = shared_db.execute("SELECT %s::text::simhash64::text", (literal,)).fetchone()[0]
        assert int(got) == expected
        return
    with pytest.raises(psycopg.errors.DataError) as info:
        shared_db.execute("SELECT %s::text::simhash64", (literal,))
    assert info.value.sqlstate == expected
    assert f'"{literal}"' in str(info.value)  # the message quotes the bad value


@given(st.integers(0, MAX))
@settings(max_examples=300, deadline=None)
def test_binary_round_trip_and_casts(shared_db: psycopg.Connection, value: int) -> None:
    signed = value - 2**64 if value >= 2**63 else value
    row = shared_db.execute(
        "SELECT v::text, v::bigint, simhash64_to_hex(v), v::bytea, v::bit(64)::text"
        " FROM (SELECT %s::text::simhash64 AS v) t",
        (str(value),),
    ).fetchone()
    assert row == (str(value), signed, f"0x{value:016x}", value.to_bytes(8, "big"), f"{value:064b}")
    # binary protocol: the server sends 8 bytes, big-endian
    cur = shared_db.cursor(binary=True)
    raw = cur.execute("SELECT %s::text::simhash64", (str(value),)).fetchone()[0]
    assert bytes(raw) == value.to_bytes(8, "big")


def test_copy_binary_round_trip(db: psycopg.Connection) -> None:
    values = [0, 1, 2**63 - 1, 2**63, MAX]
    db.execute("CREATE TABLE src (v simhash64); CREATE TABLE dst (v simhash64)")
    with db.cursor().copy("COPY src FROM STDIN") as copy:
        for v in values:
            copy.write_row((str(v),))
    data = bytearray()
    with db.cursor().copy("COPY src TO STDOUT (FORMAT binary)") as copy:
        for chunk in copy:
            data += chunk
    with db.cursor().copy("COPY dst FROM STDIN (FORMAT binary)") as copy:
        copy.write(bytes(data))
    got = [int(r[0]) for r in db.execute("SELECT v::text FROM dst ORDER BY dst.v").fetchall()]
    assert got == values


def test_non_utf8_database_fingerprints_the_utf8_bytes(db: psycopg.Connection) -> None:
    """A LATIN1 database converts text to UTF-8 before tokenising (spec §3.1)."""
    text = "Crème brûlée, NAÏVE façade"
    utf8 = db.execute("SELECT simhash(%s)::text, simhash_tokens(%s)", (text, text)).fetchone()
    db.execute(
        "CREATE DATABASE latin1_db ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
    )
    info = db.info
    with psycopg.connect(
        host=info.host, port=info.port, user=info.user, dbname="latin1_db", autocommit=True
    ) as latin1:
        latin1.execute("CREATE EXTENSION simhash")
        got = latin1.execute("SELECT simhash(%s)::text, simhash_tokens(%s)", (text, text)).fetchone()
    assert got == utf8
    assert utf8[1] == ["crème", "brûlée", "naÏve", "façade"]
