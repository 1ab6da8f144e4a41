# pysimhash-sql — top-level targets.
#
#   make demo      set everything up, then find near-duplicates in examples/corpus
#   make test      set everything up, then run pg_regress and pytest
#   make install   install the extension into the PostgreSQL that pg_config
#                  names, and the Python package into $(PYTHON)'s environment
#   make bench     benchmarks (a printed table; not tests)
#   make dist      the PGXN distribution zip (build/dist/simhash-<version>.zip)
#
# Build dependencies (PostgreSQL server headers, libxxhash-dev) are installed
# with apt-get on Debian/Ubuntu as root; elsewhere `make deps` says what to
# install.  Tests and the demo never touch the system PostgreSQL: they run
# throwaway servers from a private copy (scripts/temp-install.sh).

PG_CONFIG ?= pg_config
PYTHON ?= python3
export PG_CONFIG PYTHON

.PHONY: all deps extension install test regress pytest demo bench dist clean

all: extension

deps:
	@scripts/install-deps.sh

extension: deps
	scripts/build-extension.sh

install: deps
	scripts/build-extension.sh install
	$(PYTHON) -m pip install "$(CURDIR)"

test: deps
	scripts/test.sh

regress: deps
	scripts/regress.sh

pytest: deps
	scripts/venv.sh
	SIMHASH_PG_BINDIR=$$(scripts/temp-install.sh) .venv/bin/python -m pytest $(PYTEST_ARGS)

demo: deps
	scripts/demo.sh

bench: deps
	scripts/bench.sh

dist:
	@scripts/dist.sh

clean:
	$(MAKE) -C pg_ext clean
	rm -rf build
