-- simhash extension, upgrade 1.1 -> 1.2
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.2'" to load this file. \quit

---------------------------------------------------------------------------
-- simhash_mih_check (issue 21; src/index/mih/mih_check.c, docs/index.md):
-- what amcheck is for btree and GIN.  It takes ShareLock on the table and the
-- index (writers wait), so, like amcheck's functions, PUBLIC may not run it
-- until granted; even then only the table's owner may check its indexes.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_mih_check(index regclass, heapallindexed boolean DEFAULT true)
    RETURNS void
    AS 'MODULE_PATHNAME', 'simhash_mih_check'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION simhash_mih_check(regclass, boolean) FROM PUBLIC;

---------------------------------------------------------------------------
-- Nearest-neighbour distances: how far is each document from its nearest
-- other one?  (issue 22: choosing the threshold by looking; docs/report.md)
---------------------------------------------------------------------------

-- For a sample of a table's rows (every row when the table has at most
-- sample_size of them; otherwise the sample_size rows first in the order of
-- hashint8(id), the same rows at every call), the nearest other row within
-- max_distance bits (optionally: with the same scope value) and its distance;
-- NULLs when there is none.  Each sampled row asks the index two radius
-- queries (hamming_within at radius min(8, max_distance), then, only when
-- nothing is that near, at max_distance): with a simhash_mih (or GIN) index on
-- the column each costs milliseconds at a million rows; without one each is a
-- sequential scan.  Work: sample_size index queries, whatever the table's size.
CREATE FUNCTION simhash_nearest_distances(relation regclass, id_column name, fingerprint_column name,
                                          scope_column name DEFAULT NULL, sample_size integer DEFAULT 2000,
                                          max_distance integer DEFAULT 16)
RETURNS TABLE (id bigint, nearest_id bigint, distance integer, scope text)
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED AS $fn$
DECLARE
    scope_expr text := CASE WHEN scope_column IS NULL THEN 'NULL::text' ELSE format('%I::text', scope_column) END;
    same_scope text := CASE WHEN scope_column IS NULL THEN '' ELSE format(' AND %I::text IS NOT DISTINCT FROM $3', scope_column) END;
    near_radius integer;
    probe text;
    fp simhash64;
BEGIN
    IF relation IS NULL OR id_column IS NULL OR fingerprint_column IS NULL THEN
        RAISE EXCEPTION 'simhash_nearest_distances: relation, id_column and fingerprint_column must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF sample_size IS NULL OR sample_size < 1 THEN
        RAISE EXCEPTION 'simhash_nearest_distances: sample_size must be at least 1, got %', sample_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_distance IS NULL OR max_distance < 0 OR max_distance > 64 THEN
        RAISE EXCEPTION 'simhash_nearest_distances: max_distance must be 0..64, got %', max_distance
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    near_radius := least(8, max_distance);
    -- $1 the sampled fingerprint, $2 its id, $3 its scope; %s the radius
    probe := format('SELECT %1$I::bigint, hamming_distance(%2$I::simhash64, $1) FROM %3$s '
                    'WHERE hamming_within(%2$I::simhash64, $1, %%s) AND %1$I::bigint <> $2%4$s '
                    'ORDER BY 2, 1 LIMIT 1', id_column, fingerprint_column, relation, same_scope);
    FOR id, fp, scope IN EXECUTE format(
            'SELECT %1$I::bigint, %2$I::simhash64, %3$s FROM %4$s WHERE %1$I IS NOT NULL AND %2$I IS NOT NULL '
            'ORDER BY hashint8(%1$I::bigint), %1$I LIMIT %5$s',
            id_column, fingerprint_column, scope_expr, relation, sample_size) LOOP
        nearest_id := NULL;
        distance := NULL;
        EXECUTE format(probe, near_radius) INTO nearest_id, distance USING fp, id, scope;
        IF nearest_id IS NULL AND max_distance > near_radius THEN
            EXECUTE format(probe, max_distance) INTO nearest_id, distance USING fp, id, scope;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$fn$;

-- The same numbers as a histogram: for each distance 0..max_distance, how many
-- sampled rows have their nearest other row at that distance (every distance
-- is listed, 0 included), then one row with distance NULL: the sampled rows
-- with no other row within max_distance bits.
CREATE FUNCTION simhash_nn_histogram(relation regclass, id_column name, fingerprint_column name,
                                     scope_column name DEFAULT NULL, sample_size integer DEFAULT 2000,
                                     max_distance integer DEFAULT 16)
