# Two commands on a fresh machine: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SB3_STAMP := $(VENV)/.installed-sb3
export JAX_PLATFORMS ?= cpu

.PHONY: demo test test-slow lint bench install clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

# The tests also cover the Stable-Baselines3 example: the sb3 extra (SB3 + a pinned CPU torch).
# `make demo` does not need it and does not install it.
$(SB3_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev,sb3]'
	touch $(SB3_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/aht-bench render --task overcooked-forced_coord-v1 --policy random --seed 0 --out demo/forced_coord.gif

test: $(SB3_STAMP)
	$(BIN)/python -m pytest -q

# pytest exits 5 when no test is marked slow yet; that is not a failure
test-slow: $(SB3_STAMP)
	$(BIN)/python -m pytest -q -m slow; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

lint: $(STAMP)
	$(BIN)/ruff check aht_bench tests benchmarks agents
	$(BIN)/ruff format --check aht_bench tests benchmarks agents
	$(BIN)/pyright

bench: $(STAMP)
	$(BIN)/python benchmarks/env_throughput.py --out benchmarks/results/env_throughput.json

clean:
	rm -rf $(VENV) demo
