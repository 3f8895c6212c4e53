# Two set-up commands: `make demo` and `make test` (each creates .venv and installs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench install clean fuzz schema browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hetsched warmup
	$(BIN)/hetsched lp all
	$(BIN)/hetsched reproduce thesis-table-2.1 --quick --force
	$(BIN)/hetsched report results -o results/report.html

# The HTML report's browser test needs Chromium (Debian's package).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo -n)
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (Debian package) for the report's browser test"; \
	  ($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium) >/dev/null \
	  || echo "warning: could not install chromium; the browser test will fail under CI"; }

# The built-in kernels are compiled into the on-disk cache first, two models at a time on the two
# cores (what `hetsched warmup` does one after another); the tests then run in two processes and load
# them instead of each compiling its own copy.
test: $(STAMP) browser
	$(BIN)/python -c 'from hetsched.sim.desktop.run import warm_up_kernels; warm_up_kernels()' & \
	$(BIN)/python -c 'from hetsched.sim.mapping.run import warm_up_all; from hetsched.sim.decentral.run import warm_up_kernels; warm_up_all(); warm_up_kernels()'; \
	wait
	$(BIN)/python -m pytest -q -n 2 --durations=10

# Long runs too (marked slow).
test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

# Long fuzz campaign (>= 5,000 generated bad inputs, random): prints the counts of
# uncaught exceptions and hangs at the end (docs/input-validation.md). One process (-n 0),
# so the counts at the end cover every example.
fuzz: $(STAMP)
	HETSCHED_FUZZ_SCALE=$${HETSCHED_FUZZ_SCALE:-5} $(BIN)/python -m pytest -q -n 0 -p no:cacheprovider -rxX tests/fuzz

# Regenerate the JSON Schema of scenario files from its pydantic models.
schema: $(STAMP)
	$(BIN)/python -c "from hetsched.scenarios.schema import json_schema_text as t; print(t(), end='')" \
		> src/hetsched/scenarios/schema.json

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# The short version (a few minutes on 2 cores); `--markdown` gives docs/performance.md's table.
.PHONY: bench-quick
bench-quick: $(STAMP)
	$(BIN)/python benchmarks/run.py --quick $(BENCH_ARGS)

clean:
	rm -rf $(VENV) results .pytest_cache
