#!/usr/bin/env bash
# `make dist`: the PGXN distribution, build/dist/simhash-<version>.zip, made
# from the files git tracks under pg_ext/ (META.json at the top of one
# simhash-<version>/ directory, as PGXN expects).  Uncommitted edits to tracked
# files are included, so the test suite installs what is in the work tree;
# untracked files are not, as in a release.  Prints the zip's path.
. "$(dirname "$0")/lib.sh"

cd "$ROOT"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
    { echo "make dist needs a git checkout (it packs the files git tracks)" >&2; exit 1; }
version=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' pg_ext/META.json)
out=$ROOT/build/dist/simhash-$version.zip
mkdir -p "$(dirname "$out")"
snapshot=$(git stash create)   # a commit of the work tree; empty when it is clean
git archive --format=zip --prefix="simhash-$version/" -o "$out" "${snapshot:-HEAD}:pg_ext"
printf '%s\n' "$out"
