#!/usr/bin/env bash
# Builds the extension and installs it into a private copy of the PostgreSQL
# installation $PG_CONFIG names (the way PostgreSQL's own `make check` does):
# tests and the demo run servers from there, so they never need root to
# install, and never see a stale system copy of the extension.  Each
# installation gets its own build directory (install_build_dir in lib.sh):
# the extension's objects, built with warnings as errors, and the copy.
#
# PostgreSQL finds its share/ and lib/ directories relative to its binaries,
# so copying the binaries with the same relative layout below a new prefix
# (DESTDIR) relocates the whole installation.
#
# Prints the private bindir.
. "$(dirname "$0")/lib.sh"

build=$(install_build_dir)
dest=$build/tmp_install
bindir=$("$PG_CONFIG" --bindir)

if [ ! -f "$dest/.copied" ]; then
    rm -rf "$dest"
    for dir in "$bindir" $("$PG_CONFIG" --sharedir) $("$PG_CONFIG" --pkglibdir); do
        mkdir -p "$dest$(dirname "$dir")"
        cp -a "$dir" "$dest$(dirname "$dir")/"
    done
    touch "$dest/.copied"
fi

SIMHASH_WERROR=1 SIMHASH_EXT_BUILD_DIR=$build/ext DESTDIR=$dest "$ROOT/scripts/build-extension.sh" install
chmod -R a+rX "$dest"
printf '%s\n' "$dest$bindir"
