# vmio: `make demo` runs the default campaign; `make test` runs the test suite; `make check` its fast tier.
# Both install what is missing (system packages with apt-get, Python packages into .venv).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check lint bench system venv clean qemu-builds

system:
	bash scripts/setup-system.sh full

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[sim,parquet,dev]'
	touch $(STAMP)

venv: $(STAMP)

# A second QEMU build beside the system's (Debian 12: backports' 10.0) for the tests that run two builds;
# installed into vmio's cache, never over the system QEMU. Where none is offered the tests say so.
qemu-builds: venv
	$(BIN)/vmio qemu add 10.0 || echo "vmio: no QEMU 10.0 offered here; the two-build tests will try again and fail"

# The tests' Python processes (pytest's workers, each `python -m vmio` a test starts) keep what they compile in
# __pycache__: with PYTHONDONTWRITEBYTECODE set (some shells and images set it) every one of them compiles
# vmio and rewrites the test modules' asserts again, ~4 CPU-s more for each worker's collection alone.
unexport PYTHONDONTWRITEBYTECODE

# Two workers (pytest-xdist) where tests wait on guests, fio runtimes and Ceph: the tests that share a cluster,
# a guest, a campaign or libvirtd stay in one worker, the slow ones start first (tests/conftest.py's
# shared_groups). TEST_WORKERS=0 runs the suite in one process; the 30 slowest tests are printed at the end.
TEST_WORKERS ?= 2

test: system venv qemu-builds
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=30

# The fast tier for the inner loop: every test that needs no VM, cluster or browser and is not slow (the
# markers of pyproject.toml; real fio, SQLite and loop devices still run). Goal: 5 minutes on 2 cores.
# Three workers: its tests wait on fio half their time (0.45-0.5 CPU-s a running second in two workers), so
# a third fills the cores (CONTRIBUTING.md, make check); CHECK_WORKERS=2 runs it as make test would.
CHECK_MARKERS := not qemu and not ceph and not browser and not slow
CHECK_WORKERS ?= 3

check: system venv
	$(BIN)/python -m pytest -q -n $(CHECK_WORKERS) --dist loadgroup -m "$(CHECK_MARKERS)" --durations=10

lint: venv
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

# when make started (`make demo` prints its whole wall time at the end, the installs included)
DEMO_START := $(shell date +%s)

demo: system venv
	$(BIN)/vmio qemu add 10.0 || echo "vmio: no QEMU 10.0 offered here; the demo carries on with the system QEMU"
	VMIO_DEMO_START=$(DEMO_START) bash scripts/demo.sh

bench: system venv
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info
