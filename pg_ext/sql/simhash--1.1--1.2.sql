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
