-- simhash extension, upgrade 1.0 -> 1.1
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.1'" to load this file. \quit

-- What 1.1 adds to 1.0.  A fresh CREATE EXTENSION runs simhash--1.0.sql and then
-- this script, so new and upgraded databases are built by the same statements
-- (docs/releasing.md).  Append new objects in sections headed by their concern.

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
