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
# installation, quietly.  With SIMHASH_EXT_BUILD_DIR set, the objects go
# there (a PGXS VPATH build) instead of into pg_ext/, so builds against
# different PostgreSQL majors never share an object file.  With
# SIMHASH_WERROR=1 (the tests, CI) any compiler warning in our sources fails
# the build: a PostgreSQL API change must never reach users as a missing
# symbol.  Messages go to stderr.
. "$(dirname "$0")/lib.sh"

# A compiler a core: on CI's 2 cores the build before each major's tests took 18 s, not 26 s.
args=(-j "$(nproc)" PG_CONFIG="$PG_CONFIG")
[ "${SIMHASH_WERROR:-}" = 1 ] && args+=(COPT=-Werror)
if [ -n "${SIMHASH_EXT_BUILD_DIR:-}" ]; then
    # the objects mirror pg_ext/src/, one folder per subsystem
    (cd "$ROOT/pg_ext" && find src -type d) | while read -r dir; do mkdir -p "$SIMHASH_EXT_BUILD_DIR/$dir"; done
    pgxs_make() { make -s -C "$SIMHASH_EXT_BUILD_DIR" -f "$ROOT/pg_ext/Makefile" VPATH= "${args[@]}" "$@" >&2; }
else
    pgxs_make() { make -s -C "$ROOT/pg_ext" "${args[@]}" "$@" >&2; }
fi

pgxs_make
if [ "${1:-}" = install ]; then
    pgxs_make install ${DESTDIR:+DESTDIR="$DESTDIR"}
    [ -n "${DESTDIR:-}" ] || echo "Installed the simhash extension into" \
        "$("$PG_CONFIG" --sharedir)/extension and $("$PG_CONFIG" --pkglibdir)" >&2
fi
