#!/usr/bin/env bash
# pytest against one PostgreSQL (PG_MAJOR, else the one $PG_CONFIG names),
# with the extension freshly built into its private copy; arguments go to pytest.
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/venv.sh"
SIMHASH_PG_BINDIR=$("$ROOT/scripts/temp-install.sh")
export SIMHASH_PG_BINDIR
cd "$ROOT"
exec "$VENV/bin/python" -m pytest "$@"
