-- simhash extension, upgrade 1.3 -> 1.4
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.4'" to load this file. \quit

---------------------------------------------------------------------------
-- The n most similar rows (issue 50; src/index/mih/mih_scan_order.c,
-- docs/index.md): `ORDER BY fp <~> q LIMIT n` through a simhash_mih index,
-- the rows in increasing Hamming distance, exactly, the radius growing as the
-- scan needs it; `WHERE domain = $1 ORDER BY fp <~> q` through a scoped one
-- (domain, fp).  The ordering operator belongs to the fingerprint column's
-- operator class (the scope columns' classes compare by equality only), and
-- sorts as integers do.
---------------------------------------------------------------------------

ALTER OPERATOR FAMILY simhash64_mih_ops USING simhash_mih
    ADD OPERATOR 2 <~> (simhash64, simhash64) FOR ORDER BY pg_catalog.integer_ops;

-- hamming_nearest (1.0) is left as it is: each of its two statements is
-- `ORDER BY column <~> q LIMIT n` (the rows within max_radius bits, then the
-- others), so through a simhash_mih index both are the ordering scan above
-- (as fast as the ORDER BY itself), and through GIN the first is a lookup.
-- Only its description changes: beyond max_radius it no longer scans when
-- the column has a simhash_mih index.
COMMENT ON FUNCTION hamming_nearest(anyelement, name, simhash64, integer, integer) IS
    'the n rows nearest to q (exact): ORDER BY column <~> q LIMIT n, within max_radius first; '
    'a simhash_mih index orders both steps, GIN looks up the first';

---------------------------------------------------------------------------
-- Estimates from the data (issue 50; src/index/pair_distances.c): ANALYZE of
-- a simhash64 column keeps, beside the standard statistics, the share of its
-- sample's pairs within each distance, which the estimates of
-- hamming_within(fp, q, k) and fp <@ hamming_ball(q, k) read: on clustered
-- data the near copies, on random data the ball's volume.
---------------------------------------------------------------------------

CREATE FUNCTION simhash64_analyze(internal) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
ALTER TYPE simhash64 SET (ANALYZE = simhash64_analyze);

---------------------------------------------------------------------------
-- The text fingerprint version 3 (issue 48; src/fingerprint/text_v3.c,
-- docs/fingerprint-spec.md §8): version 2's normalisation with numbers as
-- tokens of their own, voting by the share of numbers in the text, and each
-- distinct feature voting at most 32 times.  simhash_v2 stays as it is:
-- fingerprints of two versions are not comparable.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_v3(document text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_text_v3'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_v3(text) IS
    'fingerprint of a text, spec version 3: version 2 with numbers as tokens weighed by their share, each feature voting at most 32 times (docs/fingerprint-spec.md §8)';

CREATE FUNCTION simhash_v3_tokens(document text) RETURNS text[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_v3_tokens(text) IS
    'the tokens of a text under spec version 3 (docs/fingerprint-spec.md §8.2)';
CREATE FUNCTION simhash_v3_features(document text, OUT feature text, OUT votes integer)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION simhash_v3_features(text) IS
    'the features of a text that vote under spec version 3, each hashed by simhash_feature_hash, with its votes (docs/fingerprint-spec.md §8.4)';
