"""The text fingerprint version 3 in Python (pysimhash_sql/text_v3.py,
hashing.simhash_v3) against docs/fingerprint-spec.md §8, the shared vectors,
and the plain reference of tests/toolbox/text_reference.py.  (SQL: once the
extension has simhash_v3, against the same vectors.)"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import hashing, text_v2, text_v3
from pysimhash_sql.hashing import features_v3, fingerprint, simhash_v2, simhash_v3, simhash_weighted, tokenize_v3
from toolbox import distance
from toolbox.text_reference import ref_chars, ref_features_v3, ref_simhash_v3, ref_tokens_v3, ref_words_v3, script_text
from toolbox.text_vectors import load_vectors

@pytest.mark.parametrize("vector", load_vectors(3), ids=lambda v: v["name"])
def test_shared_vectors(vector):
    text = vector["text"]
    expected = int(vector["simhash_v3"], 16)
    assert tokenize_v3(text) == vector["tokens"] == ref_tokens_v3(text)
    assert simhash_v3(text) == expected == ref_simhash_v3(text)
    assert simhash_v3(text.encode()) == expected
    assert tokenize_v3(text.encode()) == [t.encode() for t in vector["tokens"]]
    assert simhash_weighted(features_v3(text)) == expected


def test_vectors_hold_version_2s_inputs_and_every_script():
    """Every input of version 2's vectors is one of version 3's too (every class,
    script and typography case), beside numbers and templates."""
    v3 = {v["name"]: v["text"] for v in load_vectors(3)}
    assert all(v3.get(v["name"]) == v["text"] for v in load_vectors(2))
    texts = " ".join(v3.values())
    for sample in "日ひカ" "ไ" "ລ" "ខ" "မ" "ㄅ" "한" "ы" "ب":
        assert sample in texts
    assert any(ref_chars(ord(c)) == [(ord("1"), 2)] and c != "1" for c in texts)  # a digit of another form


@settings(max_examples=400, deadline=None)
@given(st.one_of(script_text, st.text(st.sampled_from(list("0123456789１²①½٣ .-xy中")), max_size=60)))
def test_matches_reference(text):
    assert tokenize_v3(text) == ref_tokens_v3(text)
    assert features_v3(text) == ref_features_v3(text)
    assert simhash_v3(text) == ref_simhash_v3(text)
    assert [(f.decode(), v) for f, v in features_v3(text.encode())] == features_v3(text)


@settings(max_examples=150, deadline=None)
@given(st.text(st.sampled_from(list("0123456789ab \u00a0中文ไ\u200b①")), max_size=60), st.integers(1, 8))
def test_batch_boundaries_do_not_change_anything(text, batch):
    with mock.patch.object(text_v2, "_BATCH_CHARS", batch):
        batches, words, numbers = text_v3.tokenized(text)
        assert ([t.decode() for b in batches for t in b], words) == ref_words_v3(text)
        assert numbers == sum(t[:1].isdigit() for b in batches for t in b)
        assert simhash_v3(text) == ref_simhash_v3(text)


def test_long_texts_match_reference():
    """Several batches (a number never cut in two), and a number longer than a batch."""
    pieces = ["Word", "x200", "2024-05-01", "日本語の", "한국어", "ภาษา", "①", "\u200b", "，", " ", "\u00a0"]
    text = "".join(pieces[i * 7 % len(pieces)] for i in range(60_000))
    with mock.patch.object(text_v2, "_BATCH_CHARS", len(text) // 4):
        assert (tokenize_v3(text), simhash_v3(text)) == (ref_tokens_v3(text), ref_simhash_v3(text))
    assert tokenize_v3("12" * 100_000) == ["12" * 100_000]


def test_numbers_are_tokens_of_their_own():
    assert tokenize_v3("Model X200 costs 12.99 EUR, x86_64") == ["model", "x", "200", "costs", "12", "99", "eur",
                                                                  "x", "86", "64"]
    assert tokenize_v3("１２ ①② ² ½") == ["12", "12", "2", "1", "2"]  # the normalisation's digits
    assert tokenize_v3("٢٠٢٥ ๑๒ 〇") == []  # digits of other scripts separate, as in version 2


def test_numbers_tell_pages_of_figures_apart():
    """The issue's examples: version 2 gives distance 0; version 3 tells them apart."""
    a, b = "Order 1234 shipped on 2024-05-01 for 99.99 USD", "Order 9876 shipped on 2025-11-30 for 15.00 USD"
    assert simhash_v2(a) == simhash_v2(b)
    assert distance(simhash_v3(a), simhash_v3(b)) > 3
    assert distance(simhash_v3("Model X200"), simhash_v3("Model X300")) > 3


