-- simhash extension, upgrade 1.0 -> 1.1
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.1'" to load this file. \quit

-- What 1.1 adds to 1.0.  A fresh CREATE EXTENSION runs simhash--1.0.sql and then
-- this script, so new and upgraded databases are built by the same statements
-- (docs/releasing.md).  Append new objects in sections headed by their concern.

---------------------------------------------------------------------------
-- Integer parameters: every SQL integer type converts to simhash64 implicitly
---------------------------------------------------------------------------

-- Drivers send a fingerprint that is a plain integer as smallint, integer or
-- bigint by its size, and from 2^63 on as numeric (psycopg 3), or write it as a
-- literal, which SQL reads as numeric from 2^63 on (psycopg2).  These implicit
-- casts make `hamming_within(fingerprint, $1, 3)`, `fingerprint = 5` and
-- `13893055204574190055::simhash64` work for every value 0 .. 2^64 - 1.
--
-- Implicit in one direction only: simhash64 converts to nothing implicitly, so
-- an operator between a simhash64 and an integer has one candidate (the
-- simhash64 one), and queries without a simhash64 resolve as before (an exact
-- or numeric candidate always matches more argument types exactly).
--
-- The integer types keep the two's complement reading of the bigint cast
-- (-1 is 0xffffffffffffffff, whichever of the three carries it); numeric is the
-- exact value and must be an integer from 0 to 2^64 - 1 (else SQLSTATE 22003).

DROP CAST (bigint AS simhash64);
CREATE CAST (bigint AS simhash64) WITHOUT FUNCTION AS IMPLICIT;

CREATE FUNCTION simhash64(smallint) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'int2_to_simhash64' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64(integer) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'int4_to_simhash64' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64(numeric) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'numeric_to_simhash64' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (smallint AS simhash64) WITH FUNCTION simhash64(smallint) AS IMPLICIT;
CREATE CAST (integer AS simhash64) WITH FUNCTION simhash64(integer) AS IMPLICIT;
CREATE CAST (numeric AS simhash64) WITH FUNCTION simhash64(numeric) AS IMPLICIT;

---------------------------------------------------------------------------
-- Concurrent dedupe: simhash_lock_near (src/locks/lock_near.c)
---------------------------------------------------------------------------

-- Transaction-scoped advisory locks such that two transactions locking
-- fingerprints within max_distance bits of each other (same max_distance, same
-- scope) serialize, while unrelated fingerprints almost never wait.  The
-- pattern, in READ COMMITTED, each step its own statement:
--   BEGIN;
--   SELECT simhash_lock_near($1, 3, $2);
--   SELECT id FROM pages WHERE domain = $2 AND hamming_within(fingerprint, $1, 3) LIMIT 1;
--   -- INSERT only if none
--   COMMIT;
-- A NULL fingerprint locks nothing; a NULL scope is one scope of its own.
CREATE FUNCTION simhash_lock_near(fp simhash64, max_distance integer DEFAULT 3, scope text DEFAULT NULL)
RETURNS void
    AS 'MODULE_PATHNAME', 'simhash_lock_near' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_lock_near(simhash64, integer, text) IS
    'lock, until the transaction ends, every fingerprint within max_distance bits of fp (in scope)';

-- A batch at once, in one global order: no deadlock between batches.  (Its own
-- name: an overload on simhash64[] would make simhash_lock_near('0x..', 3)
-- ambiguous, as an unknown-typed literal or parameter fits both.)
CREATE FUNCTION simhash_lock_near_batch(fps simhash64[], max_distance integer DEFAULT 3, scope text DEFAULT NULL)
RETURNS void
    AS 'MODULE_PATHNAME', 'simhash_lock_near_batch' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_lock_near_batch(simhash64[], integer, text) IS
    'simhash_lock_near for every fingerprint of a batch, locks taken in one order';

---------------------------------------------------------------------------
-- find_all and clusters across a Citus cluster (src/find_all/find_all_distributed.c,
-- docs/citus.md).  On a server without Citus, or for a table Citus does not
-- shard, the two functions run simhash_find_all / simhash_clusters.
---------------------------------------------------------------------------

-- The partition key of a row for coarse block `part` (0 .. max_distance) of
-- the max_distance + 1 blocks: rows agreeing on that block get the same key.
CREATE FUNCTION simhash_partition_key(fp simhash64, max_distance integer, part integer)
RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_partition_key' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_partition_key(simhash64, integer, integer) IS
    'the key routing fp to the partition of its coarse block part (simhash_find_all_distributed)';

-- The pairs one worker reports for one shard of the key table: those within
-- max_distance bits whose lowest agreeing coarse block is `part`.
CREATE FUNCTION simhash_find_all_part(sql text, max_distance integer, part integer)
RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_find_all_part' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_find_all_part(text, integer, integer) IS
    'pairs of the query''s (id, simhash64) rows within max_distance bits whose lowest agreeing coarse block is part';

