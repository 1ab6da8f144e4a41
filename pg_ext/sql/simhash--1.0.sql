-- simhash extension, version 1.0
\echo Use "CREATE EXTENSION simhash" to load this file. \quit

---------------------------------------------------------------------------
-- The simhash64 type: an unsigned 64-bit fingerprint, passed by value.
---------------------------------------------------------------------------

CREATE TYPE simhash64;

CREATE FUNCTION simhash64_in(cstring) RETURNS simhash64
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_out(simhash64) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_recv(internal) RETURNS simhash64
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_send(simhash64) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE simhash64 (
    INPUT = simhash64_in,
    OUTPUT = simhash64_out,
    RECEIVE = simhash64_recv,
    SEND = simhash64_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain
);

COMMENT ON TYPE simhash64 IS
    'unsigned 64-bit simhash fingerprint; input as decimal or 0x-prefixed hex';

---------------------------------------------------------------------------
-- Casts
---------------------------------------------------------------------------

-- bigint <-> simhash64 reinterpret the same 64 bits (two's complement), so
-- ALTER TABLE ... TYPE simhash64 USING h::simhash64 is lossless both ways.
CREATE CAST (bigint AS simhash64) WITHOUT FUNCTION AS ASSIGNMENT;
CREATE CAST (simhash64 AS bigint) WITHOUT FUNCTION;

CREATE FUNCTION simhash64(bytea) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'bytea_to_simhash64' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bytea(simhash64) RETURNS bytea
    AS 'MODULE_PATHNAME', 'simhash64_to_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (bytea AS simhash64) WITH FUNCTION simhash64(bytea);
CREATE CAST (simhash64 AS bytea) WITH FUNCTION bytea(simhash64);

CREATE FUNCTION simhash64(bit) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'bit_to_simhash64' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION "bit"(simhash64) RETURNS bit
    AS 'MODULE_PATHNAME', 'simhash64_to_bit' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (bit AS simhash64) WITH FUNCTION simhash64(bit);
CREATE CAST (simhash64 AS bit) WITH FUNCTION "bit"(simhash64);

CREATE FUNCTION simhash64_to_hex(simhash64) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash64_to_hex(simhash64) IS
    'the fingerprint as 0x followed by 16 lowercase hex digits';

---------------------------------------------------------------------------
-- Comparison: unsigned order; btree and hash operator classes
---------------------------------------------------------------------------

CREATE FUNCTION simhash64_eq(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_ne(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_lt(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_le(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_gt(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_ge(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_cmp(simhash64, simhash64) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_sortsupport(internal) RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_hash(simhash64) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_hash_extended(simhash64, bigint) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_larger(simhash64, simhash64) RETURNS simhash64
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_smaller(simhash64, simhash64) RETURNS simhash64
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR = (
    LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash64_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash64_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash64_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash64_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash64_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = simhash64, RIGHTARG = simhash64, PROCEDURE = simhash64_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS simhash64_btree_ops
    DEFAULT FOR TYPE simhash64 USING btree AS
        OPERATOR 1 <,
        OPERATOR 2 <=,
        OPERATOR 3 =,
        OPERATOR 4 >=,
        OPERATOR 5 >,
        FUNCTION 1 simhash64_cmp(simhash64, simhash64),
        FUNCTION 2 simhash64_sortsupport(internal);

CREATE OPERATOR CLASS simhash64_hash_ops
    DEFAULT FOR TYPE simhash64 USING hash AS
        OPERATOR 1 =,
        FUNCTION 1 simhash64_hash(simhash64),
        FUNCTION 2 simhash64_hash_extended(simhash64, bigint);

CREATE AGGREGATE min(simhash64) (
    SFUNC = simhash64_smaller, STYPE = simhash64, SORTOP = <,
    COMBINEFUNC = simhash64_smaller, PARALLEL = SAFE
);
CREATE AGGREGATE max(simhash64) (
    SFUNC = simhash64_larger, STYPE = simhash64, SORTOP = >,
    COMBINEFUNC = simhash64_larger, PARALLEL = SAFE
);

---------------------------------------------------------------------------
-- Hamming distance
---------------------------------------------------------------------------

CREATE FUNCTION hamming_distance(simhash64, simhash64) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash64_hamming_distance'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION hamming_distance(simhash64, simhash64) IS
    'number of bit positions in which two fingerprints differ (0..64)';

CREATE OPERATOR <~> (
    LEFTARG = simhash64, RIGHTARG = simhash64,
    PROCEDURE = hamming_distance, COMMUTATOR = <~>
);

CREATE FUNCTION hamming_within(a simhash64, b simhash64, k integer) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash64_hamming_within'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION hamming_within(simhash64, simhash64, integer) IS
    'true when the fingerprints differ in at most k bits (0 <= k <= 64)';

---------------------------------------------------------------------------
-- Computing fingerprints (docs/fingerprint-spec.md)
---------------------------------------------------------------------------

CREATE FUNCTION simhash(feature_hashes bigint[]) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_from_hashes'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash(bigint[]) IS
    'bitwise majority vote of 64-bit feature hashes, as simhash-py''s compute()';

CREATE FUNCTION simhash(feature_hashes bigint[], weights float8[]) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_from_weighted_hashes'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash(bigint[], float8[]) IS
    'weighted bitwise vote: bit i is set iff the weights of hashes with it set outweigh the rest';

CREATE FUNCTION simhash(document text, shingle_size integer DEFAULT 3) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash(text, integer) IS
    'fingerprint of a text: tokens, shingles, XXH3-64, vote (docs/fingerprint-spec.md)';

CREATE FUNCTION simhash_tokens(document text) RETURNS text[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_shingles(document text, shingle_size integer DEFAULT 3) RETURNS text[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_feature_hash(feature text) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- simhash_agg(bigint): the vote over a group's feature hashes, in parallel.
CREATE FUNCTION simhash_agg_transfn(internal, bigint) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION simhash_agg_combinefn(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION simhash_agg_serialfn(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_agg_deserialfn(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_agg_finalfn(internal) RETURNS simhash64
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE simhash_agg(bigint) (
    SFUNC = simhash_agg_transfn, STYPE = internal, SSPACE = 520,
    FINALFUNC = simhash_agg_finalfn,
    COMBINEFUNC = simhash_agg_combinefn,
    SERIALFUNC = simhash_agg_serialfn, DESERIALFUNC = simhash_agg_deserialfn,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE simhash_agg(bigint) IS
    'fingerprint of the feature hashes in a group (NULLs are skipped; no rows gives NULL)';

CREATE FUNCTION simhash_wagg_transfn(internal, bigint, float8) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION simhash_wagg_combinefn(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION simhash_wagg_serialfn(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_wagg_deserialfn(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash_wagg_finalfn(internal) RETURNS simhash64
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE simhash_agg(bigint, float8) (
    SFUNC = simhash_wagg_transfn, STYPE = internal, SSPACE = 1024,
    FINALFUNC = simhash_wagg_finalfn,
    COMBINEFUNC = simhash_wagg_combinefn,
    SERIALFUNC = simhash_wagg_serialfn, DESERIALFUNC = simhash_wagg_deserialfn,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE simhash_agg(bigint, float8) IS
    'weighted fingerprint of a group (rows with a NULL hash or weight are skipped)';

---------------------------------------------------------------------------
-- find_all and clusters: every pair within k bits, and the connected
-- components of those pairs (docs/find_all.md)
---------------------------------------------------------------------------

-- The query variants run arbitrary SQL with the caller's privileges, hence
-- VOLATILE and PARALLEL UNSAFE.  Not STRICT: blocks NULL means "choose".
CREATE FUNCTION simhash_find_all(sql text, max_distance integer DEFAULT 3,
                                 blocks integer DEFAULT NULL)
    RETURNS TABLE(id1 bigint, id2 bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_find_all_query'
    LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_find_all(text, integer, integer) IS
    'every pair of rows (id, simhash64) of the query within max_distance bits, once, id1 < id2';

CREATE FUNCTION simhash_find_all(hashes simhash64[], max_distance integer DEFAULT 3,
                                 blocks integer DEFAULT NULL)
    RETURNS TABLE(hash1 simhash64, hash2 simhash64, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_find_all_array'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION simhash_find_all(simhash64[], integer, integer) IS
    'every pair of distinct fingerprints within max_distance bits, hash1 < hash2, as simhash-py''s find_all';

CREATE FUNCTION simhash_clusters(sql text, max_distance integer DEFAULT 3,
                                 blocks integer DEFAULT NULL,
                                 include_singletons boolean DEFAULT false)
    RETURNS TABLE(id bigint, cluster_id bigint)
    AS 'MODULE_PATHNAME', 'simhash_clusters_query'
    LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION simhash_clusters(text, integer, integer, boolean) IS
    'connected components of the pairs simhash_find_all finds; cluster_id is the smallest id of the cluster';

CREATE FUNCTION simhash_clusters(hashes simhash64[], max_distance integer DEFAULT 3,
                                 blocks integer DEFAULT NULL,
                                 include_singletons boolean DEFAULT false)
    RETURNS TABLE(hash simhash64, cluster_id simhash64)
    AS 'MODULE_PATHNAME', 'simhash_clusters_array'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION simhash_clusters(simhash64[], integer, integer, boolean) IS
    'connected components of distinct fingerprints within max_distance bits; cluster_id is the smallest hash';

---------------------------------------------------------------------------
-- Index: GIN operator class simhash64_ops (permutation tables, Manku et al.)
--   CREATE INDEX ON docs USING gin (fp simhash64_ops (blocks = 5, max_distance = 4));
--   ... WHERE hamming_within(fp, q, k)        -- index-aware via its support function
--   ... WHERE fp <@ hamming_ball(q, k)        -- the operator form
-- Exact for every k: up to max_distance by key lookup, beyond by a full index scan.
---------------------------------------------------------------------------

CREATE TYPE simhash64_ball AS (center simhash64, radius integer);
COMMENT ON TYPE simhash64_ball IS
    'every fingerprint within radius bits of center: the query value of simhash64_ops';

-- Plain SQL, not STRICT, so the planner inlines it into ROW(center, radius).
CREATE FUNCTION hamming_ball(center simhash64, radius integer) RETURNS simhash64_ball
    AS 'SELECT ROW(center, radius)::simhash64_ball'
    LANGUAGE SQL IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION simhash64_in_ball(simhash64, simhash64_ball) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_ball_restrict(internal, oid, internal, integer) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_ball_joinsel(internal, oid, internal, smallint, internal) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <@ (
    LEFTARG = simhash64, RIGHTARG = simhash64_ball, PROCEDURE = simhash64_in_ball,
    RESTRICT = simhash64_ball_restrict, JOIN = simhash64_ball_joinsel
);
COMMENT ON OPERATOR <@ (simhash64, simhash64_ball) IS
    'fingerprint lies within the ball: hamming_within(fp, center, radius)';

CREATE FUNCTION hamming_within_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION hamming_within(simhash64, simhash64, integer) SUPPORT hamming_within_support;

CREATE FUNCTION simhash64_gin_extract_value(simhash64, internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_gin_extract_query(simhash64_ball, internal, smallint, internal,
                                            internal, internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_gin_consistent(internal, smallint, simhash64_ball, integer,
                                         internal, internal, internal, internal) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_gin_triconsistent(internal, smallint, simhash64_ball, integer,
                                            internal, internal, internal) RETURNS "char"
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION simhash64_gin_options(internal) RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE OPERATOR CLASS simhash64_ops
    DEFAULT FOR TYPE simhash64 USING gin AS
        OPERATOR 1 <@ (simhash64, simhash64_ball),
        FUNCTION 1 btint8cmp(bigint, bigint),
        FUNCTION 2 simhash64_gin_extract_value(simhash64, internal, internal),
        FUNCTION 3 simhash64_gin_extract_query(simhash64_ball, internal, smallint, internal,
                                               internal, internal, internal),
        FUNCTION 4 simhash64_gin_consistent(internal, smallint, simhash64_ball, integer,
                                            internal, internal, internal, internal),
        FUNCTION 6 simhash64_gin_triconsistent(internal, smallint, simhash64_ball, integer,
                                               internal, internal, internal),
        FUNCTION 7 simhash64_gin_options(internal),
        STORAGE bigint;

-- The n rows of a table nearest to q, exactly: the nearest rows within
-- max_radius bits (an index lookup when an index answers that radius), then,
-- only if there are fewer than n of those, the nearest of the others (a scan
-- of the whole table).  Call it with a NULL of the table's row type:
--   SELECT * FROM hamming_nearest(NULL::docs, 'fp', q, 10);
-- Rows come nearest first; rows tied at the last distance are picked arbitrarily.
CREATE FUNCTION hamming_nearest(rows_of anyelement, column_name name, q simhash64,
                                n integer, max_radius integer DEFAULT 3)
RETURNS SETOF anyelement
LANGUAGE plpgsql STABLE AS $$
DECLARE
    rows_from text := format('SELECT t.* FROM %s t WHERE', pg_typeof(rows_of));
    within text := format('hamming_within(t.%I, $1, $2)', column_name);
    nearest_first text := format('ORDER BY t.%I <~> $1 LIMIT $3', column_name);
    found bigint;
BEGIN
    IF n IS NULL OR n < 0 THEN
        RAISE EXCEPTION 'number of neighbours must be a non-negative integer, got %', n
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_radius IS NULL OR max_radius < 0 OR max_radius > 64 THEN
        RAISE EXCEPTION 'max_radius must be between 0 and 64, got %', max_radius
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY EXECUTE concat_ws(' ', rows_from, within, nearest_first)
        USING q, max_radius, n;
    GET DIAGNOSTICS found = ROW_COUNT;
    IF found < n THEN
        RETURN QUERY EXECUTE concat_ws(' ', rows_from, 'NOT', within, nearest_first)
            USING q, max_radius, n - found;
    END IF;
END
$$;
COMMENT ON FUNCTION hamming_nearest(anyelement, name, simhash64, integer, integer) IS
    'the n rows nearest to q (exact); index-assisted up to max_radius, a full scan beyond';
