#!/usr/bin/env bash
# `make demo`: start a throwaway cluster under build/demo from the private
# installation, load examples/corpus, print the near-duplicate pairs, stop.
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/venv.sh"
bindir=$("$ROOT/scripts/temp-install.sh")
build=$(build_dir)
dir=$build/demo
rm -rf "$dir"
pg_writable_dir "$dir"
port=${SIMHASH_DEMO_PORT:-54329}

as_pg_user "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >/dev/null
as_pg_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses=''" start >/dev/null
trap 'as_pg_user "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null' EXIT

"$VENV/bin/python" "$ROOT/examples/demo.py" --dsn "host=$dir port=$port user=postgres dbname=postgres" "$@"
