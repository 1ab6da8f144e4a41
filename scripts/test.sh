#!/usr/bin/env bash
# The whole test suite against one PostgreSQL (PG_MAJOR, else the one
# $PG_CONFIG names): the extension's pg_regress suite, then pytest, each on
# its own throwaway cluster running the freshly built extension.  Arguments go
# to pytest.  The cross-version tests (pg_upgrade, dump and restore between
# majors) are left to scripts/test-all.sh, which has every major at hand.
. "$(dirname "$0")/lib.sh"

echo "== $("$PG_CONFIG" --version) ($PG_CONFIG)"
# Build and install once; regress.sh and pytest.sh take the installation from here.
SIMHASH_INSTALLED_BINDIR=$("$ROOT/scripts/temp-install.sh")
export SIMHASH_INSTALLED_BINDIR
"$ROOT/scripts/regress.sh"
status=0
# SIMHASH_SKIP_MAJOR_INDEPENDENT (scripts/test-all.sh, on every major but the
# newest): the tests marked major_independent ran, or will run, on the newest.
markers="not cross_version"
[ -n "${SIMHASH_SKIP_MAJOR_INDEPENDENT:-}" ] && markers="$markers and not major_independent"
# The suite in two processes a core, up to 4 (pytest-xdist), a test file a process at
# a time so that a file's servers start once.  Most tests wait on their servers: on 2
# cores, tests/extension took 310 s with 2 processes, 249 s with 3, 194 s with 4 and
# 248 s with 6.  SIMHASH_TEST_WORKERS=0: in this process (for --pdb).  The files are
# handed out in collection order, the slowest first (tests/conftest.py's SLOW_FIRST), not
# reordered by their number of tests (pytest-xdist's default, which handed out the 2 tests
# of packaging/test_packaging.py, 230 s in one process, last: the run's last 4 minutes).
workers=${SIMHASH_TEST_WORKERS:-$(cores=$(nproc) && echo $((2 * cores < 4 ? 2 * cores : 4)))}
parallel=()
[ "$workers" -gt 0 ] && parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
"$ROOT/scripts/pytest.sh" -m "$markers" "${parallel[@]}" "$@" || status=$?
# The Django tests on the other Django LTS and driver combinations (the suite ran
# them on Django 5.2 with psycopg 3): one Django per environment, one driver per
# process.  With the whole suite only: PYTEST_ARGS narrows a run to what it names.
# What they add does not depend on the major: `make test-all` runs them on the newest.
if [ $# -eq 0 ] && [ -z "${SIMHASH_SKIP_MAJOR_INDEPENDENT:-}" ]; then
    for combination in "5.2 psycopg2" "4.2 psycopg" "4.2 psycopg2"; do
        read -r django driver <<<"$combination"
        echo "== the Django tests on Django $django, $driver"
        SIMHASH_DJANGO=$django SIMHASH_DJANGO_DRIVER=$driver "$ROOT/scripts/pytest.sh" -q tests/package/django ||
            status=$?
    done
fi
exit $status