-- Connected components of a graph given as (id, id) edges.
CREATE FUNCTION simhash_components(sql text)
RETURNS TABLE(id bigint, cluster_id bigint)
    AS 'MODULE_PATHNAME', 'simhash_components' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_components(text) IS
    'every id of the query''s (id, id) edges with the smallest id of its connected component';

-- Checks the arguments as the single-node functions do; then, when Citus
-- shards the relation, copies every row with a fingerprint into a new key
-- table (one row per coarse block, distributed by its partition key, plus one
-- marker row per shard and part) and returns it; otherwise returns NULL.
CREATE FUNCTION simhash_partition_rows(relation regclass, id_column name, fingerprint_column name,
                                       max_distance integer, caller text)
RETURNS regclass
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    AS $function$
DECLARE
    distributed boolean;
    duplicate bigint;
    fingerprints bigint;
    shards integer;
    keys_name text;
    keys regclass;
    markers bigint;
BEGIN
    -- The argument and column checks of simhash_find_all, on no rows.
    EXECUTE 'SELECT count(*) FROM simhash_find_all($1, $2)'
        USING format('SELECT %I, %I FROM %s LIMIT 0', id_column, fingerprint_column, relation), max_distance;
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1 AND partmethod <> ''n'')'
        INTO distributed USING relation;
    IF NOT distributed THEN
        RETURN NULL;
    END IF;

    -- Ids must be unique, as for simhash_find_all; a unique index on the id
    -- alone says so without a look at the rows.
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a
            ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = relation AND i.indisunique AND i.indnkeyatts = 1
          AND i.indpred IS NULL AND a.attname = id_column
    ) THEN
        EXECUTE format('SELECT %1$I FROM %2$s WHERE %3$I IS NOT NULL AND %1$I IS NOT NULL
                        GROUP BY %1$I HAVING count(*) > 1 LIMIT 1', id_column, relation, fingerprint_column)
            INTO duplicate;
        IF duplicate IS NOT NULL THEN
            RAISE EXCEPTION '%: the query returned id % more than once', caller, duplicate
                USING ERRCODE = 'unique_violation',
                      HINT = 'Each row needs its own id; for several fingerprints per document, number the rows and map them back.';
        END IF;
    END IF;

    -- Enough shards that one shard's part fits in maintenance_work_mem on a
    -- worker (40 bytes a row, twice over for uneven shards), and at least as
    -- many as the relation has, so that every worker takes part.
    EXECUTE format('SELECT count(*) FROM %s WHERE %I IS NOT NULL', relation, fingerprint_column) INTO fingerprints;
    SELECT greatest(count(*), ceil(fingerprints * 80.0 / pg_catalog.pg_size_bytes(current_setting('maintenance_work_mem'))))
        INTO shards FROM pg_catalog.pg_dist_shard WHERE logicalrelid = relation;
    shards := least(shards, 64000);

    keys_name := format('simhash_keys_%s_%s', pg_catalog.pg_backend_pid(), substr(md5(random()::text), 1, 8));
    EXECUTE format('CREATE UNLOGGED TABLE %I (bucket bigint, part integer, id bigint, fp simhash64)', keys_name);
    keys := quote_ident(keys_name)::regclass;
    PERFORM create_distributed_table(keys, 'bucket', shard_count := shards, colocate_with := 'none');
    EXECUTE format('INSERT INTO %s (bucket, part, id, fp)
                    SELECT simhash_partition_key(r.%I, %s, parts.part), parts.part, r.%I, r.%I
                    FROM %s r CROSS JOIN generate_series(0, %s) AS parts(part)
                    WHERE r.%I IS NOT NULL',
                   keys, fingerprint_column, max_distance, id_column, fingerprint_column,
                   relation, max_distance, fingerprint_column);
    -- One marker row per shard and part: the distributed query over the
    -- markers calls the part's function once in each shard.
    EXECUTE format('INSERT INTO %1$s (bucket, part)
                    SELECT v, -1 - parts.part
                    FROM (SELECT DISTINCT ON (get_shard_id_for_distribution_column(%2$L, v)) v
                          FROM generate_series(0::bigint, 64 * %3$s) v) reps
                    CROSS JOIN generate_series(0, %4$s) AS parts(part)',
                   keys, keys, shards, max_distance);
    GET DIAGNOSTICS markers = ROW_COUNT;
    IF markers <> shards::bigint * (max_distance + 1) THEN
        RAISE EXCEPTION '%: % marker rows for % shards', caller, markers, shards;
    END IF;
    -- Without statistics the planner on each worker expects a third of the
    -- shard's rows to be markers, each returning ROWS 1000 rows, and compiles
    -- the query with JIT: seconds per shard.  The part column's statistics
    -- (a sample of each shard) tell it there are a few.
    EXECUTE format('ANALYZE %s (part)', keys);
    RETURN keys;
END
$function$;
COMMENT ON FUNCTION simhash_partition_rows(regclass, name, name, integer, text) IS
    'the key table of a distributed find_all or clusters run (NULL when Citus does not shard relation)';

-- Every pair of rows within max_distance bits, found on the workers.
CREATE FUNCTION simhash_find_all_distributed(relation regclass, id_column name, fingerprint_column name,
                                             max_distance integer DEFAULT 3)
RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1000
    AS $function$
DECLARE
    keys regclass;
BEGIN
    IF relation IS NULL OR id_column IS NULL OR fingerprint_column IS NULL OR max_distance IS NULL THEN
        RETURN;
    END IF;
    keys := simhash_partition_rows(relation, id_column, fingerprint_column, max_distance, 'simhash_find_all_distributed');
    IF keys IS NULL THEN
        RETURN QUERY SELECT * FROM simhash_find_all(
            format('SELECT %I, %I FROM %s', id_column, fingerprint_column, relation), max_distance);
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        $$SELECT (p).id1, (p).id2, (p).distance
          FROM (SELECT simhash_find_all_part(
                           format('SELECT id, fp FROM %%s WHERE part = %%s', tableoid::regclass, -1 - part),
                           %1$s, -1 - part) AS p
                FROM %2$s WHERE part < 0) s$$, max_distance, keys);
    EXECUTE format('DROP TABLE %s', keys);
