#!/usr/bin/env bash
# Creates the project's virtual environment (.venv) with the package and its
# test dependencies (the test extra), once; reinstalls when pyproject.toml
# changes.  `scripts/venv.sh bench` adds what bench/ compares the package with;
# `scripts/venv.sh django42` makes the second, small environment .venv-django42
# (the test-django42 extra: the Django tests on Django 4.2 LTS, beside the main
# environment's 5.2; one Django per environment).  The package is installed
# editable, its compiled fingerprint core (pysimhash_sql/_core.c over
# pg_ext/src/core, setup.py) built in place, and built again when those change.
. "$(dirname "$0")/lib.sh"

case ${1:-} in
    django42) VENV=$DJANGO42_VENV extras=test-django42 ;;
    *) extras=test${1:+,$1} ;;
esac
stamp=$VENV/.installed-$extras
TEXT_DEDUP=text-dedup==0.4.0
# The compiled fingerprint core (setup.py): rebuilt when its C or its build changed.
core_stamp=$VENV/.built-core
# Quiet unless something fails: pip's warnings are not news to the user.
quietly() {
    local log
    log=$(mktemp)
    "$@" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; return 1; }
    rm -f "$log"
}

if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$ROOT/setup.py" -nt "$stamp" ]; then
    echo "Setting up $VENV (the package and its test dependencies)"
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    # pip's cache is this environment's own: pgxnclient (an sdist) writes the
    # building interpreter's path into its scripts, so a wheel cached for
    # another environment would not run here, and clearing a shared cache
    # would race with another checkout installing at the same time.
    export PIP_CACHE_DIR=$VENV/.pip-cache
    quietly "$VENV/bin/python" -m pip install --upgrade pip
    quietly "$VENV/bin/python" -m pip install -e "$ROOT[$extras]"
    # bench_dedupe.py's rival, text-dedup, without the dependencies of its other
    # scripts (pyspark, unisim): what its simhash script imports is in the bench extra.
    case $extras in *bench*) quietly "$VENV/bin/python" -m pip install --no-deps "$TEXT_DEDUP" ;; esac
    touch "$stamp" "$core_stamp"
fi
if [ -n "$(find "$ROOT/setup.py" "$ROOT/pysimhash_sql/_core.c" "$ROOT/pg_ext/src/core" -newer "$core_stamp" 2>/dev/null | head -1)" ] ||
    [ ! -f "$core_stamp" ]; then
    export PIP_CACHE_DIR=$VENV/.pip-cache
    quietly "$VENV/bin/python" -m pip install --no-deps -e "$ROOT"
    touch "$core_stamp"
fi
