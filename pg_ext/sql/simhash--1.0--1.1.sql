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
-- Concurrent dedupe: simhash_lock_near (src/lock_near.c)
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
