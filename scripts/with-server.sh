#!/usr/bin/env bash
# with-server.sh NAME COMMAND...: runs COMMAND with a throwaway PostgreSQL
# server (the private installation, data under build/.../NAME), $SIMHASH_DSN
# and libpq's PG* variables pointing at it; the server is stopped when COMMAND
# ends.  The server is pysimhash_sql.throwaway's, as for every test server.
. "$(dirname "$0")/lib.sh"

name=$1
shift
"$ROOT/scripts/venv.sh"
# scripts/test.sh has built the installation already (SIMHASH_INSTALLED_BINDIR).
bindir=${SIMHASH_INSTALLED_BINDIR:-$("$ROOT/scripts/temp-install.sh")}
unset SIMHASH_INSTALLED_BINDIR
ensure_pg_user
export SIMHASH_PG_USER=$PG_USER PATH="$VENV/bin:$PATH"
exec "$VENV/bin/python" -m pysimhash_sql.throwaway --bindir "$bindir" \
    --directory "$(install_build_dir)/$name" --postgres-options "${SIMHASH_SERVER_OPTIONS:-}" -- "$@"
