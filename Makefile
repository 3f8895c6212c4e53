# Two set-up commands: `make demo` and `make test` (each creates .venv and installs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hetsched lp all
	$(BIN)/hetsched reproduce thesis-table-2.1 --quick

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=10

# Long runs too (marked slow).
test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) results .pytest_cache
