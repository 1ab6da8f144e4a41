#!/usr/bin/env bash
# Creates the project's virtual environment (.venv) with the package, its test
# dependencies and what bench/ compares it with (the test and bench extras),
# once; reinstalls when pyproject.toml changes.
. "$(dirname "$0")/lib.sh"

stamp=$VENV/.installed
# Quiet unless something fails: pip's warnings are not news to the user.
quietly() {
    local log
    log=$(mktemp)
    "$@" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; return 1; }
    rm -f "$log"
}

if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    echo "Setting up $VENV (the package and its test dependencies)"
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    quietly "$VENV/bin/python" -m pip install --upgrade pip
    # pgxnclient (an sdist) writes the building interpreter's path into its
    # scripts, so a wheel cached from another environment would not run here.
    "$VENV/bin/python" -m pip cache remove pgxnclient >/dev/null 2>&1 || true
    quietly "$VENV/bin/python" -m pip install -e "$ROOT[test,bench]"
    touch "$stamp"
fi
