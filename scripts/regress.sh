#!/usr/bin/env bash
# Runs the extension's pg_regress suite (pg_ext/test) the way PGXS users and
# packagers do, `make installcheck` in pg_ext/ (its REGRESS_OPTS load the
# extension), against a throwaway server of the private installation.
. "$(dirname "$0")/lib.sh"

out=$(install_build_dir)/regress-results
rm -rf "$out"
mkdir -p "$out"
set +e
"$ROOT/scripts/with-server.sh" regress make -s -C "$ROOT/pg_ext" PG_CONFIG="$PG_CONFIG" \
    REGRESS_OUTPUTDIR="$out" installcheck
status=$?
set -e
if [ $status -ne 0 ] && [ -f "$out/regression.diffs" ]; then
    cat "$out/regression.diffs"
fi
exit $status