def test_numbers_in_prose_do_not_vote():
    """Below V3_NUMBER_SHARE[0] % of number tokens, features with a digit do not vote:
    a timestamp line does not move a page of prose."""
    prose = "Near-duplicate detection finds pages that say the same thing in other words. " * 5
    assert not any(set(f) & set("0123456789") for f, _ in features_v3(f"Last updated 2025-03-14 UTC\n{prose}"))
    assert simhash_v3(f"Last updated 2025-03-14 09:26:53 UTC\n{prose}") == simhash_v3(
        f"Last updated 2026-11-29 10:40:30 UTC\n{prose}")


@pytest.mark.parametrize("words, numbers, ramp", [(0, 0, 0), (20, 3, 0), (100, 15, 0), (100, 16, 1), (100, 20, 8),
                                                  (100, 24, 14), (100, 25, 16), (5, 5, 16), (3, 1, 16)])
def test_number_ramp(words, numbers, ramp):
    assert hashing.number_ramp(words, numbers) == ramp


def test_a_run_of_solo_characters_is_one_word():
    """The share of numbers is among words, as in scripts written with spaces: a
    Chinese phrase is one word, not one a character."""
    text = "版本 2024年5月 发布，修复了 17 个错误 ภาษาไทย ok"
    assert text_v3.tokenized(text)[1] == 11 == ref_words_v3(text)[1]  # 版本 2024 年 5 月 发布 修复了 17 个错误 ภาษาไทย ok
    assert text_v3.tokenized("中\u200b文")[1] == 1  # a dropped character does not separate


def test_a_feature_votes_at_most_its_cap():
    """A distinct feature votes at its first V3_MAX_VOTES occurrences (runs once
    first): a template line repeated far apart is not louder than the content."""
    cap = hashing.V3_MAX_VOTES
    lines = [f"line {chr(0x61 + i // 26)}{chr(0x61 + i % 26)} of the page" for i in range(cap + 9)]
    text = "\n".join(f"{line}\nthe template" for line in lines)
    assert [f for f, _ in features_v3(text)].count("of the page") == cap
    assert features_v3("abc " * 40) == [("abc abc abc", hashing.V3_RAMP_STEPS)] + [
        (f, 2 * hashing.V3_RAMP_STEPS) for f in ["abc a", "bc ab", "c abc", " abc "] * cap]


def test_typography_never_counts():
    base = "Le « café » coûte 2,50 € — 12 % de plus qu’en 2024."
    for changed in (base.upper(), base.replace(" ", "\u00a0"), base.replace("2,50", "２,５０"),
                    base.replace("é", "e\u0301"), base.replace("café", "ca\u200bfé")):
        assert simhash_v3(changed) == simhash_v3(base)


def test_fingerprint_dispatches_by_version():
    text = "Version 2.39.5, released 2024-05-01: 17 bugs fixed."
    assert fingerprint(text, version=3) == simhash_v3(text) != simhash_v2(text)
    assert fingerprint(text, version=3).text_spec == 3
    texts = [text, "近似重复 12", b"Model X200"]
    expected = [simhash_v3(t) for t in texts]
    assert hashing.fingerprints(texts, version=3, jobs=2) == expected
    assert [fp for batch in hashing.fingerprint_batches([texts[:1], texts[1:]], version=3, jobs=2) for fp in batch] == expected
    assert all(impl.simhash_v3(t) == e for impl in (hashing.PURE_PYTHON, hashing.COMPILED) if impl
               for t, e in zip(texts, expected))
