SELECT hamming_distance('0', '0'), hamming_distance('0', '18446744073709551615'),
       hamming_distance('0xff', '0x0f'), hamming_distance('1', '0x8000000000000001');
SELECT '0'::simhash64 <~> '7', '7'::simhash64 <~> '0';
SELECT hamming_within('0', '7', 3), hamming_within('0', '7', 2), hamming_within('0', '18446744073709551615', 64),
       hamming_within('5', '5', 0);
SELECT hamming_within('0', '0', -1);
SELECT hamming_within('0', '0', 65);
SELECT hamming_distance(NULL, '1'), hamming_within('1', '1', NULL);
-- agrees with the bigint bit_count idiom users run today
SELECT count(*) AS agree
FROM generate_series(1, 200) g,
     LATERAL (SELECT (g * 2654435761)::bigint AS x, (g * 40503 - 7)::bigint AS y) v
WHERE hamming_distance(x::simhash64, y::simhash64) = bit_count((x # y)::bit(64));
