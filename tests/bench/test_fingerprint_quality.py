"""The fingerprint quality benchmark's copies, version 2 stand-in and measures
(bench/fingerprint_quality.py), on small texts: copies are deterministic and do
what their names say, the stand-in normalization does what the spec says, the
vote equals the package's, and near pairs equal brute force."""

from __future__ import annotations

import random
import re

import fingerprint_quality as fq
import numpy as np
import xxhash
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysimhash_sql import hashing

PAGE = (
    'The "ls" command lists 12 files in 3 directories; it\'s quick.\n'
    "Zweite Zeile: Straße, Öl und Äpfel kosten 4 Euro.\n"
    "Третья строка о файлах и каталогах.\n"
    "中文段落，包括标点。日本語の文章とカタカナ。\n"
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ และ العربية مُشَكَّلة بالحركات والتطويـــل\n"
) * 8


@pytest.mark.parametrize("kind", sorted(fq.COPIES))
def test_copies_are_deterministic_per_seed(kind) -> None:
    assert fq.make_copy(kind, PAGE, "page") == fq.make_copy(kind, PAGE, "page")
    if kind not in ("case", "marks"):  # those two have no randomness
        assert fq.make_copy(kind, PAGE, "page") != fq.make_copy(kind, PAGE, "another page")


def test_line_added_adds_a_timestamp_line_and_changes_one_number() -> None:
    copy = fq.make_copy("line", PAGE, "page")
    lines = copy.split("\n")
    stamp = lines[0] if lines[0].startswith("Retrieved ") else lines[-1]
    assert stamp.startswith("Retrieved ") and stamp.endswith(" UTC")
    body = copy.replace(stamp, "", 1).strip("\n")
    assert len(body.split("\n")) == len(PAGE.strip("\n").split("\n"))
    changed = [(a, b) for a, b in zip(PAGE.split(), body.split()) if a != b]
    assert len(changed) == 1 and any(c.isdigit() for c in changed[0][1])


def test_span_replaced_keeps_the_length_and_changes_one_percent_at_most() -> None:
    for seed in range(20):
        copy = fq.make_copy("span", PAGE, f"page{seed}")
        assert len(copy) == len(PAGE)
        diff = [i for i, (a, b) in enumerate(zip(PAGE, copy)) if a != b]
        assert not diff or diff[-1] - diff[0] < round(len(PAGE) * fq.SPAN_SHARE)


def test_typography_changes_no_character_but_typography() -> None:
    copy = fq.make_copy("typography", PAGE, "page")
    assert copy != PAGE
    for mark in ("\u00a0", "\u201c", "\u2019"):
        assert mark in copy
    assert set(copy) & set(fq._INVISIBLE)
    assert any("\uff01" <= c <= "\uff5e" for c in copy)
    # As version 2 reads it, the copy is the page.
    normalizer = fq.Normalizer()
    assert normalizer.tokens(copy) == normalizer.tokens(PAGE)


@pytest.mark.parametrize("kind", ["case", "marks"])
def test_case_and_marks_copies_are_the_page_to_version_2(kind) -> None:
    copy = fq.make_copy(kind, PAGE, "page")
    assert copy != PAGE
    normalizer = fq.Normalizer()
    assert normalizer.tokens(copy) == normalizer.tokens(PAGE)


def test_normalizer_follows_the_spec() -> None:
    tokens = fq.Normalizer().tokens
    assert tokens("ÉCOLE") == tokens("école") == ["ecole"]
    assert tokens("Straße STRASSE") == ["strasse", "strasse"]
    assert tokens("zero\u200bwidth soft\u00adhyphen") == ["zerowidth", "softhyphen"]  # dropped, not separating
    assert tokens("a\u00a0b\u3000c\u2009d“e”f,g") == list("abcdefg")
    assert tokens("中文，段落") == ["中", "文", "段", "落"]
    assert tokens("ｶﾀｶﾅ ＡＢＣ１２ｄ") == ["カ", "タ", "カ", "ナ", "abc", "d"]  # numbers separate
    assert tokens("2025-03-14 x86 ①² ١٢٣ ๑๒") == ["x"]
    assert tokens("ภาษาไทย ที่นี่") == ["ภ", "า", "ษ", "า", "ไ", "ท", "ย", "ท", "น"]  # marks dropped
    assert tokens("العربيــة مُشَكَّلة") == ["العربية", "مشكلة"]


