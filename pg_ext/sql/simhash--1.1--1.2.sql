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
-- src/find_all/find_all_distributed.c, docs/citus.md): each shard's rows go
-- to the search's passes as batches of entries through Citus's intermediate
-- results, with no work table of copies.  The 1.1 helpers
-- (simhash_partition_key, simhash_find_all_part) stay for code that calls them.
---------------------------------------------------------------------------

-- A shard's (id, simhash64) rows as batches of entries, each row once per
-- pass of the search (max_distance + 1 passes), in part bucket * passes + pass;
-- rows is the number of rows of the whole run (it sets the search's layout).
CREATE FUNCTION simhash_partition_batches(sql text, max_distance integer, rows bigint, buckets integer)
RETURNS TABLE(part integer, batch bytea)
    AS 'MODULE_PATHNAME', 'simhash_partition_batches' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_partition_batches(text, integer, bigint, integer) IS
    'the query''s (id, simhash64) rows as batches of entries, once per pass of the search, by bucket (simhash_find_all_distributed)';

-- The same batches, into the Citus intermediate results <result_prefix>_<bucket>
-- (one per bucket, empty or not), as worker_partition_query_result would
-- write them from simhash_partition_batches, but with less copying.
CREATE FUNCTION simhash_write_batches(sql text, max_distance integer, rows bigint, buckets integer,
                                      result_prefix text)
RETURNS void
    AS 'MODULE_PATHNAME', 'simhash_write_batches' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_write_batches(text, integer, bigint, integer, text) IS
    'simhash_partition_batches into Citus intermediate results, one per bucket (simhash_find_all_distributed)';

-- The pairs of one bucket, packed (simhash_unpack_pairs): sql returns its
-- (part, batch) rows, each batch of pass part mod passes.  results, when
-- given, names the Citus intermediate results that sql reads: their files
-- are then read directly where Citus keeps them (the query runs otherwise).
CREATE FUNCTION simhash_find_all_batches(sql text, max_distance integer, rows bigint, results text[] DEFAULT NULL)
RETURNS TABLE(pairs integer, batch bytea)
    AS 'MODULE_PATHNAME', 'simhash_find_all_batches' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_find_all_batches(text, integer, bigint, text[]) IS
    'pairs within max_distance bits among the batches of one bucket, pass by pass, packed (simhash_find_all_distributed)';

-- The same as edges for clusters: each row with a pair, with an id of its
-- component among the pairs of the pass (distance 0).
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
-- batches; rows: the number of rows in all); otherwise (or with no rows)
-- returns NULL.
--
-- The work table holds a few rows per node and per bucket, no copies of
-- rows.  It is distributed (as many shards as the relation, each on one
-- node only, so that the node of each row is known), and Citus's ordinary
-- distributed queries over it run its rows on the workers, in parallel and
-- in the caller's transaction:
--   1. sources: a few rows per node, each reading some of the node's shards
--      of the relation: worker_partition_query_result() runs
--      simhash_partition_batches over them and writes its batches into a
--      file per bucket;
--   2. fetches: a row per pair of nodes: fetch_intermediate_results()
--      copies one node's files of the other's buckets;
--   3. buckets: simhash_find_all_batches or simhash_clusters_batches (run by
--      the caller) reads the bucket's files (read_intermediate_results) and
--      searches its passes.
-- Citus removes the files at the end of the transaction.
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
    work_shards integer;
    split integer;
    buckets integer;
    -- The passes of the search: its tables grouped by their lowest block, one
    -- per block 0 .. max_distance (find_all.h; simhash_partition_batches checks).
    passes integer := max_distance + 1;
    work_name text;
    work regclass;
    work_slots bigint[];
    work_groups integer[];
    source_shards text[];
    source_groups integer[];
    node_groups integer[];
    node_hosts text[];
    node_ports integer[];
    task_slots bigint[];
    task_groups integer[];
    task_prefixes text[];
    task_queries text[];
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

    -- The rows, for the layout of the search and the number of buckets: a 1%
    -- sample of the pages of a big heap table, as a count of every row takes
    -- as long as reading them; counted when the sample is small.
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

    -- Each shard of the relation: its name and a node that has it.
    SELECT array_agg(pg_catalog.shard_name(relation, shardid) ORDER BY shardid), array_agg(groupid ORDER BY shardid)
      INTO source_shards, source_groups
      FROM (SELECT DISTINCT ON (s.shardid) s.shardid, p.groupid
              FROM pg_catalog.pg_dist_shard s
              JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid AND p.shardstate = 1
             WHERE s.logicalrelid = relation
             ORDER BY s.shardid, p.groupid) x;
    shards := cardinality(source_shards);
    SELECT array_agg(n.groupid ORDER BY n.groupid), array_agg(n.nodename ORDER BY n.groupid),
           array_agg(n.nodeport ORDER BY n.groupid)
      INTO node_groups, node_hosts, node_ports
      FROM pg_catalog.pg_dist_node n
     WHERE n.noderole = 'primary' AND n.groupid IN (SELECT unnest(source_groups));
    nodes := cardinality(node_groups);

    -- Files of about 64k rows (4 MB) at least: each of the `split` sources
    -- writes a file per bucket, a file costs about what 10k rows do.  Up to a
    -- source and a bucket per shard of the relation, so that every core works;
    -- and enough buckets that a bucket's passes (all read at once, 18 bytes a
    -- row) fit in maintenance_work_mem on a worker twice over.
    split := least(shards, greatest(nodes, ceil(sqrt(fingerprints / 65536.0))));
    -- A shard of the work table per source or bucket that runs at once, and
    -- one on every node that may hold it (Citus places them round robin).
    SELECT greatest(split, count(*)) INTO work_shards FROM pg_catalog.pg_dist_node
     WHERE shouldhaveshards AND isactive AND noderole = 'primary';
    buckets := greatest(split,
                        ceil(fingerprints * passes * 36.0
                             / pg_catalog.pg_size_bytes(current_setting('maintenance_work_mem'))));

    work_name := format('simhash_work_%s_%s', pg_catalog.pg_backend_pid(), substr(md5(random()::text), 1, 8));
    EXECUTE format('CREATE UNLOGGED TABLE %I (slot bigint, rows bigint, scatter text, result_prefix text,
                                              fetch_ids text[], fetch_host text, fetch_port integer,
                                              batches text, results text[])',
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

    -- 1. The sources: on each node, up to split / nodes of them, each reading
    -- every so-many of its shards, on the node's shards of the work table.
    WITH source AS (
        SELECT shard, grp, row_number() OVER (PARTITION BY grp ORDER BY i) - 1 AS r,
               count(*) OVER (PARTITION BY grp) AS n
          FROM unnest(source_shards, source_groups) WITH ORDINALITY u(shard, grp, i)),
    slot AS (
        SELECT slot, grp, row_number() OVER (PARTITION BY grp ORDER BY i) - 1 AS r,
               count(*) OVER (PARTITION BY grp) AS n
          FROM unnest(work_slots, work_groups) WITH ORDINALITY u(slot, grp, i)),
    task AS (
        SELECT source.grp, source.r % least(source.n, slot.n, ceil(split::numeric / nodes)) AS task,
               string_agg(format('SELECT %I, %I FROM %s', id_column, fingerprint_column, source.shard),
                          ' UNION ALL ' ORDER BY source.r) AS query
          FROM source JOIN (SELECT grp, max(n) AS n FROM slot GROUP BY grp) slot USING (grp)
         GROUP BY 1, 2)
    SELECT array_agg(slot.slot), array_agg(task.grp), array_agg(format('%s_%s_%s', work_name, task.grp, task.task)),
           array_agg(task.query)
      INTO task_slots, task_groups, task_prefixes, task_queries
      FROM task JOIN slot ON slot.grp = task.grp AND slot.r = task.task;
    EXECUTE format('INSERT INTO %s (slot, scatter, result_prefix) SELECT * FROM unnest($1, $2, $3)', work)
        USING task_slots, task_queries, task_prefixes;
    -- Bucket b is searched on the work table's shard number b mod work_shards.
    -- 2. A fetch per node and other node: the other's files of the node's buckets.
    EXECUTE format($sql$
        WITH bucket AS (
            SELECT b, ($1::integer[])[b %% $2 + 1] AS grp FROM generate_series(0, $3 - 1) b),
        slot AS (
            SELECT slot, grp, row_number() OVER (PARTITION BY grp ORDER BY i) - 1 AS r,
                   count(*) OVER (PARTITION BY grp) AS n
              FROM unnest($4::bigint[], $1::integer[]) WITH ORDINALITY u(slot, grp, i)),
        pull AS (
            SELECT bucket.grp, task.grp AS source_grp, array_agg(format('%%s_%%s', task.prefix, bucket.b)) AS ids
              FROM bucket JOIN unnest($5::text[], $6::integer[]) task(prefix, grp) ON task.grp <> bucket.grp
             GROUP BY 1, 2)
        INSERT INTO %s (slot, fetch_ids, fetch_host, fetch_port)
        SELECT slot.slot, pull.ids, node.host, node.port
          FROM pull
          JOIN unnest($7::integer[], $8::text[], $9::integer[]) WITH ORDINALITY node(grp, host, port, i)
            ON node.grp = pull.source_grp
          JOIN slot ON slot.grp = pull.grp AND slot.r = node.i %% slot.n$sql$, work)
        USING work_groups, work_shards, buckets, work_slots, task_prefixes, task_groups, node_groups, node_hosts, node_ports;
    -- 3. A row per bucket: its results, and the query that reads them.
    EXECUTE format($sql$
        INSERT INTO %s (slot, rows, results, batches)
        SELECT slot, $3, results,
               format('SELECT r.part, r.batch FROM pg_catalog.read_intermediate_results(%%L::text[], ''binary'')
                           AS r(part integer, batch bytea)', results)
          FROM (SELECT ($1::bigint[])[b %% $2 + 1] AS slot,
                       ARRAY(SELECT prefix || '_' || b FROM unnest($4::text[]) prefix) AS results
                  FROM generate_series(0, $5 - 1) b) bucket$sql$, work)
        USING work_slots, work_shards, fingerprints, task_prefixes, buckets;
    -- Without statistics the planner on each worker expects many rows here,
    -- each returning ROWS 1000 rows, and compiles the queries with JIT.
    EXECUTE format('ANALYZE %s', work);

    -- Every file is written, empty or not, so that the lists above hold.
    EXECUTE format('SELECT count(*) FROM (SELECT simhash_write_batches(scatter, %s, %s, %s, result_prefix)
                                            FROM %s WHERE scatter IS NOT NULL) s',
                   max_distance, fingerprints, buckets, work);
    EXECUTE format('SELECT sum(pg_catalog.fetch_intermediate_results(fetch_ids, fetch_host, fetch_port))
                      FROM %s WHERE fetch_ids IS NOT NULL', work);
    RETURN work;
END
$function$;

-- Every pair of rows within max_distance bits, found on the workers.
CREATE OR REPLACE FUNCTION simhash_find_all_distributed(relation regclass, id_column name, fingerprint_column name,
                                                        max_distance integer DEFAULT 3)
RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1000
    AS $function$
DECLARE
    work regclass;
BEGIN
    IF relation IS NULL OR id_column IS NULL OR fingerprint_column IS NULL OR max_distance IS NULL THEN
        RETURN;
    END IF;
    work := simhash_partition_rows(relation, id_column, fingerprint_column, max_distance, 'simhash_find_all_distributed');
    IF work IS NULL THEN
        RETURN QUERY SELECT * FROM simhash_find_all(
            format('SELECT %I, %I FROM %s', id_column, fingerprint_column, relation), max_distance);
        RETURN;
    END IF;
    -- The batches come to the coordinator as they are (MATERIALIZED: the CTE
    -- runs on the workers, the rest here) and are unpacked here.
    RETURN QUERY EXECUTE format(
        $$WITH packed AS MATERIALIZED (
              SELECT (simhash_find_all_batches(batches, %1$s, rows, results)).batch
                FROM %2$s WHERE batches IS NOT NULL)
          SELECT u.* FROM packed, LATERAL simhash_unpack_pairs(packed.batch) u$$,
        max_distance, work);
    EXECUTE format('DROP TABLE %s', work);
END
$function$;

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
