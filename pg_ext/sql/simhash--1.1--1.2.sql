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