def test_designs_parse_and_refuse_nonsense() -> None:
    design = fq.parse_design("tok3+2*chr5/run")
    assert design.parts == (fq.Part("tok", 3, 1), fq.Part("chr", 5, 2)) and design.runs and not design.unique
    assert str(design) == "token 3 + 2x char 5, runs once"
    assert fq.parse_design("chr4/run/s2").sample == 2
    assert (design.numbers, design.cap) == ("separate", 0)
    assert fq.parse_design("tok3/num").numbers == "tokens" and fq.parse_design("tok3/nonum").numbers == "nonum"
    assert str(fq.parse_design("chr5/run/nonum/cap4")) == (
        "char 5, runs once, numbers as tokens but no number tokens, at most 4 votes")
    assert str(fq.parse_design("chr5/pow1.5")) == "char 5, count^1.5 votes"
    for bad in ("word3", "tok3/maybe", "chr", "chr4/s0", "chr4/cap0", "chr4/pow", "chr4/pow-1"):
        with pytest.raises(ValueError, match="design"):
            fq.parse_design(bad)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300))
@settings(max_examples=50, deadline=None)
def test_vote_parts_of_one_group_is_the_package_vote(hashes) -> None:
    assert fq.vote_parts([(np.array(hashes, np.uint64), 1)]) == hashing.vote(hashes)


def test_weights_vote_as_repeated_hashes() -> None:
    rng = np.random.default_rng(1)
    a, b = (rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1) for n in (50, 70))
    assert fq.vote_parts([(a, 3), (b, 2)]) == hashing.vote(np.concatenate([a, a, a, b, b]))


def test_a_power_of_the_count_votes_as_that_many_repeats() -> None:
    """/pow2: a word twice votes 4 times, once once."""
    fp = fq.Fingerprinter([fq.parse_design("tok1/pow2"), fq.parse_design("tok1")])
    squared = fp("apple pear apple fig")
    assert squared["tok1/pow2"] == fp("apple apple apple apple pear fig")["tok1"]
    assert squared["tok1/pow2"] != squared["tok1"]


@given(st.lists(st.integers(0, 2**64 - 1), max_size=200), st.integers(1, 5))
@settings(max_examples=50, deadline=None)
def test_a_weight_a_hash_votes_as_one_weight_for_all(hashes, weight) -> None:
    """The vote with a weight per hash (as /powA's) equals the vote with that
    weight for the group, ties included."""
    h = np.array(hashes, np.uint64)
    assert fq.vote_parts([(h, np.full(len(h), float(weight)))]) == fq.vote_parts([(h, weight)])


def test_fingerprinter_features_are_the_design() -> None:
    text = "one two three four five"
    fp = fq.Fingerprinter([fq.parse_design("tok3"), fq.parse_design("chr5"), fq.parse_design("tok3+2*chr5")])
    fp(text)
    joined = " ".join(text.split())
    assert fp.features == {"tok3": 3, "chr5": len(joined) - 4, "tok3+2*chr5": 3 + 2 * (len(joined) - 4)}
    # Fewer tokens than the size: one feature of all of them; an empty text: none.
    fp = fq.Fingerprinter([fq.parse_design("tok3")])
    fp("two words")
    fp("")
    assert fp.features == {"tok3": 1}


def test_runs_vote_once() -> None:
    fp = fq.Fingerprinter([fq.parse_design("chr5/run")])
    assert fp("x aaaaaaaaaaaaa") == fp("x aaaaa")  # the run of aaaaa votes once


def test_numbers_by_design() -> None:
    """Numbers separate (the spec), are tokens (/num), or are tokens whose
    digit-only tokens are left out (/nonum)."""
    names = ("tok1", "tok1/num", "tok1/nonum")
    fp = fq.Fingerprinter([fq.parse_design(n) for n in names])
    got = fp("abc 12 x86")
    for name, words in zip(names, ("abc x", "abc 12 x86", "abc x86")):
        assert got[name] == fq.Fingerprinter([fq.parse_design("tok1/num")])(words)["tok1/num"], name


