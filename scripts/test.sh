#!/usr/bin/env bash
# The whole test suite: the extension's pg_regress suite, then pytest, each on
# its own throwaway PostgreSQL cluster running the freshly built extension.
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/venv.sh"
"$ROOT/scripts/regress.sh"
SIMHASH_PG_BINDIR=$("$ROOT/scripts/temp-install.sh")
export SIMHASH_PG_BINDIR
cd "$ROOT"
"$VENV/bin/python" -m pytest "$@"
