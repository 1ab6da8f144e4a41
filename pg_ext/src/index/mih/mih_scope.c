/*
 * mih_scope.c — the scope columns of a simhash_mih index:
 *
 *     CREATE INDEX ON pages USING simhash_mih (domain, fingerprint);
 *     SELECT id FROM pages WHERE domain = $1 AND hamming_within(fingerprint, $2, 3);
 *
 * The columns before the last (the fingerprint) are the scope.  The index
 * keeps, in place of each row's fingerprint fp, fp XOR H, H a 64-bit hash of
 * the row's scope values; a query folds the hash of its scope into its
 * centre the same way.  XOR with one value keeps every distance, so within
 * a scope the index is exactly an index of the fingerprints alone: same
 * probes, same pages, every row within k bits found.  A row of another scope
 * differs from the query by H(its scope) XOR H(the query's) as well, a
 * random 64-bit value: it lands where an unrelated fingerprint would, so the
 * probes pass it by (within k bits of the query with the odds of a random
 * fingerprint, 2^-48 at k = 3, and then dropped by the heap's recheck).  A
 * page syndicated on 200 sites costs a scoped query one row, not 200, and
 * the index is no larger than one without scope: nothing more is stored.
 * (Measured against the alternatives in docs/index.md, "Scope columns".)
 *
 * A scope column's operator class gives its equality operator (strategy 1,
 * which the planner matches to `domain = $1`) and its hash (support
 * function 1, the type's extended hash, as hash partitioning uses it: stable
 * across versions and pg_upgrade).  A query that does not give every scope
 * column by equality cannot fold: it reads the whole index (mih_scan.c),
 * and the planner is told so (mih_am.c).
 *
 * Layer (mih.h): beside mih_utils.c at the bottom: uses no other file of the
 * index.
 */
#include "index/mih/mih.h"

#include "access/genam.h"
#include "access/skey.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* The support function of a scope column's operator class: its type's extended hash. */
#define MIH_SCOPE_HASH_PROC 1

/* The seed of every scope hash (any constant: an index's hashes must never change). */
#define MIH_SCOPE_SEED UINT64CONST(0x53484D4953434F50)

/*
 * The shape CREATE INDEX accepts: scope columns (an operator class with a
 * hash function), then the fingerprint (simhash64_mih_ops, which has none),
 * last and once.
 */
void
mih_scope_check_columns(Relation index)
{
	int			natts = IndexRelationGetNumberOfKeyAttributes(index);

	for (int i = 0; i < natts; i++)
	{
		bool		scope = OidIsValid(index_getprocid(index, i + 1, MIH_SCOPE_HASH_PROC));
		const char *column = NameStr(TupleDescAttr(RelationGetDescr(index), i)->attname);

		if (i < natts - 1 && !scope)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					errmsg("column \"%s\" of simhash_mih index \"%s\" is a fingerprint, but not its last column",
						   column, RelationGetRelationName(index)),
					errdetail("A simhash_mih index has one fingerprint column, last; the columns before it are its scope, compared by equality."),
					errhint("List the scope columns first: USING simhash_mih (domain, fingerprint)."));
		if (i == natts - 1 && scope)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					errmsg("the last column of simhash_mih index \"%s\", \"%s\", is not a simhash64 fingerprint",
						   RelationGetRelationName(index), column),
					errdetail("A simhash_mih index has one fingerprint column, last; the columns before it are its scope, compared by equality."),
					errhint("List the fingerprint last: USING simhash_mih (domain, fingerprint)."));
	}
}

/* The hash functions of the index's scope columns. */
void
mih_scope_init(MihScope *scope, Relation index)
{
	scope->ncolumns = IndexRelationGetNumberOfKeyAttributes(index) - 1;
	for (int i = 0; i < scope->ncolumns; i++)
	{
		scope->hash[i] = index_getprocinfo(index, i + 1, MIH_SCOPE_HASH_PROC);
		scope->collation[i] = index->rd_indcollation[i];
	}
}

/*
 * The hash of one scope column's value, with the index column's collation
 * (the one its equality compares with: the planner matches a clause to the
 * column only when their collations agree).
 */
uint64
mih_scope_hash(const MihScope *scope, int column, Datum value)
{
	return DatumGetUInt64(FunctionCall2Coll(scope->hash[column], scope->collation[column], value,
											UInt64GetDatum(MIH_SCOPE_SEED)));
}

/*
 * The hash of a scan key's value on a scope column: a value of another type
 * than the column's (an integer of another width: the equality across types
 * of the operator family) is hashed by its own type's function, which the
 * family guarantees to agree on equal values.
 */
uint64
mih_scope_hash_key(const MihScope *scope, Relation index, ScanKey key)
{
	int			column = key->sk_attno - 1;
	Oid			proc;

	if (!OidIsValid(key->sk_subtype) || key->sk_subtype == index->rd_opcintype[column])
		return mih_scope_hash(scope, column, key->sk_argument);
	proc = get_opfamily_proc(index->rd_opfamily[column], key->sk_subtype, key->sk_subtype,
							 MIH_SCOPE_HASH_PROC);
	if (!OidIsValid(proc))
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_FUNCTION),
				errmsg("operator family of column %d of simhash_mih index \"%s\" has no hash function for type %s",
					   column + 1, RelationGetRelationName(index), format_type_be(key->sk_subtype)));
	return DatumGetUInt64(OidFunctionCall2Coll(proc, scope->collation[column], key->sk_argument,
											   UInt64GetDatum(MIH_SCOPE_SEED)));
}

/* The scope's hash H from each column's (0 without scope columns: fp is kept as it is). */
uint64
mih_scope_combine(const MihScope *scope, const uint64 *hashes)
{
	uint64		h = 0;

	for (int i = 0; i < scope->ncolumns; i++)
		h = hash_combine64(h, hashes[i]);
	return h;
}

/*
 * The folded fingerprint of an index row (values and isnull as index_form
 * gives them: the scope columns, then the fingerprint); false when any is
 * NULL: such a row is not indexed (no query with `=` on every scope column
 * and a radius on the fingerprint can match it).
 */
bool
mih_fold(const MihScope *scope, const Datum *values, const bool *isnull, uint64 *fp)
{
	uint64		hashes[INDEX_MAX_KEYS];

	for (int i = 0; i <= scope->ncolumns; i++)
		if (isnull[i])
			return false;
	for (int i = 0; i < scope->ncolumns; i++)
		hashes[i] = mih_scope_hash(scope, i, values[i]);
	*fp = DatumGetSimhash64(values[scope->ncolumns]) ^ mih_scope_combine(scope, hashes);
	return true;
}