RETURNS TABLE (distance integer, documents bigint)
LANGUAGE sql VOLATILE PARALLEL RESTRICTED AS $fn$
    WITH nearest AS (
        SELECT n.distance FROM simhash_nearest_distances(relation, id_column, fingerprint_column,
                                                         scope_column, sample_size, max_distance) n
    )
    SELECT d.distance, count(n.distance)
    FROM generate_series(0, max_distance) AS d(distance) LEFT JOIN nearest n ON n.distance = d.distance
    GROUP BY d.distance
    UNION ALL
    SELECT NULL, count(*) FILTER (WHERE n.distance IS NULL) FROM nearest n
    ORDER BY 1 NULLS LAST
$fn$;

---------------------------------------------------------------------------
-- find_all and clusters on several cores (issue 20; src/find_all/find_all_parallel.c,
-- docs/find_all.md): the query variants take workers, the number of parallel
-- workers besides the backend (NULL: max_parallel_maintenance_workers, as
-- CREATE INDEX; 0: none).  A parameter cannot be added to a function in
-- place, and a second declaration beside the old one would make every call
-- that leaves out the defaults ambiguous: the old ones are replaced.  A view
-- or other object that depends on them would go with them, so the update
-- stops first and names it; the library keeps the old C entry points, which
-- run with max_parallel_maintenance_workers.
---------------------------------------------------------------------------

DO $update$
DECLARE
    dependents text;
BEGIN
    SELECT string_agg(DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid), ', ')
      INTO dependents
      FROM pg_depend d
     WHERE d.refclassid = 'pg_proc'::regclass
       AND d.refobjid IN ('simhash_find_all(text, integer, integer)'::regprocedure,
                          'simhash_clusters(text, integer, integer, boolean)'::regprocedure)
       AND d.deptype = 'n';
    IF dependents IS NOT NULL THEN
        RAISE EXCEPTION 'simhash 1.2 replaces simhash_find_all(text, ...) and simhash_clusters(text, ...), which % use',
            dependents
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Drop them, run ALTER EXTENSION simhash UPDATE, then create them again.';
    END IF;
END
$update$;

DROP FUNCTION simhash_find_all(text, integer, integer);
DROP FUNCTION simhash_clusters(text, integer, integer, boolean);

-- The query variants run arbitrary SQL with the caller's privileges, hence
-- VOLATILE and PARALLEL UNSAFE.  Not STRICT: blocks or workers NULL means "choose".
CREATE FUNCTION simhash_find_all(sql text, max_distance integer DEFAULT 3,
                                 blocks integer DEFAULT NULL, workers integer DEFAULT NULL)
    RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_find_all_query'
    LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_find_all(text, integer, integer, integer) IS
    'every pair of rows (id, simhash64) of the query within max_distance bits, once, id1 < id2';

CREATE FUNCTION simhash_clusters(sql text, max_distance integer DEFAULT 3,
                                 blocks integer DEFAULT NULL,
                                 include_singletons boolean DEFAULT false,
                                 workers integer DEFAULT NULL)
    RETURNS TABLE(id bigint, cluster_id bigint)
    AS 'MODULE_PATHNAME', 'simhash_clusters_query'
    LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_clusters(text, integer, integer, boolean, integer) IS
    'connected components of the pairs simhash_find_all finds; cluster_id is the smallest id of the cluster';

---------------------------------------------------------------------------
-- find_all and clusters across a Citus cluster, streamed (issue 20;
-- src/find_all/find_all_shuffle.c, docs/citus.md): each shard's rows go to
-- the buckets of the search's passes as batches of entries in Citus's
-- intermediate results, with no table of copies.  1.1's helpers
-- (simhash_partition_key, simhash_find_all_part) stay for code that calls them.
---------------------------------------------------------------------------

