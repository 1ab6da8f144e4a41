#!/usr/bin/env bash
# The one recipe that builds the extension, and with `install` installs it,
# against the PostgreSQL that $PG_CONFIG names.  `make install`, the test
# harness (temp-install.sh) and docker/Dockerfile all run this script, so the
# image is built the way the tests build.
#
#   scripts/build-extension.sh            build pg_ext/
#   scripts/build-extension.sh install    build, then install
#
# With DESTDIR set, the install lands below that directory (a staging root:
# the tests' private copy, the image's layer) instead of the live
# installation, quietly.  Messages go to stderr.
. "$(dirname "$0")/lib.sh"

pgxs_make() {
    make -s -C "$ROOT/pg_ext" PG_CONFIG="$PG_CONFIG" "$@" >&2
}

pgxs_make
if [ "${1:-}" = install ]; then
    pgxs_make install ${DESTDIR:+DESTDIR="$DESTDIR"}
    [ -n "${DESTDIR:-}" ] || echo "Installed the simhash extension into" \
        "$("$PG_CONFIG" --sharedir)/extension and $("$PG_CONFIG" --pkglibdir)" >&2
fi
