-- the shared test vectors of the text fingerprint version 2
-- (test/data/text_v2_vectors.jsonl; pytest checks Python against the same
-- file): every vector's tokens and fingerprint, listed where they differ
CREATE TEMP TABLE vector_lines (line text);
\copy vector_lines FROM 'test/data/text_v2_vectors.jsonl' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')
CREATE TEMP TABLE vectors AS
SELECT v->>'name' AS name, v->>'text' AS document,
       ARRAY(SELECT jsonb_array_elements_text(v->'tokens')) AS tokens,
       (v->>'simhash_v2')::simhash64 AS expected
FROM (SELECT line::jsonb AS v FROM vector_lines) x;
SELECT count(*) > 50 AS vectors_loaded, count(DISTINCT name) = count(*) AS names_unique FROM vectors;
SELECT name, simhash_v2(document) AS got, expected FROM vectors WHERE simhash_v2(document) <> expected;
SELECT name, simhash_v2_tokens(document) AS got, tokens FROM vectors WHERE simhash_v2_tokens(document) <> tokens;
-- features compose the fingerprint
SELECT name FROM vectors
WHERE simhash_v2(document) <> simhash(ARRAY(SELECT simhash_feature_hash(f) FROM unnest(simhash_v2_features(document)) f));
