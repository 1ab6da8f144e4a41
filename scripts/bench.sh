#!/usr/bin/env bash
# `make bench`: every bench/bench_*.py, each printing its own table, against
# one throwaway server (tuned a little for bulk work).  Not part of the tests.
# BENCH=name runs bench/bench_<name>.py alone; arguments (BENCH_ARGS in make)
# go to every benchmark, each taking the ones it knows (--quick, --rows N,
# --large: the sizes up to 100M rows).
#
# The server is the project's own PostgreSQL (scripts/postgresql.sh): PG_MAJOR
# (SIMHASH_PG_MAJOR), else the newest supported major, never the system's.
# Only the corpora the chosen benchmarks read are installed (install-deps.sh
# --bench).
. "$(dirname "$0")/lib.sh"

[ -n "${SIMHASH_PG_MAJOR:-}" ] || use_major "$(supported_majors | tail -n 1)"
"$ROOT/scripts/install-deps.sh" --bench "${BENCH:-*}"
"$ROOT/scripts/venv.sh" bench
# BENCH_SERVER_OPTIONS: more -c settings, after these (the last of a name wins),
# e.g. "-c shared_buffers=8GB" for an index of 100M rows to stay in memory.
export SIMHASH_SERVER_OPTIONS="-c shared_buffers=1GB -c work_mem=256MB -c maintenance_work_mem=1GB -c max_wal_size=4GB -c synchronous_commit=off ${BENCH_SERVER_OPTIONS:-}"
# Every benchmark runs; one that fails (a mismatch with brute force exits 1) is
# named at the end and makes `make bench` fail.
exec "$ROOT/scripts/with-server.sh" bench bash -c '
    failed=()
    for bench in "$0"/bench/bench_${BENCH:-*}.py; do
        echo "== $(basename "$bench")"
        python "$bench" "$@" || failed+=("$(basename "$bench")")
        echo
    done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "benchmarks that failed: ${failed[*]}" >&2
        exit 1
    fi' "$ROOT" "$@"
