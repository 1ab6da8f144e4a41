-- The GIN operator class simhash64_ops: options, query forms, plans, errors.
CREATE TABLE docs (id int PRIMARY KEY, fp simhash64, other simhash64);
INSERT INTO docs
SELECT g, hashint8extended(g, 11)::simhash64, hashint8extended(g, 12)::simhash64
FROM generate_series(1, 2000) g;
-- a cluster around document 1: 1, 2, 3 and 4 bits away
INSERT INTO docs
SELECT 10000 + d, ((SELECT fp FROM docs WHERE id = 1)::bigint # ((1::bigint << d) - 1))::simhash64, NULL
FROM generate_series(1, 4) d;
INSERT INTO docs VALUES (20000, NULL, NULL);
-- EXPLAIN (COSTS OFF) without the "Disabled: true" that PostgreSQL 18 prints on
-- nodes chosen although their enable_* setting is off: the plans are the same.
CREATE FUNCTION plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line NOT LIKE '%Disabled: true' THEN
            RETURN NEXT line;
        END IF;
    END LOOP;
END $$;

-- options: ranges, and combinations that cannot make an index
CREATE INDEX ON docs USING gin (fp simhash64_ops (blocks = 0));
CREATE INDEX ON docs USING gin (fp simhash64_ops (blocks = 17));
CREATE INDEX ON docs USING gin (fp simhash64_ops (max_distance = -1));
CREATE INDEX ON docs USING gin (fp simhash64_ops (blocks = 4, max_distance = 4));
CREATE INDEX ON docs USING gin (fp simhash64_ops (blocks = 16, max_distance = 7));
CREATE INDEX ON docs USING gin (fp simhash64_ops (radius = 3));

CREATE INDEX docs_fp ON docs USING gin (fp simhash64_ops (blocks = 5, max_distance = 2));
SELECT indexrelid::regclass, pg_get_indexdef(indexrelid) FROM pg_index
WHERE indrelid = 'docs'::regclass AND NOT indisprimary;
ANALYZE docs;

-- the function form is index-aware, either argument order, with any radius expression
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE hamming_within(fp, '0x0123456789abcdef', 2);
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE hamming_within('0x0123456789abcdef', fp, 1 + 1);
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <@ hamming_ball('0x0123456789abcdef', 2);
-- ...but not when the centre comes from the same row
SELECT plan('SELECT id FROM docs WHERE hamming_within(fp, other, 2)');
RESET enable_seqscan;

-- exact for every radius, inside and beyond max_distance (2), on the index
SET enable_seqscan = off;
SELECT k, array_agg(id ORDER BY id) AS ids
FROM generate_series(0, 5) k, docs
WHERE hamming_within(fp, (SELECT fp FROM docs WHERE id = 1), k)
GROUP BY k ORDER BY k;
SELECT id FROM docs WHERE fp <@ hamming_ball((SELECT fp FROM docs WHERE id = 10004), 1) ORDER BY id;
-- a constant radius beyond max_distance is not offered to the index at all;
-- otherwise the index is scanned whole
SELECT plan($$SELECT count(*) FROM docs WHERE hamming_within(fp, '0', 64)$$);
EXPLAIN (COSTS OFF) SELECT count(*) FROM docs WHERE fp <@ hamming_ball('0', 64);
SELECT count(*) FROM docs WHERE fp <@ hamming_ball('0', 64);
SELECT count(*) FROM docs WHERE hamming_within(fp, '0', (SELECT 64));
RESET enable_seqscan;
SELECT count(*) FROM docs WHERE hamming_within(fp, '0', 64);

-- balls with NULL fields contain nothing; radii outside 0..64 are errors
SELECT count(*) FROM docs WHERE fp <@ hamming_ball(NULL, 3);
SELECT count(*) FROM docs WHERE fp <@ ROW('0', NULL)::simhash64_ball;
SELECT '0'::simhash64 <@ hamming_ball('7', 3), '0'::simhash64 <@ '(7,2)'::simhash64_ball;
SET enable_seqscan = off;
SELECT count(*) FROM docs WHERE fp <@ hamming_ball('0', 65);
SELECT count(*) FROM docs WHERE hamming_within(fp, '0', -1);
RESET enable_seqscan;
-- a ball type altered by its owner is refused, not misread
BEGIN;
ALTER TYPE simhash64_ball ALTER ATTRIBUTE radius TYPE bigint;
SELECT '0'::simhash64 <@ hamming_ball('7', 3);
ROLLBACK;

-- the n nearest rows, exactly
SELECT id, fp <~> (SELECT fp FROM docs WHERE id = 1) AS distance
FROM hamming_nearest(NULL::docs, 'fp', (SELECT fp FROM docs WHERE id = 1), 4);
SELECT count(*) FROM hamming_nearest(NULL::docs, 'fp', '0', 7, 1);
SELECT count(*) FROM hamming_nearest(NULL::docs, 'fp', '0', 0);
SELECT * FROM hamming_nearest(NULL::docs, 'fp', '0', -1);
SELECT * FROM hamming_nearest(NULL::docs, 'fp', '0', 1, 65);
SELECT * FROM hamming_nearest(NULL::docs, 'no_such_column', '0', 1);
CREATE TABLE "odd %s Name" ("Odd fp" simhash64);
INSERT INTO "odd %s Name" VALUES ('1'), ('3'), (NULL), ('0xffff');
SELECT * FROM hamming_nearest(NULL::"odd %s Name", 'Odd fp', '0', 3);
DROP TABLE "odd %s Name";

-- the planner picks the index by itself for a near-duplicate query
CREATE TABLE big AS
SELECT g AS id, hashint8extended(g, 5)::simhash64 AS fp FROM generate_series(1, 100000) g;
CREATE INDEX ON big USING gin (fp);
ANALYZE big;
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE hamming_within(fp, '0x0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE fp <@ hamming_ball('0x0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE hamming_within(fp, '0x0123456789abcdef', 40);
DROP TABLE big;
DROP TABLE docs;
