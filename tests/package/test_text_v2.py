"""The text fingerprint version 2 in Python (pysimhash_sql/text_v2.py,
hashing.simhash_v2) against docs/fingerprint-spec.md §6, the shared vectors,
and a plain reference that reads the Unicode tables one character at a time.
SQL is checked against the same vectors by pg_regress and against Python by
tests/extension/fingerprint/test_hashing_sql.py."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import _xxh3, hashing, text_spec, text_v2
from pysimhash_sql import unicode_tables as ut
from pysimhash_sql.hashing import PURE_PYTHON, features_v2, fingerprint, simhash, simhash_v2, tokenize_v2
from toolbox import distance
from toolbox.text_reference import ref_chars, ref_features, ref_simhash_v2, ref_tokens, script_text
from toolbox.text_vectors import load_vectors

# -- XXH3 of many spans at once (pysimhash_sql/_xxh3.py) ------------------------------


def test_vectorised_xxh3_matches_xxhash_at_every_length():
    rng = np.random.default_rng(28)
    data = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    lengths = np.repeat(np.arange(0, 260), 12)  # every path: 0-3, 4-8, 9-16, 17-128, beyond
    starts = rng.integers(0, len(data) - 260, lengths.size)
    got = _xxh3.xxh3_spans(data, starts, starts + lengths).tolist()
    assert got == [xxhash.xxh3_64_intdigest(data[a : a + n]) for a, n in zip(starts.tolist(), lengths.tolist())]
    assert _xxh3.xxh3_spans(b"", np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0


# -- the shared vectors -----------------------------------------------------------


@pytest.mark.parametrize("vector", load_vectors(), ids=lambda v: v["name"])
def test_shared_vectors(vector):
    text = vector["text"]
    expected = int(vector["simhash_v2"], 16)
    assert tokenize_v2(text) == vector["tokens"] == ref_tokens(text)
    assert simhash_v2(text) == expected == ref_simhash_v2(text)
    assert simhash_v2(text.encode()) == expected
    assert tokenize_v2(text.encode()) == [t.encode() for t in vector["tokens"]]


def test_vectors_cover_every_kind_and_script():
    kinds, scripts = set(), set()
    for vector in load_vectors():
        for char in vector["text"]:
            value = ref_chars(ord(char))
            kinds.update(kind for _, kind in value)
            if len(value) > 1 or value[0][0] != ord(char):
                kinds.add("mapped")
            if not value:
                kinds.add("dropped")
    assert kinds >= {ut.WORD, ut.SOLO, ut.SEPARATOR, "mapped"}
    texts = " ".join(v["text"] for v in load_vectors())
    for sample in "日ひカ" "ไ" "ລ" "ខ" "မ" "ㄅ" "한":  # Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, Bopomofo, Hangul
        assert sample in texts


@settings(max_examples=500, deadline=None)
@given(script_text)
def test_matches_reference(text):
    assert tokenize_v2(text) == ref_tokens(text)
    assert simhash_v2(text) == PURE_PYTHON.simhash_v2(text) == ref_simhash_v2(text)
    assert features_v2(text) == ref_features(text)
    assert features_v2(text) == [f.decode() for f in features_v2(text.encode())]


@settings(max_examples=200, deadline=None)
@given(script_text, st.integers(1, 8))
def test_batch_boundaries_do_not_change_anything(text, batch):
    """The pure-Python implementation's batches (the compiled core has its own: tests/package/test_core_module.py)."""
    with mock.patch.object(text_v2, "_BATCH_CHARS", batch):
        assert tokenize_v2(text) == ref_tokens(text)
        assert features_v2(text) == ref_features(text)
        assert PURE_PYTHON.simhash_v2(text) == ref_simhash_v2(text)


