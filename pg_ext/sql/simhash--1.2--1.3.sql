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
-- pg_stat_activity's backend_type 'simhash_mih merge').  Granted as
-- pgstattuple's functions are.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_mih_stats(index regclass,
    OUT pending_rows bigint, OUT sealed_rows bigint, OUT run_sets integer, OUT set_rows bigint[],
    OUT retired integer, OUT recycled bigint, OUT flushes bigint, OUT merges bigint,
    OUT merged_rows bigint, OUT merging_sets integer)
    AS 'MODULE_PATHNAME', 'simhash_mih_stats'
    LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
REVOKE ALL ON FUNCTION simhash_mih_stats(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_mih_stats(regclass) TO pg_stat_scan_tables;
