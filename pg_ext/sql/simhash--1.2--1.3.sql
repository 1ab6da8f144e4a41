-- simhash extension, upgrade 1.2 -> 1.3
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.3'" to load this file. \quit

---------------------------------------------------------------------------
-- The text fingerprint version 2 (issue 28; src/fingerprint/text_v2.c,
-- docs/fingerprint-spec.md §6): Unicode normalisation and case folding from
-- tables generated from one Unicode version, a token per character of the
-- scripts written without spaces.  simhash(text) stays version 1: fingerprints
-- of the two versions are not comparable, so the version is in the name.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_v2(document text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_text_v2'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_v2(text) IS
    'fingerprint of a text, spec version 2: Unicode-normalised tokens, shingles, XXH3-64, vote (docs/fingerprint-spec.md §6)';

CREATE FUNCTION simhash_v2_tokens(document text) RETURNS text[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_v2_tokens(text) IS
    'the tokens of a text under spec version 2 (docs/fingerprint-spec.md §6.3)';
CREATE FUNCTION simhash_v2_features(document text) RETURNS text[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_v2_features(text) IS
    'the features of a text under spec version 2, each hashed by simhash_feature_hash (docs/fingerprint-spec.md §6.4)';

---------------------------------------------------------------------------
-- simhash_mih_stats (issue 29; src/index/mih/mih_stats.c, docs/index.md):
-- a simhash_mih index's write path from its metapage: pending rows (read
-- whole by every query) and the sealed ones a flush is sorting, run sets and
-- their rows (each probed by every query), retired entries awaiting
-- recycling and recyclings done, flushes, merges and the rows merges rewrote,
-- the run sets merges are rewriting now (each merge in a background worker,
-- pg_stat_activity's backend_type 'simhash_mih merge'), whether a failed
-- flush or merge left pages for the next VACUUM to free.  Granted as
-- pgstattuple's functions are.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_mih_stats(index regclass,
    OUT pending_rows bigint, OUT sealed_rows bigint, OUT run_sets integer, OUT set_rows bigint[],
    OUT retired integer, OUT recycled bigint, OUT flushes bigint, OUT merges bigint,
    OUT merged_rows bigint, OUT merging_sets integer, OUT lost_pages boolean)
    AS 'MODULE_PATHNAME', 'simhash_mih_stats'
    LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
REVOKE ALL ON FUNCTION simhash_mih_stats(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_mih_stats(regclass) TO pg_stat_scan_tables;

---------------------------------------------------------------------------
-- simhash_nn_histogram checks max_distance before it lists its distances
-- (docs/report.md): it listed 0..max_distance first, so a max_distance of
-- 2^31 - 1 generated two billion rows before simhash_nearest_distances
-- refused it.  The list stops at 64, the most a valid call asks; an invalid
-- one is still refused by simhash_nearest_distances (invalid_parameter_value).
---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION simhash_nn_histogram(relation regclass, id_column name, fingerprint_column name,
                                                scope_column name DEFAULT NULL, sample_size integer DEFAULT 2000,
                                                max_distance integer DEFAULT 16)
RETURNS TABLE (distance integer, documents bigint)
LANGUAGE sql VOLATILE PARALLEL RESTRICTED AS $fn$
    WITH nearest AS (
        SELECT n.distance FROM simhash_nearest_distances(relation, id_column, fingerprint_column,
                                                         scope_column, sample_size, max_distance) n
    )
    SELECT d.distance, count(n.distance)
    FROM generate_series(0, least(max_distance, 64)) AS d(distance) LEFT JOIN nearest n ON n.distance = d.distance
    GROUP BY d.distance
    UNION ALL
    SELECT NULL, count(*) FILTER (WHERE n.distance IS NULL) FROM nearest n
    ORDER BY 1 NULLS LAST
$fn$;