def test_long_texts_match_reference():
    words = ["Word", "ÜNÏCODE", "日本語の", "한국어", "ภาษา", "ﬃ", "x\u0301", "\u200b", "，", " ", "\u00a0"]
    text = "".join(words[i * 7 % len(words)] for i in range(100_000))
    with mock.patch.object(text_v2, "_BATCH_CHARS", 1 << 16):
        assert len(text) > 3 * text_v2._BATCH_CHARS
        assert tokenize_v2(text) == ref_tokens(text)
        assert simhash_v2(text) == PURE_PYTHON.simhash_v2(text) == ref_simhash_v2(text)
    # No separator for longer than a batch: one batch.
    assert tokenize_v2("ab\u0301" * 1_000_000) == ["ab" * 1_000_000]


# -- typography never counts (the list), version 1 untouched --------------

BASE = "The “quick” brown fox's École — naïve café, ΣΊΣΥΦΟΣ 日本語のテキスト بِسْمِ اللَّهِ 한국어 텍스트 ok."
ZS = [chr(c) for c in (0xA0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000)]


@pytest.mark.parametrize(
    "change",
    [
        *(pytest.param(lambda t, s=s: t.replace(" ", s), id=f"space U+{ord(s):04X}") for s in ZS),
        pytest.param(lambda t: t.replace("quick", "qu\u200bick").replace("brown", "br\u200cown"), id="zero-width"),
        pytest.param(lambda t: t.replace("naïve", "na\u2060ïve").replace("café", "\ufeffcafé"), id="word joiner, BOM"),
        pytest.param(lambda t: t.replace("quick", "qui\u00adck").replace("École", "Éco\u00adle"), id="soft hyphen"),
        pytest.param(lambda t: t.replace("“", '"').replace("”", '"').replace("'", "’"), id="quotes"),
        pytest.param(lambda t: t.replace("—", "-").replace(",", "，").replace(".", "。"), id="punctuation"),
        pytest.param(lambda t: t.replace("brown fox", "ｂｒｏｗｎ　ｆｏｘ"), id="full-width"),
        pytest.param(str.upper, id="upper case"),
        pytest.param(str.lower, id="lower case"),
        pytest.param(lambda t: t.replace("École", "Ecole").replace("naïve", "naive").replace("café", "cafe"),
                     id="accents"),
        pytest.param(lambda t: t.replace("naïve", "nai\u0308ve"), id="decomposed accents"),
        pytest.param(lambda t: t.replace("بِسْمِ اللَّهِ", "بسم الله"), id="harakat"),
        pytest.param(lambda t: t.replace("اللَّهِ", "اللَّـــهِ"), id="tatweel"),
    ],
)
def test_typography_alone_gives_distance_zero(change):
    changed = change(BASE)
    assert changed != BASE
    assert distance(simhash_v2(changed), simhash_v2(BASE)) == 0


def test_case_and_accents_of_words():
    assert simhash_v2("ÉCOLE") == simhash_v2("école") == simhash_v2("ecole")
    assert simhash_v2("STRASSE") == simhash_v2("straße")
    assert simhash("ÉCOLE") != simhash("école")  # version 1 keeps non-ASCII case


def test_version_one_is_unchanged():
    # The spec's worked example (§3) and its tokenizer, untouched by version 2.
    assert simhash("The quick, brown fox!", 2) == 0x7AFFC44A680966C6
    assert hashing.tokenize("a\u00a0b “c”") == ["a\u00a0b", "“c”"]
    assert fingerprint("The quick, brown fox!", version=1) == simhash("The quick, brown fox!")


def test_fingerprint_dispatches_by_version():
    text = "近似重复检测，在每一种语言中。"
    assert fingerprint(text, version=2) == simhash_v2(text) != simhash(text)
    # The tools' default: the latest version, which SQL computes too (version 3, simhash_v3;
    # version 2 stays as it is, chosen explicitly)
    assert hashing.TEXT_SPEC_VERSION_LATEST == max(text_spec.SQL_SPEC_VERSIONS) == 3
    assert hashing.TEXT_SPEC_VERSIONS == (1, 2, 3)
    for bad in (0, 4, True, "2", None):
        with pytest.raises(ValueError, match="version"):
            fingerprint(text, version=bad)
    with pytest.raises(TypeError):
        fingerprint(text)  # the version is never implicit


