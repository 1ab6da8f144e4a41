-- simhash_lock_near: advisory locks for concurrent near-duplicate checks.
CREATE FUNCTION held_locks() RETURNS bigint LANGUAGE sql AS
$$ SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() $$;

-- one lock per block: k + 1 blocks, so k + 1 locks, held until the transaction ends
BEGIN;
SELECT simhash_lock_near('0x0123456789abcdef', 3, 'example.org');
SELECT held_locks();
SELECT simhash_lock_near('0x0123456789abcdef', 0);
SELECT held_locks();
COMMIT;
SELECT held_locks();

-- the same fingerprint again takes no new lock; a near one shares a block
BEGIN;
SELECT simhash_lock_near('0x0123456789abcdef', 3, 's');
SELECT simhash_lock_near('0x0123456789abcdef', 3, 's');
SELECT held_locks();
SELECT simhash_lock_near('0x0123456789abcdee', 3, 's');   -- 1 bit away: 3 of 4 blocks equal
SELECT held_locks();
ROLLBACK;

-- a batch: every fingerprint's locks, shared ones once; NULLs lock nothing
BEGIN;
SELECT simhash_lock_near_batch(ARRAY['0x0123456789abcdef', '0x0123456789abcdee', NULL, '0xffff000000000000']::simhash64[], 3, 's');
SELECT held_locks();
SELECT simhash_lock_near(NULL::simhash64, 3, 's'), simhash_lock_near_batch(NULL, 3), simhash_lock_near_batch('{}');
SELECT held_locks();
ROLLBACK;

-- radii beyond 31 (blocks of 2 bits or fewer) lock the whole scope with one key
BEGIN;
SELECT simhash_lock_near('0', 40, 's'), simhash_lock_near('0xffffffffffffffff', 40, 's');
SELECT held_locks();
ROLLBACK;

-- errors: the radius, a NULL radius, and REPEATABLE READ (its snapshot predates the lock)
SELECT simhash_lock_near('0', 65);
SELECT simhash_lock_near('0', -1);
SELECT simhash_lock_near('0', NULL);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT simhash_lock_near('0', 3);
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT simhash_lock_near('0', 3);
ROLLBACK;
