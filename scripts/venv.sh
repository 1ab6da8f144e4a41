#!/usr/bin/env bash
# Creates the project's virtual environment (.venv) with the package and its
# test dependencies, once; reinstalls when pyproject.toml changes.
. "$(dirname "$0")/lib.sh"

stamp=$VENV/.installed
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # pgxnclient (an sdist) writes the building interpreter's path into its
    # scripts, so a wheel cached from another environment would not run here.
    "$VENV/bin/python" -m pip cache remove pgxnclient >/dev/null 2>&1 || true
    "$VENV/bin/python" -m pip install -q -e "$ROOT[test]"
    touch "$stamp"
fi
