#!/usr/bin/env bash
# Runs the extension's pg_regress suite (pg_ext/test) on a throwaway cluster
# started from the private installation made by temp-install.sh.
. "$(dirname "$0")/lib.sh"

ensure_pg_user
bindir=$("$ROOT/scripts/temp-install.sh")
out=$(install_build_dir)/regress
rm -rf "$out"
pg_writable_dir "$out"
# pg_regress reads the tests as the server user: give it a copy it can read.
cp -r "$ROOT/pg_ext/test/sql" "$ROOT/pg_ext/test/expected" "$out/"
chmod -R a+rX "$out"
tests=$(cd "$ROOT/pg_ext/test/sql" && ls *.sql | sed 's/\.sql$//' | sort)

pg_regress=$(dirname "$("$PG_CONFIG" --pgxs)")/../test/regress/pg_regress
set +e
as_pg_user "$pg_regress" \
    --temp-instance="$out/instance" --bindir="$bindir" \
    --inputdir="$out" --outputdir="$out" \
    --load-extension=simhash $tests
status=$?
set -e
if [ $status -ne 0 ] && [ -f "$out/regression.diffs" ]; then
    cat "$out/regression.diffs"
fi
exit $status
