-- simhash(bigint[]): bitwise majority, ties and empty give 0
SELECT simhash(ARRAY[]::bigint[]);
SELECT simhash(ARRAY[1, 1, 2]::bigint[]), simhash(ARRAY[1, 2]::bigint[]), simhash(ARRAY[3, 1, 2]::bigint[]);
SELECT simhash(ARRAY[-1, -1, 0]::bigint[]), simhash(ARRAY[-1]::bigint[]);
SELECT simhash(ARRAY[1, 2, 3]);  -- integer[] is coerced
SELECT simhash('{{1,1},{1,0}}'::bigint[]);  -- all elements of a 2-D array vote
SELECT simhash(ARRAY[1, NULL]::bigint[]);
-- more than 255 hashes (the byte lanes are flushed) still count exactly
SELECT simhash(array_agg(CASE WHEN g <= 300 THEN 1 ELSE 2 END::bigint)) FROM generate_series(1, 599) g;
SELECT simhash(array_agg(CASE WHEN g <= 300 THEN 1 ELSE 2 END::bigint)) FROM generate_series(1, 600) g;
SELECT simhash(array_agg(CASE WHEN g <= 300 THEN 1 ELSE 2 END::bigint)) FROM generate_series(1, 601) g;

-- weighted
SELECT simhash(ARRAY[1, 2]::bigint[], ARRAY[2.0, 1.0]), simhash(ARRAY[1, 2]::bigint[], ARRAY[1.0, 1.0]);
SELECT simhash(ARRAY[1, 2, 4]::bigint[], ARRAY[-1.0, 0.5, 0.25]);
SELECT simhash(ARRAY[]::bigint[], ARRAY[]::float8[]);
SELECT simhash(ARRAY[1, 2]::bigint[], ARRAY[1.0]);
SELECT simhash(ARRAY[1]::bigint[], ARRAY[NULL]::float8[]);
SELECT simhash(ARRAY[1]::bigint[], ARRAY['NaN']::float8[]);
SELECT simhash(ARRAY[1]::bigint[], ARRAY['Infinity']::float8[]);
SELECT simhash(ARRAY[1]::bigint[], ARRAY['-Infinity']::float8[]);

-- aggregates equal the array forms, group by group
CREATE TEMP TABLE tokens (doc int, h bigint, w float8);
INSERT INTO tokens
SELECT d, hashtextextended(d::text || ':' || (g % (d + 3))::text, 0), (g % 7) + 0.5
FROM generate_series(1, 5) d, generate_series(1, 400) g;
INSERT INTO tokens VALUES (1, NULL, 1.0), (1, 5, NULL);
SELECT doc, simhash_agg(h) = simhash(array_agg(h) FILTER (WHERE h IS NOT NULL)) AS unweighted_ok,
       simhash_agg(h, w) = simhash(array_agg(h) FILTER (WHERE h IS NOT NULL AND w IS NOT NULL),
                                   array_agg(w) FILTER (WHERE h IS NOT NULL AND w IS NOT NULL)) AS weighted_ok
FROM tokens GROUP BY doc ORDER BY doc;
SELECT simhash_agg(h) FROM tokens WHERE false;
SELECT simhash_agg(h, w) FROM tokens WHERE false;
SELECT simhash_agg(h, 'NaN') FROM tokens;

-- parallel aggregation gives the same answer as serial
CREATE TABLE big_tokens AS
SELECT (g % 10) AS doc, hashtextextended(g::text, 0) AS h, (g % 5)::float8 AS w
FROM generate_series(1, 200000) g;
ANALYZE big_tokens;
CREATE TEMP TABLE serial_result AS
SELECT doc, simhash_agg(h) AS s, simhash_agg(h, w) AS sw FROM big_tokens GROUP BY doc;
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT doc, simhash_agg(h), simhash_agg(h, w) FROM big_tokens GROUP BY doc;
SELECT count(*) AS groups_equal
FROM (SELECT doc, simhash_agg(h) AS s, simhash_agg(h, w) AS sw FROM big_tokens GROUP BY doc) p
JOIN serial_result r USING (doc) WHERE p.s = r.s AND p.sw = r.sw;
RESET parallel_setup_cost; RESET parallel_tuple_cost; RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE big_tokens;
