#!/usr/bin/env bash
# Creates the project's virtual environment (.venv) with the package and its
# test dependencies, once; reinstalls when pyproject.toml changes.
. "$(dirname "$0")/lib.sh"

stamp=$VENV/.installed
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e "$ROOT[test]"
    touch "$stamp"
fi
