# Two commands on a fresh machine: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SB3_STAMP := $(VENV)/.installed-sb3
export JAX_PLATFORMS ?= cpu

.PHONY: demo test test-slow lint bench install clean sandbox browser

# Agent files run in a bubblewrap sandbox (docs/agent_files.md). Installed where missing and
# apt-get can (root on Debian/Ubuntu); elsewhere a message names the fix, and `evaluate` says
# the same if it cannot start the sandbox.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap; }; }; } || \
	  echo "warning: bubblewrap (bwrap) is not installed and could not be installed here; install it (e.g. sudo apt-get install bubblewrap): aht-bench evaluate runs agent files in its sandbox" >&2

# The replay viewer's tests drive Debian's Chromium headless (tests/evaluation/test_viewer.py);
# installed where missing and apt-get can, as bubblewrap above.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; }; }; } || \
	  echo "warning: chromium is not installed and could not be installed here; install it (e.g. sudo apt-get install chromium): the viewer's browser tests need it" >&2

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

# The tests also cover the Stable-Baselines3 example (the sb3 extra: SB3 + torch 2.13.0; for the
# CPU build of torch add PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu, see README.md)
# the Ray backend of `aht-bench sweep` (the ray extra) and the play server (the play extra).
# `make demo` needs none of them.
$(SB3_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev,sb3,ray,play]'
	touch $(SB3_STAMP)

install: $(STAMP) sandbox

# Evaluate the example agents against the newest published heldout sets (v2: Bounds v2): the
# heuristic cook jitted on the v2 cramped_room (the game the paper's numbers were measured on),
# the JAX MLP agent jitted and the scripted agent step by step (16 episodes per teammate and
# seat, to stay quick) on LBF, and compare the two LBF agents. Agent code runs sandboxed.
# `--force`: a second `make demo` replaces the first one's records (evaluate never replaces a
# record without it).
demo: $(STAMP) sandbox
	$(BIN)/aht-bench evaluate agents/examples/heuristic_agent.py --task overcooked-cramped_room-v2 --out demo/heuristic_agent-cramped_room-v2.json --force
	$(BIN)/aht-bench evaluate agents/examples/jax_mlp_agent.py --task lbf --out demo/jax_mlp_agent-lbf.json --force
	$(BIN)/aht-bench evaluate agents/examples/scripted_agent.py --task lbf --episodes 16 --out demo/scripted_agent-lbf.json --force
	$(BIN)/aht-bench compare demo/jax_mlp_agent-lbf.json demo/scripted_agent-lbf.json --out demo/compare-lbf.png

# The fast set on the machine's cores, at most 4 workers (pytest-xdist; each worker holds its
# own JAX and compile caches; TEST_WORKERS=0 runs it in one process). A file's tests stay in
# one worker (--dist loadfile): module fixtures are built once, and the Ray tests never start
# two local clusters at once.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(4, len(os.sched_getaffinity(0))))')
test: $(SB3_STAMP) sandbox browser
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# pytest exits 5 when no test is marked slow yet; that is not a failure
test-slow: $(SB3_STAMP) sandbox browser
	$(BIN)/python -m pytest -q -m slow; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

# pyright reads the optional extras too (ray in aht_bench/sweeps, aiohttp in aht_bench/play), so
# lint installs them as `make test` does; on the base install it reports them unresolved.
lint: $(SB3_STAMP)
	$(BIN)/ruff check aht_bench tests benchmarks agents
	$(BIN)/ruff format --check aht_bench tests benchmarks agents
	$(BIN)/pyright

bench: $(STAMP)
	$(BIN)/python benchmarks/env_throughput.py --out benchmarks/results/env_throughput.json

clean:
	rm -rf $(VENV) demo