-- A query's (id, simhash64) rows as batches of entries, each row once per
-- pass of the search (max_distance + 1 passes), in part bucket * passes + pass;
-- rows is the number of rows of the whole run (it sets the search's layout).
CREATE FUNCTION simhash_partition_batches(sql text, max_distance integer, rows bigint, buckets integer)
RETURNS TABLE(part integer, batch bytea)
    AS 'MODULE_PATHNAME', 'simhash_partition_batches' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_partition_batches(text, integer, bigint, integer) IS
    'the query''s (id, simhash64) rows as batches of entries, once per pass of the search, by bucket (simhash_find_all_distributed)';

-- On a node: empty Citus intermediate results <prefix>_<bucket> for each prefix
-- and bucket, to be written over by simhash_write_shard.
CREATE FUNCTION simhash_prepare_results(prefixes text[], max_distance integer, buckets integer)
RETURNS void
    AS 'MODULE_PATHNAME', 'simhash_prepare_results' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_prepare_results(text[], integer, integer) IS
    'empty intermediate results for simhash_write_shard (simhash_find_all_distributed)';

-- A shard's rows as batches, into the results <prefix>_<shard id>_<bucket>;
-- once per shard and query: SELECT simhash_write_shard(tableoid, ...) FROM
-- relation LIMIT 1.
CREATE FUNCTION simhash_write_shard(shard regclass, id_column name, fingerprint_column name,
                                    max_distance integer, rows bigint, buckets integer, prefix text)
RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_write_shard' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_write_shard(regclass, name, name, integer, bigint, integer, text) IS
    'a shard''s rows as batches in intermediate results, one per bucket (simhash_find_all_distributed)';

-- The pairs of one bucket, packed (simhash_unpack_pairs): sql returns its
-- (part, batch) rows, each batch of pass part mod passes.  results, when
-- given, names the Citus intermediate results that sql reads: their files
-- are then read directly where Citus keeps them (the query runs otherwise).
CREATE FUNCTION simhash_find_all_batches(sql text, max_distance integer, rows bigint, results text[] DEFAULT NULL)
RETURNS TABLE(pairs integer, batch bytea)
    AS 'MODULE_PATHNAME', 'simhash_find_all_batches' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_find_all_batches(text, integer, bigint, text[]) IS
    'pairs within max_distance bits among the batches of one bucket, pass by pass, packed (simhash_find_all_distributed)';

-- The same as edges for clusters: each row of a component of two or more
-- among the pairs of a pass, with the id of one row of it (distance 0).
CREATE FUNCTION simhash_clusters_batches(sql text, max_distance integer, rows bigint, results text[] DEFAULT NULL)
RETURNS TABLE(pairs integer, batch bytea)
    AS 'MODULE_PATHNAME', 'simhash_clusters_batches' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_clusters_batches(text, integer, bigint, text[]) IS
    'edges of the clusters of one bucket''s batches, pass by pass, packed (simhash_clusters_distributed)';

-- The pairs of a packed batch.
CREATE FUNCTION simhash_unpack_pairs(batch bytea)
RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_unpack_pairs' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 3072;
COMMENT ON FUNCTION simhash_unpack_pairs(bytea) IS
    'the (id1, id2, distance) pairs of a batch of simhash_find_all_batches or simhash_clusters_batches';

-- Checks the arguments as the single-node functions do; then, when Citus
-- shards the relation, sends every row with a fingerprint to the buckets of
-- the search's passes and returns the work table whose rows drive the
-- searches, a row per bucket (column batches: the query of the bucket's
-- batches; results: the results it reads; rows: about the number of rows in
-- all); otherwise (or with no rows) returns NULL.
--
-- The work table holds a few rows per node and per bucket, no copies of
-- rows.  It is distributed (up to a shard per shard of the relation, each on
-- one node only, so that the node of each row is known), and Citus's
-- ordinary distributed queries run its rows on the workers, in parallel and
-- in the caller's transaction:
--   1. a row per node: simhash_prepare_results makes an empty result per
--      shard of the relation there and bucket;
--   2. (a query over the relation itself, one task per shard, over the
--      connection that holds the transaction's writes to it)
--      simhash_write_shard writes each shard's batches over its results;
--   3. a row per pair of nodes: fetch_intermediate_results copies one node's
--      results of the other's buckets;
--   4. a row per bucket: simhash_find_all_batches or simhash_clusters_batches
--      (run by the caller) reads the bucket's results and searches its passes.
-- Citus removes the results at the end of the transaction.
CREATE OR REPLACE FUNCTION simhash_partition_rows(relation regclass, id_column name, fingerprint_column name,
                                                  max_distance integer, caller text)
RETURNS regclass
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    -- The node of each shard of the work table must be its only one.
    SET citus.shard_replication_factor = 1
    AS $function$
DECLARE
    distributed boolean;
    duplicate bigint;
    fingerprints bigint;
    shards integer;
    nodes integer;
    buckets integer;
    work_shards integer;
    -- The passes of the search: its tables grouped by their lowest block, one
    -- per block 0 .. max_distance (find_all.h; the C functions check).
    passes integer := max_distance + 1;
    work_name text;
    work regclass;
    work_slots bigint[];
    work_groups integer[];
    source_prefixes text[];
    source_groups integer[];
    node_groups integer[];
    node_hosts text[];
    node_ports integer[];
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
    -- A shard's rows are read on one of its nodes, whose results the others
    -- fetch: with several placements, which one Citus picks is not known here.
    IF EXISTS (SELECT FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement p USING (shardid)
                WHERE s.logicalrelid = relation GROUP BY s.shardid HAVING count(*) > 1) THEN
        RAISE NOTICE '%: % has shards on several nodes: its rows are searched on the coordinator', caller, relation;
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

    -- About the rows, for the layout of the search (the same on every node)
    -- and the number of buckets: a 1% sample of the pages of a big heap
    -- table, as a count of every row takes as long as reading them; counted
    -- when the sample is small.
    IF EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_am a ON a.oid = c.relam
                WHERE c.oid = relation AND a.amname = 'heap') THEN
        EXECUTE format('SELECT count(%I) * 100 FROM %s TABLESAMPLE SYSTEM (1)', fingerprint_column, relation)
            INTO fingerprints;
    END IF;
    IF fingerprints IS NULL OR fingerprints < 2000000 THEN
        EXECUTE format('SELECT count(%I) FROM %s', fingerprint_column, relation) INTO fingerprints;
    END IF;
    IF fingerprints = 0 THEN
        RETURN NULL;
    END IF;

    work_name := format('simhash_work_%s_%s', pg_catalog.pg_backend_pid(), substr(md5(random()::text), 1, 8));
    -- Each shard of the relation: the prefix of its results (with its shard
    -- id, as simhash_write_shard makes it), and its node.
    SELECT array_agg(work_name || '_' || s.shardid ORDER BY s.shardid), array_agg(p.groupid ORDER BY s.shardid)
      INTO source_prefixes, source_groups
      FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement p USING (shardid)
     WHERE s.logicalrelid = relation;
    shards := cardinality(source_prefixes);
    SELECT array_agg(n.groupid ORDER BY n.groupid), array_agg(n.nodename ORDER BY n.groupid),
           array_agg(n.nodeport ORDER BY n.groupid)
      INTO node_groups, node_hosts, node_ports
      FROM pg_catalog.pg_dist_node n
     WHERE n.noderole = 'primary' AND n.groupid IN (SELECT unnest(source_groups));
    nodes := cardinality(node_groups);

    -- Buckets: enough that a bucket's results (every shard writes one for each)
    -- hold about 64k rows (4 MB) each, as a file costs about what 10k rows do;
    -- up to one per shard of the relation, so that every core works; enough
    -- that a bucket's passes, read at once (18 bytes a row), fit in
    -- maintenance_work_mem on a worker twice over; and as many on every node.
    buckets := greatest(least(shards, ceil(fingerprints / (shards * 65536.0))),
                        ceil(fingerprints * passes * 36.0
                             / pg_catalog.pg_size_bytes(current_setting('maintenance_work_mem'))));
    buckets := ceil(buckets::numeric / nodes) * nodes;
    -- A shard of the work table per bucket that runs at once (up to one per
    -- shard of the relation, as many on every node), and one on every node
    -- that may hold shards (Citus places them round robin).
    SELECT greatest(least(buckets, ceil(shards::numeric / nodes) * nodes), count(*)) INTO work_shards
      FROM pg_catalog.pg_dist_node
     WHERE shouldhaveshards AND isactive AND noderole = 'primary';

    EXECUTE format('CREATE UNLOGGED TABLE %I (slot bigint, prefixes text[], fetch_ids text[], fetch_host text,
                                              fetch_port integer, rows bigint, results text[], batches text)',
                   work_name);
    work := quote_ident(work_name)::regclass;
    PERFORM create_distributed_table(work, 'slot', shard_count := work_shards, colocate_with := 'none');
    -- Each shard of the work table: a slot value that lands in it, and its node.
    SELECT array_agg(s.slot ORDER BY s.shardid), array_agg(p.groupid ORDER BY s.shardid)
      INTO work_slots, work_groups
      FROM (SELECT DISTINCT ON (shardid) shardid, v AS slot
              FROM (SELECT pg_catalog.get_shard_id_for_distribution_column(work, v) AS shardid, v
                      FROM generate_series(0::bigint, 64 * work_shards) v) c
             ORDER BY shardid, v) s
      JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid;
    IF cardinality(work_slots) <> work_shards THEN
        RAISE EXCEPTION '%: found slots for % of the % shards of %', caller, cardinality(work_slots), work_shards, work;
    END IF;
    IF EXISTS (SELECT unnest(node_groups) EXCEPT SELECT unnest(work_groups)) THEN
        RAISE EXCEPTION '%: a shard of % is on a node that holds no shard of a new table', caller, relation
            USING HINT = 'Let every node with shards of the table hold shards (citus_set_node_property(..., ''shouldhaveshards'', true)).';
    END IF;

    -- Bucket b is searched on the work table's shard number b mod work_shards.
    EXECUTE format($sql$
        WITH bucket AS (
            SELECT b, ($1::integer[])[b %% $2 + 1] AS grp FROM generate_series(0, $3 - 1) b),
        slot AS (
            SELECT slot, grp, row_number() OVER (PARTITION BY grp ORDER BY i) - 1 AS r,
                   count(*) OVER (PARTITION BY grp) AS n
              FROM unnest($4::bigint[], $1::integer[]) WITH ORDINALITY u(slot, grp, i)),
        source AS (
            SELECT prefix, grp FROM unnest($5::text[], $6::integer[]) u(prefix, grp)),
        node AS (
            SELECT grp, host, port, i FROM unnest($7::integer[], $8::text[], $9::integer[]) WITH ORDINALITY u(grp, host, port, i)),
        -- 1. a row per node: the prefixes of its shards
        prepare AS (
            SELECT slot.slot, array_agg(source.prefix) AS prefixes
              FROM source JOIN slot ON slot.grp = source.grp AND slot.r = 0
             GROUP BY slot.slot),
        -- 3. a row per node and other node: the other's results of the node's buckets
        pull AS (
            SELECT slot.slot, array_agg(format('%%s_%%s', source.prefix, bucket.b)) AS ids, node.host, node.port
              FROM bucket JOIN source ON source.grp <> bucket.grp
              JOIN node ON node.grp = source.grp
              JOIN slot ON slot.grp = bucket.grp AND slot.r = node.i %% slot.n
             GROUP BY slot.slot, node.host, node.port),
        -- 4. a row per bucket: its results, and the query that reads them
        search AS (
            SELECT ($4::bigint[])[b %% $2 + 1] AS slot,
                   ARRAY(SELECT prefix || '_' || b FROM unnest($5::text[]) prefix) AS results
              FROM generate_series(0, $3 - 1) b)
        INSERT INTO %s (slot, prefixes, fetch_ids, fetch_host, fetch_port, rows, results, batches)
        SELECT slot, prefixes, NULL::text[], NULL::text, NULL::integer, NULL::bigint, NULL::text[], NULL::text
          FROM prepare
        UNION ALL
        SELECT slot, NULL, ids, host, port, NULL, NULL, NULL FROM pull
        UNION ALL
        SELECT slot, NULL, NULL, NULL, NULL, $10, results,
               format('SELECT r.part, r.batch FROM pg_catalog.read_intermediate_results(%%L::text[], ''binary'')
                           AS r(part integer, batch bytea)', results)
          FROM search$sql$, work)
        USING work_groups, work_shards, buckets, work_slots, source_prefixes, source_groups,
              node_groups, node_hosts, node_ports, fingerprints;
    -- Without statistics the planner on each worker expects many rows here,
    -- each returning ROWS 1000 rows, and compiles the queries with JIT.
    EXECUTE format('ANALYZE %s', work);

    EXECUTE format('SELECT count(*) FROM (SELECT simhash_prepare_results(prefixes, %s, %s) FROM %s
                                           WHERE prefixes IS NOT NULL) s', max_distance, buckets, work);
    -- LIMIT 1: Citus runs the query on every shard, each stopping at its
    -- first row, whose call writes the whole shard (and an empty shard
    -- keeps its empty results).
    EXECUTE format('SELECT simhash_write_shard(tableoid, %L, %L, %s, %s, %s, %L) FROM %s LIMIT 1',
                   id_column, fingerprint_column, max_distance, fingerprints, buckets, work_name, relation);
    EXECUTE format('SELECT sum(pg_catalog.fetch_intermediate_results(fetch_ids, fetch_host, fetch_port))
                      FROM %s WHERE fetch_ids IS NOT NULL', work);
    RETURN work;
END
$function$;

-- Every pair of rows within max_distance bits, found on the workers: each
-- bucket's pairs come back packed and go into the result unpacked, with no
-- table between (C, where 1.1 had PL/pgSQL).
CREATE OR REPLACE FUNCTION simhash_find_all_distributed(relation regclass, id_column name, fingerprint_column name,
                                                        max_distance integer DEFAULT 3)
RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_find_all_distributed' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;

-- The clusters of those pairs: each bucket's clusters of each pass, joined on
-- the coordinator.
CREATE OR REPLACE FUNCTION simhash_clusters_distributed(relation regclass, id_column name, fingerprint_column name,
                                                        max_distance integer DEFAULT 3,
                                                        include_singletons boolean DEFAULT false)
RETURNS TABLE(id bigint, cluster_id bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1000
    AS $function$
DECLARE
    work regclass;
    edges text;
BEGIN
    IF relation IS NULL OR id_column IS NULL OR fingerprint_column IS NULL OR max_distance IS NULL
       OR include_singletons IS NULL THEN
        RETURN;
    END IF;
    work := simhash_partition_rows(relation, id_column, fingerprint_column, max_distance, 'simhash_clusters_distributed');
    IF work IS NULL THEN
        RETURN QUERY SELECT * FROM simhash_clusters(
            format('SELECT %I, %I FROM %s', id_column, fingerprint_column, relation), max_distance, NULL,
            include_singletons);
        RETURN;
    END IF;
    edges := format(
        $$WITH packed AS MATERIALIZED (
              SELECT (simhash_clusters_batches(batches, %1$s, rows, results)).batch
                FROM %2$s WHERE batches IS NOT NULL)
          SELECT u.id1, u.id2 FROM packed, LATERAL simhash_unpack_pairs(packed.batch) u$$,
        max_distance, work);
    IF include_singletons THEN
        -- Every row is a node: (id, id) edges put the lone ones in.
        edges := edges || format(' UNION ALL SELECT %1$I, %1$I FROM %2$s WHERE %3$I IS NOT NULL',
                                 id_column, relation, fingerprint_column);
    END IF;
    RETURN QUERY SELECT * FROM simhash_components(edges);
    EXECUTE format('DROP TABLE %s', work);
END
$function$;

---------------------------------------------------------------------------
-- Scope columns of simhash_mih (issue 21; src/index/mih/mih_scope.c,
-- docs/index.md): USING simhash_mih (domain, fp) answers
-- `domain = $1 AND hamming_within(fp, $2, k)` reading only that domain's
-- rows.  A scope column's operator class: its equality (strategy 1) and its
-- type's extended hash (support function 1, as hash partitioning uses it).
-- The integers are one family, with the equalities across widths, so that an
-- integer column meets a value of another width (drivers send small Python
-- ints as smallint): equal integers hash alike whatever their width.  Other
-- types: an operator class of the same two members.
---------------------------------------------------------------------------

CREATE OPERATOR FAMILY integer_mih_ops USING simhash_mih;
DO $scope$
DECLARE
    scope record;
BEGIN
    FOR scope IN SELECT * FROM (VALUES ('text', 'text_mih_ops', 'hashtextextended', NULL),
                                       ('uuid', 'uuid_mih_ops', 'uuid_hash_extended', NULL),
                                       ('smallint', 'int2_mih_ops', 'hashint2extended', 'integer_mih_ops'),
                                       ('integer', 'int4_mih_ops', 'hashint4extended', 'integer_mih_ops'),
                                       ('bigint', 'int8_mih_ops', 'hashint8extended', 'integer_mih_ops'))
                             AS t(type, opclass, hash, family)
    LOOP
        EXECUTE format('CREATE OPERATOR CLASS %1$I DEFAULT FOR TYPE %2$s USING simhash_mih %3$s AS '
                       'OPERATOR 1 = (%2$s, %2$s), FUNCTION 1 %4$s(%2$s, bigint)',
                       scope.opclass, scope.type,
                       CASE WHEN scope.family IS NULL THEN '' ELSE format('FAMILY %I', scope.family) END,
                       scope.hash);
    END LOOP;
    FOR scope IN SELECT a.t AS left_type, b.t AS right_type
                 FROM unnest(ARRAY['smallint', 'integer', 'bigint']) a(t), unnest(ARRAY['smallint', 'integer', 'bigint']) b(t)
                 WHERE a.t <> b.t
    LOOP
        EXECUTE format('ALTER OPERATOR FAMILY integer_mih_ops USING simhash_mih ADD OPERATOR 1 = (%s, %s)',
                       scope.left_type, scope.right_type);
    END LOOP;
END
$scope$;
