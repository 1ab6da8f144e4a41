-- simhash_find_all / simhash_clusters: the SQL surface (docs/find_all.md).
CREATE TABLE docs (id integer, fp simhash64);
INSERT INTO docs VALUES
    (10, '0x0'), (11, '0x1'), (12, '0x7'), (13, '0x0'), (14, NULL),
    (15, '0xff'), (16, '0xf'), (17, '0xffff000000000000'), (18, '0xfffe000000000000');

-- every pair within 3 bits once, id1 < id2; equal fingerprints at distance 0; NULL skipped
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs') ORDER BY id1, id2;
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs', 0) ORDER BY id1, id2;
-- the result does not depend on the blocks
SELECT blocks, count(*) AS pairs
FROM generate_series(2, 8) blocks, simhash_find_all('SELECT id, fp FROM docs', 1, blocks)
GROUP BY blocks ORDER BY blocks;
-- ids may be smallint, integer or bigint, rows in any order
SELECT * FROM simhash_find_all('SELECT (-id)::smallint, fp FROM docs ORDER BY fp', 1) ORDER BY id1, id2;

-- clusters: single link, named by their smallest id
SELECT * FROM simhash_clusters('SELECT id, fp FROM docs', 1) ORDER BY id;
SELECT * FROM simhash_clusters('SELECT id, fp FROM docs', 1, include_singletons => true) ORDER BY id;
SELECT * FROM simhash_clusters('SELECT id, fp FROM docs', 3, 5, true) ORDER BY id;

-- arrays: distinct fingerprints, (smaller, larger), as simhash-py's find_all
SELECT * FROM simhash_find_all(ARRAY['0x0', '0x1', '0x7', '0x0', NULL, '0xffffffffffffffff', '0x7fffffffffffffff']::simhash64[], 1)
ORDER BY hash1, hash2;
SELECT * FROM simhash_clusters(ARRAY['0x0', '0x1', '0x7', '0x0', NULL, '0xffffffffffffffff', '0x7fffffffffffffff']::simhash64[], 2, NULL, true)
ORDER BY hash;
SELECT count(*) FROM simhash_find_all('{}'::simhash64[]);
SELECT count(*) FROM simhash_clusters(ARRAY[NULL]::simhash64[], 3, NULL, true);

-- no rows, one row, NULL arguments (no rows, as if STRICT; NULL blocks = choose)
SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs WHERE false');
SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs WHERE id = 10');
SELECT count(*) FROM simhash_clusters('SELECT id, fp FROM docs WHERE id = 10', 3, NULL, true);
SELECT count(*) FROM simhash_find_all(NULL::text);
SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs', NULL);
SELECT count(*) FROM simhash_find_all(NULL::simhash64[]);

-- wrong queries
SELECT * FROM simhash_find_all('SELECT id FROM docs');
SELECT * FROM simhash_find_all('SELECT id, fp, fp FROM docs');
SELECT * FROM simhash_find_all('SELECT fp, id FROM docs');
SELECT * FROM simhash_find_all('SELECT id::numeric, fp FROM docs');
SELECT * FROM simhash_find_all('SELECT id, fp::bigint FROM docs');
SELECT * FROM simhash_find_all('SELEC id, fp FROM docs');
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs; SELECT id, fp FROM docs');
SELECT * FROM simhash_find_all('');
SELECT * FROM simhash_find_all('SELECT NULL::int, fp FROM docs');
SELECT * FROM simhash_clusters('SELECT id % 3, fp FROM docs');
-- wrong parameters
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs', -1);
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs', 32);
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs', 3, 3);
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs', 3, 33);
SELECT * FROM simhash_find_all('SELECT id, fp FROM docs', 5, 32);
-- past maintenance_work_mem the rows go to temporary files (each i and i # 1 are a pair)
SET maintenance_work_mem = '8MB';
SELECT count(*), count(*) FILTER (WHERE distance = 1 AND id2 = id1 + 1) FROM simhash_find_all('SELECT i, (hashint8extended(i / 2, 0) # (i % 2))::simhash64 FROM generate_series(1, 600000) i');
SET maintenance_work_mem = '10MB';
SELECT count(*), count(DISTINCT cluster_id) FROM simhash_clusters('SELECT i, hashint8extended(i / 2, 0)::simhash64 FROM generate_series(1, 600000) i');
-- and below a few MB there is too little memory even for that
SET maintenance_work_mem = '1MB';
SELECT count(*) FROM simhash_find_all('SELECT i, i::bigint::simhash64 FROM generate_series(1, 100000) i');
RESET maintenance_work_mem;
-- workers: NULL is max_parallel_maintenance_workers, 0 none, a negative number an error
SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs', 3, NULL, 0);
SELECT count(*) FROM simhash_clusters('SELECT id, fp FROM docs', 3, NULL, false, NULL);
SELECT count(*) FROM simhash_find_all('SELECT id, fp FROM docs', 3, workers => -1);
DROP TABLE docs;
-- the extension's owner renamed the type: a clear error, not an internal one
BEGIN;
ALTER TYPE simhash64 RENAME TO renamed_simhash64;
SELECT * FROM simhash_find_all('SELECT 1, NULL::renamed_simhash64');
ROLLBACK;
