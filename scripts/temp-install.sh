#!/usr/bin/env bash
# Builds the extension and installs it into a private copy of the PostgreSQL
# installation (build/tmp_install), the way PostgreSQL's own `make check` does:
# tests and the demo run servers from there, so they never need root to
# install, and never see a stale system copy of the extension.
#
# PostgreSQL finds its share/ and lib/ directories relative to its binaries,
# so copying the server binaries with the same relative layout below a new
# prefix (DESTDIR) relocates the whole installation.
#
# Prints the private bindir.
. "$(dirname "$0")/lib.sh"

build=$(build_dir)
dest=$build/tmp_install
bindir=$("$PG_CONFIG" --bindir)

if [ ! -f "$dest/.copied" ]; then
    rm -rf "$dest"
    mkdir -p "$dest$bindir"
    for exe in postgres pg_ctl initdb psql; do
        cp -p "$bindir/$exe" "$dest$bindir/"
    done
    for dir in $("$PG_CONFIG" --sharedir) $("$PG_CONFIG" --pkglibdir); do
        mkdir -p "$dest$(dirname "$dir")"
        cp -a "$dir" "$dest$(dirname "$dir")/"
    done
    touch "$dest/.copied"
fi

DESTDIR=$dest "$ROOT/scripts/build-extension.sh" install
chmod -R a+rX "$dest"
printf '%s\n' "$dest$bindir"
