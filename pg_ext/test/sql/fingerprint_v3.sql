-- the text fingerprint version 3 (docs/fingerprint-spec.md §8)
-- tokens: version 2's, and the digits 0-9 the normalisation makes are numbers of their own
SELECT simhash_v3_tokens('The quick, BROWN fox!  2nd-try_x');
SELECT simhash_v3_tokens('Retrieved 2025-03-14 09:26:53 UTC, x86_64 ١٢٣ ๑๒ ² X200 12.99 ½ ①');
SELECT simhash_v3_tokens('価格は1200円、第3版'), simhash_v3_tokens(''), simhash_v3_tokens('  ,.;!  ');
-- features that vote, with their votes: without digits each kind's weight x 16;
-- with them weight x 2 x the ramp (0 where numbers are at most 15 % of the words)
SELECT * FROM simhash_v3_features('The quick, brown fox!');
SELECT * FROM simhash_v3_features('Order 1234 shipped');
SELECT * FROM simhash_v3_features('Updated 2025 for the whole page of many words here');
-- the worked example (§8): every number changed moves the fingerprint
SELECT simhash_v3('Order 1234 shipped on 2024-05-01 for 99.99 USD') = x'41846AA0395E5953'::bigint::simhash64 AS order_v3,
       hamming_distance(simhash_v3('Order 1234 shipped on 2024-05-01 for 99.99 USD'),
                        simhash_v3('Order 9876 shipped on 2025-11-30 for 15.00 USD')) AS numbers_changed,
       hamming_distance(simhash_v3('Model X200'), simhash_v3('Model X300')) AS model;
-- no digits, no feature more than 32 times: version 2's fingerprint
SELECT simhash_v3('ÉCOLE — « près d’ici »') = simhash_v2('ÉCOLE — « près d’ici »') AS as_v2,
       simhash_v3('近似重复') = simhash_v2('近似重复') AS as_v2_chinese;
-- a feature votes at its first 32 occurrences only
SELECT count(*) AS votes_of_a_repeated_line
FROM simhash_v3_features(repeat('see the link here, ', 100) || ' then content') WHERE feature = 'see the link';
SELECT simhash_v3(''), simhash_v3('...!'), simhash_v3('12');
-- a long text (buffer compaction, a growing table of counts) matches the composition
SELECT simhash_v3(t) = simhash(ARRAY(SELECT simhash_feature_hash(feature) FROM simhash_v3_features(t)),
                               ARRAY(SELECT votes::float8 FROM simhash_v3_features(t))) AS long_ok
FROM (SELECT string_agg(md5(g::text) || ' 漢字かな ÀÉ ' || g, ' ') AS t FROM generate_series(1, 5000) g) x;
