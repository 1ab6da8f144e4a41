#!/usr/bin/env bash
# Installs what building and testing need, when it is missing: a PostgreSQL
# server and its server headers (PGXS), and libxxhash-dev.  On Debian/Ubuntu as
# root it uses apt-get; anywhere else it prints what to install and stops.
. "$(dirname "$0")/lib.sh"

pg_major() {
    local v
    if v=$("$PG_CONFIG" --version 2>/dev/null); then
        v=${v#PostgreSQL }
        echo "${v%%[.beta rc]*}"
    elif ls /usr/lib/postgresql >/dev/null 2>&1; then
        ls /usr/lib/postgresql | sort -n | tail -1
    else
        echo 15
    fi
}

major=$(pg_major)
wanted=("postgresql-$major" "postgresql-server-dev-$major" libxxhash-dev)
missing=()
if command -v dpkg-query >/dev/null; then
    for pkg in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
else
    # Not Debian: check for the files themselves.
    [ -f "$("$PG_CONFIG" --pgxs 2>/dev/null || echo /nonexistent)" ] || missing+=("PostgreSQL $major server development files (PGXS)")
    echo '#include <xxhash.h>' | cc -E - >/dev/null 2>&1 || missing+=("xxHash development headers (xxhash.h)")
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if is_root && command -v apt-get >/dev/null; then
    echo "Installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    exit 0
fi

echo "Missing build dependencies: ${missing[*]}" >&2
if command -v apt-get >/dev/null; then
    echo "Install them with:  sudo apt-get install ${missing[*]}" >&2
else
    echo "Install them with your package manager, then run make again." >&2
fi
exit 1
