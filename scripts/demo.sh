#!/usr/bin/env bash
# `make demo`: load examples/corpus into a throwaway server and print the
# near-duplicate pairs it finds.
. "$(dirname "$0")/lib.sh"

exec "$ROOT/scripts/with-server.sh" demo bash -c 'python "$0/examples/demo.py" --dsn "$SIMHASH_DSN" "$@"' "$ROOT" "$@"