def test_capped_keeps_the_first_occurrences_of_each_value() -> None:
    h = np.array([5, 1, 5, 5, 2, 1, 5], np.uint64)
    assert fq._capped(h, 2).tolist() == [5, 1, 5, 2, 1]
    assert fq._capped(h, 1).tolist() == [5, 1, 2]
    assert fq._capped(np.empty(0, np.uint64), 3).size == 0
    fp = fq.Fingerprinter([fq.parse_design("chr5/cap1"), fq.parse_design("chr5/set")])
    got = fp("abcde abcde abcde fghij")
    assert got["chr5/cap1"] == got["chr5/set"]


def test_near_doc_pairs_are_brute_force() -> None:
    rng = random.Random(7)
    centres = [rng.getrandbits(64) for _ in range(30)]
    fps = []
    for _ in range(400):  # clustered, with exact repeats
        v = rng.choice(centres)
        for _ in range(rng.choice([0, 0, 1, 2, 3, 4, 6])):
            v ^= 1 << rng.randrange(64)
        fps.append(v)
    expected = [(i, j) for i in range(len(fps)) for j in range(i + 1, len(fps)) if (fps[i] ^ fps[j]).bit_count() <= 3]
    assert expected and fq.near_doc_pairs(np.array(fps, np.uint64), 3).tolist() == [list(p) for p in expected]


def test_jaccard_of_5_grams() -> None:
    a, b = fq.gram_set("abcdefgh"), fq.gram_set("ABCDEFGX")  # case-folded
    assert fq.jaccard(a, b) == pytest.approx(3 / 5)
    assert fq.jaccard(fq.gram_set("abcdef"), fq.gram_set("uvwxyz")) == 0


@pytest.mark.skipif(not hasattr(hashing, "tokenize_v2"), reason="the package has no version 2 tokens yet")
def test_stand_in_tokens_are_the_packages_version_2_tokens() -> None:
    """The designs the benchmark compares rest on the stand-in normalisation: it must
    give the package's version 2 tokens on every script the corpus has."""
    normalizer = fq.Normalizer()
    for kind in (None, *fq.COPIES):
        text = PAGE if kind is None else fq.make_copy(kind, PAGE, "page")
        assert normalizer.tokens(text) == hashing.tokenize_v2(text)


def test_numbers_of_their_own_are_tokens_apart_from_letters() -> None:
    normalizer = fq.Normalizer(fq.number_char)
    assert normalizer.tokens("Model X200 costs 12.99 EUR, ²3") == ["model", "x", "200", "costs", "12", "99", "eur", "23"]


def test_features_with_a_number_vote_at_the_number_weight() -> None:
    """/numsW: a feature with a number in it votes W x its part's weight (0: not at
    all, as if the number were not there for token 1-shingles)."""
    fp = fq.Fingerprinter([fq.parse_design(n) for n in ("tok1/nums0", "tok1/nums0.5", "tok1/nums1", "chr5/nums0")])
    got = fp("abc 12 x86")
    plain = fq.Fingerprinter([fq.parse_design("tok1/num")])
    assert got["tok1/nums0"] == plain("abc x")["tok1/num"]
    assert got["tok1/nums1"] == plain("abc 12 x 86")["tok1/num"]
    h = fq.TokenHashes()(["abc", "12", "x", "86"])
    assert got["tok1/nums0.5"] == fq.vote_parts([(fq.gram_hashes(h, 1, 1), np.array([1, 0.5, 1, 0.5]))])
    chr5 = fq.Fingerprinter([fq.parse_design(n) for n in ("chr5/nums1", "chr5/nums0")])
    a, b = chr5("abcdef 12 ghijk"), chr5("abcdef 98 ghijk")  # grams with a digit do not vote at 0
    assert a["chr5/nums0"] == b["chr5/nums0"] and a["chr5/nums1"] != b["chr5/nums1"]
    assert str(fq.parse_design("tok3+2*chr5/run/nums0.25/pow0.5")) == (
        "token 3 + 2x char 5, runs once, numbers tokens of their own at 0.25x, count^0.5 votes")


def test_a_zero_power_votes_each_distinct_feature_once() -> None:
    fp = fq.Fingerprinter([fq.parse_design("tok1+2*chr5/pow0"), fq.parse_design("tok1+2*chr5/set")])
    got = fp("abcde abcde abcde fghij abcde")
    assert got["tok1+2*chr5/pow0"] == got["tok1+2*chr5/set"]


