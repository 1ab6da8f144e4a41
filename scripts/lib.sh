# Shared by the harness scripts (sourced, not run): which PostgreSQL, where
# the build lives, and who runs the throwaway servers.
#
# PostgreSQL refuses to run as root.  When these scripts run as root (CI, a
# container) the servers run as an unprivileged system user, created on first
# use; as a normal user they simply run as that user.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
PYTHON=${PYTHON:-python3}
PG_USER=${SIMHASH_PG_USER:-simhash}
VENV=${SIMHASH_VENV:-$ROOT/.venv}

is_root() { [ "$(id -u)" = 0 ]; }

ensure_pg_user() {
    is_root || return 0
    id -u "$PG_USER" >/dev/null 2>&1 ||
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$PG_USER"
}

# Runs a command as the server user (from /, which that user can always read).
as_pg_user() {
    if is_root; then
        (cd / && runuser -u "$PG_USER" -- "$@")
    else
        "$@"
    fi
}

# The build directory: build/ in the checkout, unless the server user cannot
# reach it (a checkout under /root), in which case a directory under /tmp.
build_dir() {
    local dir=$ROOT/build
    ensure_pg_user
    if is_root && ! runuser -u "$PG_USER" -- test -x "$ROOT" 2>/dev/null; then
        dir=/tmp/pysimhash-sql-build-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)
    fi
    mkdir -p "$dir"
    chmod 755 "$dir"
    printf '%s\n' "$dir"
}

# A directory the server user may write to (a data directory's parent).
pg_writable_dir() {
    mkdir -p "$1"
    if is_root; then chown "$PG_USER:" "$1"; fi
}