END
$function$;
COMMENT ON FUNCTION simhash_find_all_distributed(regclass, name, name, integer) IS
    'simhash_find_all over a table Citus shards, the work spread over the workers';

-- The clusters of those pairs: each worker's clusters of its parts, joined on
-- the coordinator.
CREATE FUNCTION simhash_clusters_distributed(relation regclass, id_column name, fingerprint_column name,
                                             max_distance integer DEFAULT 3,
                                             include_singletons boolean DEFAULT false)
RETURNS TABLE(id bigint, cluster_id bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1000
    AS $function$
DECLARE
    keys regclass;
    edges text;
BEGIN
    IF relation IS NULL OR id_column IS NULL OR fingerprint_column IS NULL OR max_distance IS NULL
       OR include_singletons IS NULL THEN
        RETURN;
    END IF;
    keys := simhash_partition_rows(relation, id_column, fingerprint_column, max_distance, 'simhash_clusters_distributed');
    IF keys IS NULL THEN
        RETURN QUERY SELECT * FROM simhash_clusters(
            format('SELECT %I, %I FROM %s', id_column, fingerprint_column, relation), max_distance, NULL,
            include_singletons);
        RETURN;
    END IF;
    edges := format(
        $$SELECT (c).id, (c).cluster_id
          FROM (SELECT simhash_clusters(
                           format('SELECT id, fp FROM %%s WHERE part = %%s', tableoid::regclass, -1 - part),
                           %1$s) AS c
                FROM %2$s WHERE part < 0) s$$, max_distance, keys);
    IF include_singletons THEN
        -- Every row is a node: (id, id) edges put the lone ones in.
        edges := edges || format(' UNION ALL SELECT id, id FROM %s WHERE part = 0', keys);
    END IF;
    RETURN QUERY SELECT * FROM simhash_components(edges);
    EXECUTE format('DROP TABLE %s', keys);
END
$function$;
COMMENT ON FUNCTION simhash_clusters_distributed(regclass, name, name, integer, boolean) IS
    'simhash_clusters over a table Citus shards, the work spread over the workers';

-- The index access method simhash_mih: every radius from one index, by
-- multi-index hashing over sorted runs that keep each fingerprint beside its
-- TID (docs/index.md).  CREATE INDEX ... USING simhash_mih (fp) [WITH (runs = 3)];
-- queries use hamming_within(fp, q, k) or fp <@ hamming_ball(q, k), as with GIN.
CREATE FUNCTION simhash_mih_handler(internal) RETURNS index_am_handler
    AS 'MODULE_PATHNAME' LANGUAGE C;
CREATE ACCESS METHOD simhash_mih TYPE INDEX HANDLER simhash_mih_handler;
COMMENT ON ACCESS METHOD simhash_mih IS
    'exact Hamming-radius index for simhash64: multi-index hashing over sorted runs';
CREATE OPERATOR CLASS simhash64_mih_ops
    DEFAULT FOR TYPE simhash64 USING simhash_mih AS
        OPERATOR 1 <@ (simhash64, simhash64_ball);
