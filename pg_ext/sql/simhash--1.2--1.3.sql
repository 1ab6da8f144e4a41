-- simhash extension, upgrade 1.2 -> 1.3
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.3'" to load this file. \quit

---------------------------------------------------------------------------
-- simhash_mih_stats (issue 29; src/index/mih/mih_stats.c, docs/index.md):
-- a simhash_mih index's write path from its metapage: pending rows (read
-- whole by every query), run sets and their rows (each probed by every
-- query), retired entries awaiting recycling, flushes, merges and the rows
-- merges rewrote.  Granted as pgstattuple's functions are.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_mih_stats(index regclass,
    OUT pending_rows bigint, OUT run_sets integer, OUT set_rows bigint[],
    OUT retired integer, OUT flushes bigint, OUT merges bigint, OUT merged_rows bigint)
    AS 'MODULE_PATHNAME', 'simhash_mih_stats'
    LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
REVOKE ALL ON FUNCTION simhash_mih_stats(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_mih_stats(regclass) TO pg_stat_scan_tables;
