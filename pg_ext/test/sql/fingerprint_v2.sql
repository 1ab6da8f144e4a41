-- the text fingerprint version 2 (docs/fingerprint-spec.md §6)
-- tokens: Unicode letters, NFKD and case folded, marks dropped; numbers separate
SELECT simhash_v2_tokens('The quick, BROWN fox!  2nd-try_x');
SELECT simhash_v2_tokens('Retrieved 2025-03-14 09:26:53 UTC, x86_64 ١٢٣ ๑๒ ²');
SELECT simhash_v2_tokens('ÉCOLE école Ärger STRASSE Straße ﬁne Ｆｕｌｌ①');
SELECT simhash_v2_tokens(E'a\u00a0b\u3000c d\u200be soft\u00adhyphen “quoted”');
-- scripts written without spaces: a token per character; Hangul decomposed
SELECT simhash_v2_tokens('日本語のテキスト，中文。ภาษาไทย');
SELECT simhash_v2_tokens('한국어 텍스트');
SELECT simhash_v2_tokens(''), simhash_v2_tokens('  ,.;!  “”—'), simhash_v2_tokens(E'a\tb\nc\x01d');
-- features: shingles of 3 tokens, then 5-grams of the characters of the tokens
-- joined by single spaces, each of those twice (its weight); fewer tokens
-- (characters) give one feature of them all
SELECT simhash_v2_features('The quick, brown fox!');
SELECT simhash_v2_features('one two'), simhash_v2_features('一二三四');
-- simhash_v2(text) is the vote over the feature hashes of its features
SELECT simhash_v2('The quick brown fox jumps over the lazy dog') =
       simhash(ARRAY(SELECT simhash_feature_hash(f)
                     FROM unnest(simhash_v2_features('The quick brown fox jumps over the lazy dog')) f))
       AS spec_composition;
-- (a text of under 5 characters: its one feature votes in each part, twice)
SELECT simhash_v2(''), simhash_v2('...!'), simhash_v2('abc') = simhash_feature_hash('abc')::simhash64;
-- a run of equal features votes once
SELECT simhash_v2_features('x aaaaaaaaaa');
-- typography, case and accents never count
SELECT simhash_v2('ÉCOLE') = simhash_v2('école') AS case_and_accents,
       simhash_v2(E'a\u00a0"quoted"\u00a0text here') = simhash_v2('a “quoted” text here') AS spaces_and_quotes,
       simhash_v2('ＦＵＬＬ　ｗｉｄｔｈ') = simhash_v2('full width') AS full_width;
-- version 1 is unchanged
SELECT simhash('ÉCOLE') = simhash('école') AS v1_keeps_case;
-- a long text (buffer compaction, many vote flushes) matches the composition
SELECT simhash_v2(t) = simhash(ARRAY(SELECT simhash_feature_hash(f) FROM unnest(simhash_v2_features(t)) f)) AS long_ok
FROM (SELECT string_agg(md5(g::text) || ' 漢字かな ÀÉ', ' ') AS t FROM generate_series(1, 5000) g) x;
