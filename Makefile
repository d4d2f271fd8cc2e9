# Two commands on a fresh machine: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export JAX_PLATFORMS ?= cpu

.PHONY: demo test test-slow lint bench install clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/aht-bench render --task overcooked-forced_coord-v1 --policy random --seed 0 --out demo/forced_coord.gif

test: $(STAMP)
	$(BIN)/python -m pytest -q

# pytest exits 5 when no test is marked slow yet; that is not a failure
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

lint: $(STAMP)
	$(BIN)/ruff check aht_bench tests benchmarks
	$(BIN)/ruff format --check aht_bench tests benchmarks
	$(BIN)/pyright

bench: $(STAMP)
	$(BIN)/python benchmarks/env_throughput.py --out benchmarks/results/env_throughput.json

clean:
	rm -rf $(VENV) demo
