-- bigint <-> simhash64 reinterpret the two's-complement bits
SELECT (-1)::bigint::simhash64, (-9223372036854775808)::bigint::simhash64,
       9223372036854775807::bigint::simhash64, 0::bigint::simhash64;
SELECT '18446744073709551615'::simhash64::bigint, '9223372036854775808'::simhash64::bigint;
SELECT count(*) AS lossless
FROM (VALUES (0::bigint), (1), (-1), (9223372036854775807), (-9223372036854775808), (123456789)) t(b)
WHERE b::simhash64::bigint = b;

-- existing bigint columns convert in place, and back, without changing a bit
CREATE TEMP TABLE legacy (id int, h bigint);
INSERT INTO legacy VALUES (1, -1), (2, 0), (3, 42), (4, -9223372036854775808);
ALTER TABLE legacy ALTER h TYPE simhash64 USING h::simhash64;
SELECT id, h, simhash64_to_hex(h) FROM legacy ORDER BY id;
ALTER TABLE legacy ALTER h TYPE bigint USING h::bigint;
SELECT id, h FROM legacy ORDER BY id;

-- bigint is assignable to a simhash64 column; simhash64 to bigint needs a cast
CREATE TEMP TABLE assign (h simhash64);
INSERT INTO assign VALUES (5::bigint);
SELECT h FROM assign;

-- bit(64): most significant bit first, like bigint::bit(64)
SELECT '1'::simhash64::bit(64);
SELECT '0x8000000000000000'::simhash64::bit(64);
SELECT (-2)::bigint::bit(64) = '18446744073709551614'::simhash64::bit(64) AS same_as_bigint;
SELECT B'1111111111111111111111111111111111111111111111111111111111111110'::simhash64;
SELECT v::bit(64)::simhash64 = v AS round_trip
FROM (VALUES ('0'::simhash64), ('1'), ('18446744073709551615'), ('0x0123456789abcdef')) t(v);
SELECT B'101'::simhash64;
SELECT B'10000000000000000000000000000000000000000000000000000000000000000'::simhash64;

-- bytea: exactly 8 bytes, big-endian
SELECT '1'::simhash64::bytea, '0x0123456789abcdef'::simhash64::bytea;
SELECT '\x0123456789abcdef'::bytea::simhash64 = '0x0123456789abcdef'::simhash64 AS big_endian;
SELECT '\xffffffffffffffff'::bytea::simhash64;
SELECT '\x01'::bytea::simhash64;
SELECT '\x010203040506070809'::bytea::simhash64;
SELECT ''::bytea::simhash64;

-- hex helper: 0x and 16 lowercase digits, and input accepts it back
SELECT simhash64_to_hex('0'), simhash64_to_hex('255'), simhash64_to_hex('18446744073709551615');
SELECT simhash64_to_hex('0x00ABCDEF')::simhash64 = '0xabcdef'::simhash64 AS hex_round_trip;
