#!/usr/bin/env bash
# pytest (arguments passed on) against a server from the private installation
# that temp-install.sh makes.
#
# pytest's temporary directories go below the build directory rather than the
# machine-wide /tmp/pytest-of-$USER: pytest deletes all but the three newest
# session directories there, which includes the data directory of a test
# server that a concurrent run from another checkout is still using.
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/venv.sh"
SIMHASH_PG_BINDIR=$("$ROOT/scripts/temp-install.sh")
PYTEST_DEBUG_TEMPROOT=$(build_dir)/pytest-tmp
mkdir -p "$PYTEST_DEBUG_TEMPROOT"
export SIMHASH_PG_BINDIR PYTEST_DEBUG_TEMPROOT
cd "$ROOT"
exec "$VENV/bin/python" -m pytest "$@"
