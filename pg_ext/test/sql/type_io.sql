-- simhash64 text and binary I/O
SELECT '0'::simhash64, '18446744073709551615'::simhash64, '42'::simhash64;
SELECT '  7  '::simhash64, E'\t9\n'::simhash64;
SELECT '0x0'::simhash64, '0xff'::simhash64, '0XFF'::simhash64, '0xFFFFFFFFFFFFFFFF'::simhash64;
SELECT '0x0000000000000001'::simhash64, '00000000000000000000000042'::simhash64;

-- round trips through text
SELECT v, v::text::simhash64 = v AS text_ok
FROM (VALUES ('0'::simhash64), ('1'), ('9223372036854775807'), ('9223372036854775808'),
             ('18446744073709551615')) AS t(v);
-- binary form: 8 bytes, most significant first
SELECT simhash64_send('1'::simhash64), simhash64_send('18446744073709551615'::simhash64);

-- every malformed literal is an ERROR that quotes it
SELECT ''::simhash64;
SELECT '   '::simhash64;
SELECT '-1'::simhash64;
SELECT '+1'::simhash64;
SELECT '-0'::simhash64;
SELECT '12abc'::simhash64;
SELECT '1 2'::simhash64;
SELECT '1.0'::simhash64;
SELECT '1e3'::simhash64;
SELECT '0x'::simhash64;
SELECT '0xg'::simhash64;
SELECT '0x-1'::simhash64;
SELECT 'x10'::simhash64;
SELECT '0x10000000000000000'::simhash64;
SELECT '0x00000000000000000'::simhash64;
SELECT '18446744073709551616'::simhash64;
SELECT '99999999999999999999999'::simhash64;
SELECT 'NaN'::simhash64;

-- the SQLSTATEs callers can rely on
\set VERBOSITY sqlstate
SELECT 'abc'::simhash64;
SELECT '18446744073709551616'::simhash64;
\set VERBOSITY default

-- COPY in binary form round-trips through send and receive; the file lives in
-- the server's own data directory (never a path that another run or another
-- user on the machine could share)
CREATE TEMP TABLE io (v simhash64);
INSERT INTO io VALUES ('0'), ('1'), ('18446744073709551615'), ('0x8000000000000000'), (NULL);
DO $$ BEGIN EXECUTE format('COPY io TO %L (FORMAT binary)', current_setting('data_directory') || '/simhash_regress_io.bin'); END $$;
CREATE TEMP TABLE io2 (v simhash64);
DO $$ BEGIN EXECUTE format('COPY io2 FROM %L (FORMAT binary)', current_setting('data_directory') || '/simhash_regress_io.bin'); END $$;
SELECT v FROM io2 ORDER BY v;
SELECT count(*) AS identical FROM io JOIN io2 USING (v);
