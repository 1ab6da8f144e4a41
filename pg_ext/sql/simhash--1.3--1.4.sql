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
