/*
 * lock_near.c — simhash_lock_near: transaction-scoped advisory locks that make
 * "check for a near-duplicate, insert if none" safe with concurrent writers.
 *
 * Two transactions that lock fingerprints within k bits of each other (with
 * the same k and scope) must serialize; unrelated fingerprints should almost
 * never wait.  The pigeonhole principle gives both: cut the 64 bits into k + 1
 * contiguous blocks; two fingerprints within k bits differ in at most k of
 * them, so they are equal on at least one block.  Locking one key per block,
 * (scope, k, block number, the block's bits), therefore gives every such pair
 * a common lock.  Two unrelated fingerprints share a key only when they agree
 * on a whole block of 64 / (k + 1) bits: for k = 3, 4 blocks of 16 bits, a
 * chance of about 4 / 65536 per pair.  Keys are hashed into the 64-bit
 * advisory-lock space; a collision there only makes two writers wait for each
 * other, never lets a pair through.
 *
 * The keys are taken in ascending order, so two transactions each making one
 * call can never deadlock (simhash_lock_near_batch locks a whole batch in one order).
 */
#include "simhash.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

#include "blocks/permute.h"
#include "type/hamming.h"

/* Separates these keys from other users of 64-bit advisory locks (any constant). */
#define SIMHASH_LOCK_SEED UINT64CONST(0x73696d686173686c)

static int
compare_keys(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* The lock keys of one fingerprint: nkeys of them, appended at keys[*n]. */
static void
add_lock_keys(int64 *keys, int *n, uint64 scope_hash, int k, simhash64 fp)
{
	SimhashBlocks blocks;

	if (k + 1 > SIMHASH_MAX_BLOCKS)
	{
		/* Blocks of two bits or fewer: nearly everything collides anyway. */
		keys[(*n)++] = (int64) hash_combine64(scope_hash, (uint64) k);
		return;
	}
	simhash_blocks_init(&blocks, k + 1);
	for (int i = 0; i < blocks.nblocks; i++)
	{
		uint64		block = fp & blocks.mask[i];
		uint64		key = hash_combine64(scope_hash, hash_bytes_uint32_extended((uint32) (k << 8 | i), 0));

		keys[(*n)++] = (int64) hash_combine64(key, hash_bytes_extended((const unsigned char *) &block,
																	   sizeof(block), 0));
	}
}

static int
keys_per_fingerprint(int k)
{
	return k + 1 > SIMHASH_MAX_BLOCKS ? 1 : k + 1;
}

/* Checks the arguments every form shares; returns the scope's hash. */
static uint64
lock_setup(FunctionCallInfo fcinfo)
{
	text	   *scope;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("max_distance of simhash_lock_near must not be NULL"));
	simhash_check_radius(PG_GETARG_INT32(1));

	/*
	 * Under REPEATABLE READ the transaction's snapshot is taken before the
	 * lock is granted, so the check that follows cannot see a near-duplicate
	 * the other writer committed meanwhile: the lock would protect nothing.
	 * SERIALIZABLE detects that conflict by itself.
	 */
	if (IsolationUsesXactSnapshot() && !IsolationIsSerializable())
		ereport(ERROR,
				errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				errmsg("simhash_lock_near does not protect a REPEATABLE READ transaction"),
				errdetail("Its snapshot predates the lock, so the near-duplicate check after it "
						  "cannot see rows that a writer holding the lock committed."),
				errhint("Use READ COMMITTED (the default), or SERIALIZABLE."));

	if (PG_ARGISNULL(2))
		return SIMHASH_LOCK_SEED;
	scope = PG_GETARG_TEXT_PP(2);
	return hash_bytes_extended((const unsigned char *) VARDATA_ANY(scope),
							   VARSIZE_ANY_EXHDR(scope), SIMHASH_LOCK_SEED);
}

/* Takes the advisory locks in ascending order, each distinct key once. */
static void
lock_keys(int64 *keys, int n)
{
	qsort(keys, n, sizeof(int64), compare_keys);
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && keys[i] == keys[i - 1])
			continue;
		DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(keys[i]));
	}
}

PG_FUNCTION_INFO_V1(simhash_lock_near);
Datum
simhash_lock_near(PG_FUNCTION_ARGS)
{
	uint64		scope_hash = lock_setup(fcinfo);
	int			k = PG_GETARG_INT32(1);
	int64		keys[SIMHASH_MAX_BLOCKS];
	int			n = 0;

	if (!PG_ARGISNULL(0))
	{
		add_lock_keys(keys, &n, scope_hash, k, PG_GETARG_SIMHASH64(0));
		lock_keys(keys, n);
	}
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(simhash_lock_near_batch);
Datum
simhash_lock_near_batch(PG_FUNCTION_ARGS)
{
	uint64		scope_hash = lock_setup(fcinfo);
	int			k = PG_GETARG_INT32(1);
	ArrayType  *fps;
	Datum	   *values;
	bool	   *nulls;
	int			count;
	int64	   *keys;
	int			n = 0;

	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	fps = PG_GETARG_ARRAYTYPE_P(0);
	deconstruct_array(fps, ARR_ELEMTYPE(fps), sizeof(simhash64), true, TYPALIGN_DOUBLE,
					  &values, &nulls, &count);
	if ((Size) count > MaxAllocSize / sizeof(int64) / keys_per_fingerprint(k))
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("too many fingerprints to lock at once: %d", count));
	keys = palloc(sizeof(int64) * count * keys_per_fingerprint(k));
	for (int i = 0; i < count; i++)
		if (!nulls[i])
			add_lock_keys(keys, &n, scope_hash, k, DatumGetSimhash64(values[i]));
	lock_keys(keys, n);
	PG_RETURN_VOID();
}