def test_stamp_pair_differs_only_in_the_time() -> None:
    for seed in ("a", "b", "c", "d"):
        original, copy = fq.stamp_pair(PAGE, seed)
        assert original != copy and fq.make_original("stamp", PAGE, seed) == original
        assert fq.make_copy("stamp", PAGE, seed) == copy
        diff = [(x, y) for x, y in zip(original.splitlines(), copy.splitlines()) if x != y]
        assert len(diff) == 1 and all(line.startswith("Last updated ") for line in diff[0])
        lines = original.split("\n")
        top = lines[0].startswith("Last updated ")
        assert "\n".join(lines[1:] if top else lines[:-1]) == PAGE


def test_numbers_changed_changes_every_number_and_nothing_else() -> None:
    text = "Item 00123 costs 12.99 EUR, 7 left; x86 page 1 of 40"
    copy = fq.make_copy_of(fq.NUMBERS_COPY, text, "p")
    assert copy == fq.make_copy_of(fq.NUMBERS_COPY, text, "p")
    assert re.sub(r"[0-9]", "#", copy) == re.sub(r"[0-9]", "#", text)  # as many digits, in place
    assert all(a != b for a, b in zip(re.findall("[0-9]+", text), re.findall("[0-9]+", copy)))
    assert fq.number_share(text) == pytest.approx(7 / 14)
    assert fq.number_share("") == 0


def test_a_lines_numbers_are_one_feature() -> None:
    """/lnumW: the numbers of each line with any are one more feature voting W times."""
    text = "Item 12 costs 3.50\nno numbers here\nPage \uff11 of 4"
    assert fq.line_number_hashes(text).tolist() == [
        xxhash.xxh3_64_intdigest(b"12 3 50", seed=3), xxhash.xxh3_64_intdigest(b"1 4", seed=3)]
    fp = fq.Fingerprinter([fq.parse_design("tok1/lnum2"), fq.parse_design("tok1")])
    got = fp(text)
    tokens = fq.TokenHashes()(fq.Normalizer().tokens(text))
    assert got["tok1/lnum2"] == fq.vote_parts([(fq.gram_hashes(tokens, 1, 1), 1), (fq.line_number_hashes(text), 2)])
    assert fp("Item 12 costs 3.50")["tok1/lnum2"] != fp("Item 13 costs 3.50")["tok1/lnum2"]


def test_numbers_weigh_by_their_share_of_the_page() -> None:
    """/nshW: features with a number vote 0 below NUMBER_RAMP[0] of number tokens,
    W x at NUMBER_RAMP[1] and above."""
    lo, hi = fq.NUMBER_RAMP
    fp = fq.Fingerprinter([fq.parse_design(n) for n in ("tok1/nsh2", "tok1/nums0", "tok1/nums2", "tok1/nums1")])
    prose = "word " * 99 + "7"  # 1 % numbers
    assert fp(prose)["tok1/nsh2"] == fp(prose)["tok1/nums0"]
    table = "word 7 " * 50  # 50 % numbers
    assert fp(table)["tok1/nsh2"] == fp(table)["tok1/nums2"]
    middle = "a b c d e f g h i j k l m n 12 34 56"  # 3 / 17 numbers: weight 2 x (3/17 - lo) / (hi - lo)
    h = fq.gram_hashes(fq.TokenHashes()(fq.Normalizer(fq.number_char).tokens(middle)), 1, 1)
    w = 2 * (3 / 17 - lo) / (hi - lo)
    assert fp(middle)["tok1/nsh2"] == fq.vote_parts([(h, np.array([1.0] * 14 + [w] * 3))])


def test_the_bench_counts_pairs_by_family_and_keeps_generated_pages_out_of_recall(capsys) -> None:
    """bench_fingerprint_quality on a tiny corpus: different pairs by family kind (one
    family, else "none"), the numbers table, and recall pages without the catalogue."""
    import bench_fingerprint_quality as bench
    import fingerprint_corpus as fc

    words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta"]
    catalogue = list(fc.catalogue_pages(words, 6))
    prose = [fc.Document("en", f"man:{i}", " ".join(random.Random(i).choice(words) for _ in range(300)))
             for i in range(3)]
    docs = [*catalogue, *prose, fc.Document("en", "relnotes:x", prose[0].text, "release-notes:x")]
    assert bench.family_of_pair(docs, 0, 1) == "catalogue"  # two price lists
    assert bench.family_of_pair(docs, 0, 6) == "none"  # a price list and a results table
    assert bench.family_of_pair(docs, len(docs) - 1, len(docs) - 2) == "none"
    pages = bench.recall_pages(docs, 10)
    assert not any(d.family_kind == "catalogue" for ds in pages.values() for d in ds)
    designs = [fq.parse_design("tok3+2*chr5/run"), fq.parse_design("tok3+2*chr5/run/nsh2")]
    bench.SHIPPED_ROW = False
    apart = bench.numbers_table(docs, designs, 5)
    assert apart["tok3+2*chr5/run"] == 0  # version 2: numbers do not count
    assert apart["tok3+2*chr5/run/nsh2"] > 0.5
    different = bench.false_pair_table(docs, designs, None)
    assert set(different) == {"version 1", "baseline", *(d.name for d in designs)}
    bench.summary(designs, {}, apart, different)
    out = capsys.readouterr().out
    assert "by family" in out and "numbers changed" in out and "summary" in out


