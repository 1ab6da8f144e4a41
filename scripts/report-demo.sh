#!/usr/bin/env bash
# `make report`: the near-duplicate report of examples/corpus (or of the
# sources given: REPORT_SOURCES="dir file.gz ..."), written to
# near-duplicates.html, through a throwaway server.
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/venv.sh"
out=${REPORT_OUTPUT:-$ROOT/near-duplicates.html}
exec "$ROOT/scripts/with-server.sh" report bash -c \
    'pysimhash-sql report --dsn "$SIMHASH_DSN" -o "$0" "$@" && echo "wrote $0"' \
    "$out" ${REPORT_SOURCES:-$ROOT/examples/corpus}