@pytest.mark.parametrize(
    "token_shingle, char_gram, weights, runs_once",
    [(3, 0, (1, 1), False), (2, 5, (1, 2), True), (0, 4, (1, 1), False), (3, 1, (2, 1), True)],
)
def test_every_design_of_the_parts_matches_reference(token_shingle, char_gram, weights, runs_once):
    """The feature step is constants (hashing.V2_*): each combination of parts,
    weights and the runs rule follows the reference, across batch boundaries too
    (the pure-Python implementation's: the compiled core's are C constants)."""
    texts = [v["text"] for v in load_vectors()] + ["a", "ab", "近", "a b", "x\u00a0y", "aaaaaaaa", "0.0000000001"]
    with mock.patch.multiple(hashing, V2_TOKEN_SHINGLE=token_shingle, V2_CHAR_GRAM=char_gram,
                             V2_TOKEN_WEIGHT=weights[0], V2_CHAR_WEIGHT=weights[1], V2_RUNS_ONCE=runs_once):
        for text in texts:
            assert features_v2(text) == ref_features(text), text
            assert PURE_PYTHON.simhash_v2(text) == ref_simhash_v2(text), text
            with mock.patch.object(text_v2, "_BATCH_CHARS", 3):
                assert PURE_PYTHON.simhash_v2(text) == ref_simhash_v2(text), text


def test_runs_vote_once():
    w = hashing.V2_CHAR_WEIGHT  # the character n-grams are listed once per vote
    # "aaaaaaa": the character 5-gram "aaaaa" three times in a row votes once.
    assert features_v2("aaaaaaa") == ["aaaaaaa"] + ["aaaaa"] * w
    # Repeats that are not in a row all vote: only the token shingle's run is one vote.
    assert features_v2("ab ab ab ab ab") == ["ab ab ab"] + (["ab ab", "b ab ", " ab a"] * 3 + ["ab ab"]) * w
    assert features_v2("x " + "a" * 10) == ["x aaaaaaaaaa"] + ["x aaa", " aaaa", "aaaaa"] * w


def test_numbers_separate():
    """Numbers of every script (and what ①, ², １ become) separate tokens and vanish:
    a timestamp or a counter that changes between crawls changes nothing."""
    assert tokenize_v2("Retrieved 2025-03-14 09:26:53 UTC, x86_64") == ["retrieved", "utc", "x"]
    assert tokenize_v2("①²１ ١٢٣ ۴۵ ๑๒ 〇 ½") == []
    page = "Version 1.2.3 was released on 2024-05-01; 17 bugs fixed, 3 open."
    assert simhash_v2(page) == simhash_v2(page.replace("1.2.3", "1.2.4").replace("17", "18"))


def test_scripts_without_spaces_are_character_shingles():
    assert tokenize_v2("近似重复") == ["近", "似", "重", "复"]
    assert tokenize_v2("ภาษาไทย") == ["ภ", "า", "ษ", "า", "ไ", "ท", "ย"]
    # Two changed words in a Chinese paragraph leave it near (version 1: 33 bits).
    paragraph = "近似重复检测是信息检索中的一个重要问题，它可以帮助搜索引擎删除重复的网页，节省存储空间并提高搜索质量。"
    edited = paragraph.replace("重要", "关键").replace("删除", "去掉")
    assert distance(simhash_v2(paragraph), simhash_v2(edited)) < distance(simhash(paragraph), simhash(edited))


def test_bytes_are_read_as_utf8():
    assert tokenize_v2("École".encode()) == [b"ecole"]
    # An ill-formed sequence separates tokens, whatever its length.
    assert tokenize_v2(b"ab\xffcd\xe6\x97e\xed\xa0\x80f\xf0\x9f\x98") == [b"ab", b"cd", b"e", b"f"]
    assert simhash_v2(bytearray(b"x y z")) == simhash_v2("x y z")
    with pytest.raises(UnicodeEncodeError):
        simhash_v2("\ud800")
    with pytest.raises(TypeError):
        simhash_v2(42)