def test_stand_in_numbers_and_words_are_version_3s() -> None:
    """The stand-in of version 3 (numbers tokens of their own, their share among words)
    gives the package's version 3 tokens, words and numbers on every script the corpus has."""
    from pysimhash_sql import text_v3

    numbers, words = fq.Normalizer(fq.number_char), fq.Normalizer(lambda c: fq.number_char(c, spaced=False))
    for kind in (None, *fq.COPIES):
        text = PAGE if kind is None else fq.make_copy(kind, PAGE, "page")
        tokens = numbers.tokens(text)
        assert tokens == hashing.tokenize_v3(text)
        _, word_count, number_count = text_v3.tokenized(text)
        assert (fq.word_count(words.tokens(text)), sum(t[0].isdigit() for t in tokens)) == (word_count, number_count)


def test_the_ramp_of_the_number_share_by_design() -> None:
    """/rampLO-HI moves the ramp of /nshW; /wshare takes the share among words."""
    design = fq.parse_design("tok1/nsh2/wshare/ramp15-25")
    assert (design.ramp, design.word_share, design.number_ramp) == ((0.15, 0.25), True, True)
    assert str(design) == "token 1, numbers tokens of their own at 2x their share's ramp 15%-25% of words"
    for bad in ("tok1/ramp15-25", "tok1/nsh2/ramp25-15", "tok1/nsh2/ramp15"):
        with pytest.raises(ValueError, match="design"):
            fq.parse_design(bad)
    fp = fq.Fingerprinter([fq.parse_design(n) for n in ("tok1/nsh2", "tok1/nsh2/wshare", "tok1/nums0", "tok1/nums2")])
    text = "中文字的句子 7 more"  # numbers: 1 of 9 tokens (11 %), 1 of 4 words (25 %)
    got = fp(text)
    assert got["tok1/nsh2"] == got["tok1/nums0"] != got["tok1/nsh2/wshare"] == got["tok1/nums2"]


def test_the_paired_table_is_version_3s_recall_less_version_2s_on_the_same_copies(capsys, monkeypatch) -> None:
    """recall_tables with the package's rows and no baseline: the difference of the
    two versions a cell is their recalls' difference, its interval around it."""
    import bench_fingerprint_quality as bench
    import fingerprint_corpus as fc

    monkeypatch.setattr(bench, "SHIPPED_ROW", True)
    monkeypatch.setattr(bench, "BASELINE_ROW", False)
    words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta", "2024", "17"]
    docs = [fc.Document("en", f"man:{i}", " ".join(random.Random(i).choice(words) for _ in range(500)))
            for i in range(6)]
    recall = bench.recall_tables(docs, [], 10, 3, ["span"])
    assert {row for row, *_ in recall} == {"version 1", bench.SHIPPED_V2, bench.SHIPPED_V3}
    out = capsys.readouterr().out
    table = out[out.index(f"{bench.SHIPPED_V3} - {bench.SHIPPED_V2}"):]
    cell = re.search(r"\| >= 2,000 \| ([+-]\d\.\d{3}) \[([+-]\d\.\d{3}), ([+-]\d\.\d{3})\]", table)
    assert cell is not None, table
    diff, low, high = map(float, cell.groups())
    expected = recall[bench.SHIPPED_V3, "span", "en", ">= 2,000"] - recall[bench.SHIPPED_V2, "span", "en", ">= 2,000"]
    assert diff == pytest.approx(expected, abs=0.0005)
    assert low <= diff <= high
