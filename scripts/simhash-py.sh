#!/usr/bin/env bash
# Builds simhash-py 0.4.0 (seomoz/simhash-py, the C++ library the package's
# drop-in functions replace) from its PyPI sdist into an environment of its own,
# for bench/bench_simhash_py.py, which compares the two and runs the sdist's own
# test suite (test/test.py) against the drop-in.  Prints the environment's
# directory: bin/python imports simhash-py; test/ holds its tests.
#
# The sdist's generated simhash.cpp predates Python 3.11 and it lacks the
# Cython declarations (simhash.pxd) its simhash.pyx needs, so the module is
# built from simhash.pyx with Cython 0.29 and declarations written here (of
# simhash.h's API: compute, find_all, num_differing_bits).  Nothing of it is
# kept in the repository: everything lives under build/.
. "$(dirname "$0")/lib.sh"

VERSION=0.4.0
dir=$(build_dir)/simhash-py-$VERSION
if [ ! -f "$dir/.built" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    log=$dir/build.log
    {
        "$PYTHON" -m venv "$dir/venv"
        "$dir/venv/bin/pip" install -q "cython>=0.29,<3" setuptools wheel six
        "$dir/venv/bin/pip" download -q --no-deps --no-binary :all: -d "$dir" "simhash-py==$VERSION"
        tar xzf "$dir/simhash-py-$VERSION.tar.gz" -C "$dir"
        src=$dir/simhash-py-$VERSION
        rm -f "$src/simhash/simhash.cpp"
        cat >"$src/simhash/simhash.pxd" <<'EOF'
from libc.stdint cimport uint64_t
from libcpp.pair cimport pair
from libcpp.unordered_set cimport unordered_set
from libcpp.vector cimport vector

cdef extern from "simhash.h" namespace "Simhash" nogil:
    ctypedef uint64_t hash_t
    ctypedef pair[hash_t, hash_t] match_t
    cppclass matches_t:
        cppclass iterator:
            match_t operator*()
            iterator operator++()
            bint operator==(iterator)
            bint operator!=(iterator)
        iterator begin()
        iterator end()
    cpdef size_t num_differing_bits(hash_t a, hash_t b)
    hash_t compute(vector[hash_t]& hashes)
    matches_t find_all(unordered_set[hash_t]& hashes, size_t number_of_blocks, size_t different_bits)
EOF
        (cd "$src" && "$dir/venv/bin/pip" install -q --no-build-isolation .)
        cp -r "$src/test" "$dir/test"
    } >"$log" 2>&1 || { cat "$log" >&2; echo "simhash-py $VERSION did not build (above)" >&2; exit 1; }
    touch "$dir/.built"
fi
echo "$dir"
