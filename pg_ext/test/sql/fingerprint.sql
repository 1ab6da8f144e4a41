-- tokens: runs of ASCII letters/digits and bytes >= 0x80; ASCII lowercased only
SELECT simhash_tokens('The quick, BROWN fox!  2nd-try_x');
SELECT simhash_tokens('Ärger über ÉCOLE naïve café—résumé');
SELECT simhash_tokens(''), simhash_tokens('  ,.;!  '), simhash_tokens(E'a\tb\nc\x01d');
-- shingles: runs of shingle_size tokens joined by one space
SELECT simhash_shingles('The quick, brown fox!', 2);
SELECT simhash_shingles('The quick, brown fox!');
SELECT simhash_shingles('one two', 3), simhash_shingles('one', 1), simhash_shingles('', 3);
SELECT simhash_shingles('a b', 0);
SELECT simhash_shingles('a b c', 2147483647);
-- feature hash: XXH3-64, seed 0 (XXH3 of the empty input is 0x2D06800538D394C2)
SELECT simhash_feature_hash('')::simhash64 = '0x2D06800538D394C2'::simhash64 AS xxh3_empty;
SELECT simhash_feature_hash('the quick');
-- simhash(text) is the vote over the feature hashes of its shingles
SELECT simhash('The quick, brown fox!', 2) =
       simhash(ARRAY(SELECT simhash_feature_hash(s) FROM unnest(simhash_shingles('The quick, brown fox!', 2)) s))
       AS spec_composition;
SELECT simhash('The quick brown fox jumps over the lazy dog') =
       simhash(ARRAY(SELECT simhash_feature_hash(s)
                     FROM unnest(simhash_shingles('The quick brown fox jumps over the lazy dog')) s))
       AS default_shingle_is_3;
SELECT simhash('hello') = simhash_feature_hash('hello')::simhash64 AS single_feature;
SELECT simhash(''), simhash('...!'), simhash('a b', 5) = simhash_feature_hash('a b')::simhash64;
SELECT simhash('Hello World') = simhash('hello,   WORLD!!') AS normalized;
SELECT simhash('x', 0);
SELECT simhash('x', -3);
-- near-duplicates are near
SELECT simhash('The quick brown fox jumps over the lazy dog near the river bank today')
   <~> simhash('The quick brown fox jumped over the lazy dog near the river bank today') < 32
   AS close;
-- a long text (many vote flushes) matches the composition
SELECT simhash(t) = simhash(ARRAY(SELECT simhash_feature_hash(s) FROM unnest(simhash_shingles(t)) s)) AS long_ok
FROM (SELECT string_agg(md5(g::text), ' ') AS t FROM generate_series(1, 5000) g) x;
-- hostile shingle sizes: a window sliding over long tokens, a window wider
-- than the text, and features that could never fit in an array (quadratic in
-- the text), refused before any is built
SELECT simhash_shingles('aaaa b cccccc dd eeeee', 2), simhash_shingles('aaaa b cccccc', 2147483647);
SELECT simhash('aaaa b cccccc dd eeeee', 4) =
       simhash(ARRAY(SELECT simhash_feature_hash(s) FROM unnest(simhash_shingles('aaaa b cccccc dd eeeee', 4)) s))
       AS sliding_ok;
SELECT simhash_shingles(repeat('a ', 100000), 50000);
-- hashing quadratically many bytes stays cancellable
SET statement_timeout = '100ms';
SELECT simhash(repeat('a ', 1000000), 500000);
RESET statement_timeout;
