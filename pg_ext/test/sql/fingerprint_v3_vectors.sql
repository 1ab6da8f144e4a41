-- the shared test vectors of the text fingerprint version 3
-- (test/data/text_v3_vectors.jsonl; pytest checks Python against the same
-- file): every vector's tokens and fingerprint, listed where they differ
CREATE TEMP TABLE vector_lines (line text);
\copy vector_lines FROM 'test/data/text_v3_vectors.jsonl' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')
CREATE TEMP TABLE vectors AS
SELECT v->>'name' AS name, v->>'text' AS document,
       ARRAY(SELECT jsonb_array_elements_text(v->'tokens')) AS tokens,
       (v->>'simhash_v3')::simhash64 AS expected
FROM (SELECT line::jsonb AS v FROM vector_lines) x;
SELECT count(*) > 50 AS vectors_loaded, count(DISTINCT name) = count(*) AS names_unique FROM vectors;
SELECT name, simhash_v3(document) AS got, expected FROM vectors WHERE simhash_v3(document) <> expected;
SELECT name, simhash_v3_tokens(document) AS got, tokens FROM vectors WHERE simhash_v3_tokens(document) <> tokens;
-- features with their votes compose the fingerprint
SELECT name FROM vectors
WHERE simhash_v3(document) <> simhash(ARRAY(SELECT simhash_feature_hash(feature) FROM simhash_v3_features(document)),
                                      ARRAY(SELECT votes::float8 FROM simhash_v3_features(document)));
