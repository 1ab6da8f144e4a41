# pysimhash-sql — top-level targets.
#
#   make demo      set everything up, then find near-duplicates in examples/corpus
#   make test      set everything up, then run pg_regress and pytest against
#                  one PostgreSQL: PG_MAJOR=14 ... 18 (the project's own
#                  download of that major), else the one pg_config names
#   make test-all  make test on every supported major (what CI runs), then
#                  pg_upgrade and dump/restore from older majors to the newest
#   make install   install the extension into the PostgreSQL that pg_config
#                  names, and the Python package into $(PYTHON)'s environment
#   make report    the near-duplicate report of examples/corpus: near-duplicates.html
#   make bench     benchmarks (a printed table; not tests) on the project's own
#                  PostgreSQL PG_MAJOR, else the newest supported major (never the
#                  one pg_config names): BENCH=find_all one of them (installing only
#                  the corpora it reads), BENCH_ARGS="--rows 10000000" or "--large"
#                  (100M rows) sizes and BENCH_SERVER_OPTIONS="-c shared_buffers=8GB"
#                  the server's settings
#   make dist      the PGXN distribution zip (build/dist/simhash-<version>.zip)
#
# Build dependencies (PostgreSQL server headers, libxxhash-dev) are installed
# with apt-get on Debian/Ubuntu as root; elsewhere `make deps` says what to
# install.  Tests and the demo never touch the system PostgreSQL: they run
# throwaway servers from a private copy (scripts/temp-install.sh).

PG_CONFIG ?= pg_config
PYTHON ?= python3
export PG_CONFIG PYTHON
# Only a PG_MAJOR given on the command line: the postgres Docker images set
# PG_MAJOR in the environment, meaning the installation pg_config names.
ifeq ($(origin PG_MAJOR),command line)
export SIMHASH_PG_MAJOR := $(PG_MAJOR)
endif

.PHONY: all deps extension install test test-all regress pytest demo report bench dist clean

all: extension

deps:
	@scripts/install-deps.sh

extension: deps
	scripts/build-extension.sh

install: deps
	scripts/build-extension.sh install
	$(PYTHON) -m pip install "$(CURDIR)"

test: deps
	scripts/test.sh $(PYTEST_ARGS)

test-all:
	scripts/test-all.sh $(PYTEST_ARGS)

regress: deps
	scripts/regress.sh

pytest: deps
	scripts/pytest.sh $(PYTEST_ARGS)

demo: deps
	scripts/demo.sh

report: deps
	scripts/report-demo.sh

bench:
	scripts/bench.sh $(BENCH_ARGS)

dist:
	@scripts/dist.sh

clean:
	$(MAKE) -C pg_ext clean
	rm -rf build
