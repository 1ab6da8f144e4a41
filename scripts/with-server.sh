#!/usr/bin/env bash
# with-server.sh NAME COMMAND...: runs COMMAND with a throwaway PostgreSQL
# server (private installation, data under build/NAME) and $SIMHASH_DSN
# pointing at it; the server is stopped when COMMAND ends.
. "$(dirname "$0")/lib.sh"

name=$1
shift
"$ROOT/scripts/venv.sh"
bindir=$("$ROOT/scripts/temp-install.sh")
dir=$(build_dir)/$name
rm -rf "$dir"
pg_writable_dir "$dir"
# A free port: the server listens only on its Unix socket in $dir, so the
# port merely names the socket file.
port=$((50000 + RANDOM % 10000))

as_pg_user "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >/dev/null
as_pg_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses='' ${SIMHASH_SERVER_OPTIONS:-}" start >/dev/null
trap 'as_pg_user "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null' EXIT

export SIMHASH_PG_BINDIR=$bindir
export SIMHASH_DSN="host=$dir port=$port user=postgres dbname=postgres"
export PATH="$VENV/bin:$PATH"
"$@"
