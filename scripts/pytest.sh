#!/usr/bin/env bash
# pytest against one PostgreSQL (PG_MAJOR, else the one $PG_CONFIG names),
# with the extension freshly built into its private copy; arguments go to pytest.
# SIMHASH_DJANGO=4.2 runs in the Django 4.2 environment (scripts/venv.sh django42),
# SIMHASH_DJANGO_DRIVER=psycopg2 has Django on psycopg2 (tests/package/django/conftest.py).
. "$(dirname "$0")/lib.sh"

if [ "${SIMHASH_DJANGO:-}" = 4.2 ]; then
    "$ROOT/scripts/venv.sh" django42
    VENV=$DJANGO42_VENV
else
    "$ROOT/scripts/venv.sh"
fi
SIMHASH_PG_BINDIR=${SIMHASH_INSTALLED_BINDIR:-$("$ROOT/scripts/temp-install.sh")}
# Tests run the harness for other majors too: they build their own.
unset SIMHASH_INSTALLED_BINDIR
# The plugin's server (pysimhash_sql.pytest_plugin) and every other test
# server run from this installation, as the harness's server user when the
# tests run as root.
ensure_pg_user
SIMHASH_PG_USER=$PG_USER
export SIMHASH_PG_BINDIR SIMHASH_PG_USER
cd "$ROOT"
exec "$VENV/bin/python" -m pytest "$@"
