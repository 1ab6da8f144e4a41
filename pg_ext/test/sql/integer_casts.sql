-- Integers convert to simhash64 implicitly (what drivers send as parameters):
-- smallint, integer and bigint as the same two's complement 64 bits,
-- numeric as the exact value, an integer from 0 to 2^64 - 1.
SELECT 0::simhash64, 5::simhash64, 32768::simhash64, 2147483648::simhash64,
       9223372036854775807::simhash64, 9223372036854775808::simhash64,
       13893055204574190055::simhash64, 18446744073709551615::simhash64;
SELECT (-1)::smallint::simhash64, (-1)::integer::simhash64, (-1)::bigint::simhash64,
       (-32768)::smallint::simhash64, (-2147483648)::integer::simhash64;
SELECT s::smallint::simhash64 = s::bigint::simhash64 AND s::integer::simhash64 = s::bigint::simhash64 AS same_bits
FROM (VALUES (0), (1), (-1), (32767), (-32768), (12345), (-12345)) t(s);
SELECT 18446744073709551615.000::simhash64, 1e3::simhash64, 9223372036854775807::numeric::simhash64;
SELECT n::numeric::simhash64::text = n AS exact
FROM (VALUES ('0'), ('9223372036854775807'), ('9223372036854775808'), ('9223372036854775809'),
             ('13893055204574190055'), ('18446744073709551614'), ('18446744073709551615')) t(n);

-- numeric outside the integers 0 .. 2^64 - 1: 22003, naming the value
\set VERBOSITY default
SELECT 18446744073709551616::simhash64;
SELECT (-1)::numeric::simhash64;
SELECT 1.5::simhash64;
SELECT 'NaN'::numeric::simhash64;
SELECT '-Infinity'::numeric::simhash64;
SELECT 99999999999999999999999999999999999999::simhash64;

-- the function form agrees with the cast
SELECT simhash64(5), simhash64(-1), simhash64((-1)::smallint), simhash64(5::bigint),
       simhash64(13893055204574190055);

-- the queries a driver's integer parameter makes: one candidate each
CREATE TEMP TABLE fps (id int, fp simhash64);
INSERT INTO fps VALUES (1, 5), (2, 13893055204574190055), (3, 18446744073709551615), (4, 0);
SELECT id FROM fps WHERE fp = 5;
SELECT id FROM fps WHERE fp = 13893055204574190055;
SELECT id FROM fps WHERE fp = 5::bigint OR fp = (-1)::bigint ORDER BY id;
SELECT id FROM fps WHERE fp > 5 ORDER BY id;
SELECT id, fp <~> 123 AS d1, 123 <~> fp AS d2, hamming_distance(fp, 123) AS d3,
       hamming_distance(123, 13893055204574190055) AS d4 FROM fps ORDER BY id;
SELECT id FROM fps WHERE hamming_within(fp, 13893055204574190055, 3);
SELECT id FROM fps WHERE hamming_within(13893055204574190055, fp, 3);
SELECT id FROM fps WHERE fp IN (5, 13893055204574190055) ORDER BY id;
SELECT id FROM fps WHERE fp = ANY (ARRAY[5, 0]) ORDER BY id;
SELECT id FROM fps WHERE fp = ANY (ARRAY[13893055204574190055, 0]) ORDER BY id;
SELECT id FROM fps WHERE fp <@ hamming_ball(4, 1);
SELECT id FROM fps ORDER BY fp <~> 13893055204574190055, id LIMIT 1;
SELECT id FROM fps WHERE fp = 1.5;
INSERT INTO fps VALUES (5, -1), (6, 7::bigint), (7, 9223372036854775808);
SELECT id, fp FROM fps WHERE id >= 5 ORDER BY id;

-- a parameter of any integer type keeps the index usable, in generic plans too
CREATE INDEX ON fps USING gin (fp);
CREATE INDEX ON fps (fp);
SET enable_seqscan = off;
SET plan_cache_mode = force_generic_plan;
PREPARE within_numeric(numeric) AS SELECT id FROM fps WHERE hamming_within(fp, $1, 3);
PREPARE equal_bigint(bigint) AS SELECT id FROM fps WHERE fp = $1;
PREPARE equal_smallint(smallint) AS SELECT id FROM fps WHERE fp = $1;
EXPLAIN (COSTS OFF) EXECUTE within_numeric(13893055204574190055);
EXPLAIN (COSTS OFF) EXECUTE equal_bigint(7);
EXPLAIN (COSTS OFF) EXECUTE equal_smallint(5);
EXECUTE within_numeric(13893055204574190055);
EXECUTE equal_bigint(-1);
EXECUTE equal_smallint(5);
RESET plan_cache_mode;
RESET enable_seqscan;

SELECT ARRAY[1, 2]::simhash64[], ARRAY[1, 18446744073709551615]::simhash64[];

-- no new candidates where no simhash64 is involved: types resolve as before
SELECT pg_typeof(1 + 1.5), pg_typeof(max(5)), pg_typeof(min(13893055204574190055)),
       pg_typeof(coalesce(5, 13893055204574190055)), 1 = 1.0 AS int_numeric,
       5::bigint = 5.0 AS bigint_numeric;
SELECT pg_typeof(x) FROM (SELECT 1 UNION SELECT 13893055204574190055) t(x) LIMIT 1;
-- and simhash64 still converts to nothing implicitly
SELECT fp + 1 FROM fps;
SELECT greatest(fp, 5) FROM fps;
SELECT abs(fp) FROM fps;
