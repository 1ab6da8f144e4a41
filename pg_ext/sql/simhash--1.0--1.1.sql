-- simhash extension, upgrade 1.0 -> 1.1
\echo Use "ALTER EXTENSION simhash UPDATE TO '1.1'" to load this file. \quit

-- What 1.1 adds to 1.0.  A fresh CREATE EXTENSION runs simhash--1.0.sql and then
-- this script, so new and upgraded databases are built by the same statements
-- (docs/releasing.md).  Append new objects in sections headed by their concern.
