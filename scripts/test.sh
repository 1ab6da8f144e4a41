#!/usr/bin/env bash
# The whole test suite against one PostgreSQL (PG_MAJOR, else the one
# $PG_CONFIG names): the extension's pg_regress suite, then pytest, each on
# its own throwaway cluster running the freshly built extension.  Arguments go
# to pytest.  The cross-version tests (pg_upgrade, dump and restore between
# majors) are left to scripts/test-all.sh, which has every major at hand.
. "$(dirname "$0")/lib.sh"

echo "== $("$PG_CONFIG" --version) ($PG_CONFIG)"
# Build and install once; regress.sh and pytest.sh take the installation from here.
SIMHASH_INSTALLED_BINDIR=$("$ROOT/scripts/temp-install.sh")
export SIMHASH_INSTALLED_BINDIR
"$ROOT/scripts/regress.sh"
exec "$ROOT/scripts/pytest.sh" -m "not cross_version" "$@"
