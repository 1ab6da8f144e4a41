-- Run once by the postgres image's entrypoint, when it initialises an empty
-- data directory: the simhash extension in the application database
-- ($POSTGRES_DB), and in template1 so every database created later has it.
CREATE EXTENSION IF NOT EXISTS simhash;
\connect template1
CREATE EXTENSION IF NOT EXISTS simhash;
