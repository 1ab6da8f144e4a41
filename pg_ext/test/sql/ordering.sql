-- unsigned ordering: values with the top bit set sort after all others
CREATE TEMP TABLE o (v simhash64);
INSERT INTO o VALUES ('18446744073709551615'), ('0'), ('9223372036854775808'),
                     ('9223372036854775807'), ('1'), ('9223372036854775808'), (NULL);
SELECT v FROM o ORDER BY v;
SELECT v FROM o ORDER BY v DESC NULLS LAST;
SELECT DISTINCT v FROM o ORDER BY v;
SELECT v, count(*) FROM o GROUP BY v ORDER BY v;
SELECT min(v), max(v) FROM o;
SELECT '1'::simhash64 < '18446744073709551615', '18446744073709551615'::simhash64 > '9223372036854775807',
       '5'::simhash64 = '0x5', '5'::simhash64 <> '6', '5'::simhash64 <= '5', '5'::simhash64 >= '6';

-- btree index: UNIQUE, range scans
CREATE TEMP TABLE u (v simhash64 PRIMARY KEY);
INSERT INTO u SELECT g::bigint::simhash64 FROM generate_series(-500, 500) g;
INSERT INTO u VALUES ('0');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT v FROM u WHERE v >= '18446744073709551610';
SELECT v FROM u WHERE v >= '18446744073709551610' ORDER BY v;
SELECT count(*) FROM u WHERE v < '10';
RESET enable_seqscan;

-- hash index and hash partitioning
CREATE TEMP TABLE h (v simhash64);
CREATE INDEX ON h USING hash (v);
INSERT INTO h SELECT g::bigint::simhash64 FROM generate_series(1, 1000) g;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM h WHERE v = '77';
SELECT * FROM h WHERE v = '77';
RESET enable_seqscan;
RESET enable_bitmapscan;
CREATE TEMP TABLE hp (v simhash64) PARTITION BY HASH (v);
CREATE TEMP TABLE hp0 PARTITION OF hp FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TEMP TABLE hp1 PARTITION OF hp FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO hp SELECT g::bigint::simhash64 FROM generate_series(1, 100) g;
SELECT (SELECT count(*) FROM hp0) + (SELECT count(*) FROM hp1) AS total,
       (SELECT count(*) FROM hp0) > 0 AND (SELECT count(*) FROM hp1) > 0 AS both_used;

-- joins: hash and merge joins both agree with a nested loop
CREATE TEMP TABLE a AS SELECT (g % 50)::bigint::simhash64 AS v FROM generate_series(1, 200) g;
CREATE TEMP TABLE b AS SELECT (g % 70)::bigint::simhash64 AS v FROM generate_series(1, 140) g;
ANALYZE a; ANALYZE b;
SET enable_mergejoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM a JOIN b USING (v);
SELECT count(*) FROM a JOIN b USING (v);
RESET enable_mergejoin; SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM a JOIN b USING (v);
SELECT count(*) FROM a JOIN b USING (v);
RESET enable_hashjoin; RESET enable_nestloop;
