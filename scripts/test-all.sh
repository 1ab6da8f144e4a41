#!/usr/bin/env bash
# `make test-all`: the whole suite (scripts/test.sh) on every supported
# PostgreSQL major (scripts/postgresql-releases), then the cross-version tests
# (pg_upgrade, dump and restore from older majors to the newest).  Every
# major runs even when an earlier one fails; the summary gives each one's
# result and time, and the exit status is non-zero if any failed.
. "$(dirname "$0")/lib.sh"

summary=()
failed=0
run() {
    local name=$1 start=$SECONDS status=passed
    shift
    "$@" || { status=FAILED; failed=1; }
    summary+=("$(printf '%-28s %-6s %dm%02ds' "$name" "$status" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)))")
}

majors=$(supported_majors)
newest=$(tail -n 1 <<<"$majors")
SIMHASH_PG_MAJOR=$newest "$ROOT/scripts/install-deps.sh"   # the build dependencies every major shares
for major in $majors; do
    # what does not depend on the major (tests/conftest.py's MAJOR_INDEPENDENT) runs on the newest
    skip=$([ "$major" = "$newest" ] || echo 1)
    run "PostgreSQL $major" env SIMHASH_PG_MAJOR="$major" SIMHASH_SKIP_MAJOR_INDEPENDENT="$skip" \
        "$ROOT/scripts/test.sh" "$@"
done
run "cross-version (to $newest)" env SIMHASH_PG_MAJOR="$newest" "$ROOT/scripts/pytest.sh" -m cross_version "$@"

echo
echo "== make test-all"
printf '%s\n' "${summary[@]}"
exit $failed
