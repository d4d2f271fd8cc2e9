"""aht-bench: a benchmark suite for ad hoc teamwork (AHT), built around the ROTATE paper.

Subpackages, bottom to top (each imports only the ones below it; tests/test_layers.py):
`envs` (functional JAX environments, registry, wrappers, rendering), `policies`, `adapters`
(the Gymnasium and PettingZoo shells), `training` (the PPO core), `algorithms` (the methods),
`catalog` (the methods by name: one line each), `runs` (the run driver), `evaluation` (BRProx),
`heldout` (the teammate sets), `leaderboard`, `experiments`, and `cli`. The library never
imports from the data folders `agents/`, `heldout/` or `leaderboard/`.

Importing the package asks XLA for deterministic GPU programs (`XLA_FLAGS`, see
`deterministic_gpu_ops`) unless `XLA_FLAGS` already sets `--xla_gpu_deterministic_ops`.

May import nothing of the package: every module imports it (for `__version__`).
"""

import os

__version__ = "0.1.0"

DETERMINISTIC_FLAG = "--xla_gpu_deterministic_ops"
"""XLA's flag for GPU programs that give the same bits on every run (no effect on the CPU)."""


def _flag_value(flags: str) -> bool | None:
    """The value `flags` give `DETERMINISTIC_FLAG` (the last mention counts, as in XLA; a bare
    flag is true), None if they do not name it."""
    value = None
    for word in flags.split():
        name, eq, given = word.partition("=")
        if name == DETERMINISTIC_FLAG:
            value = given.lower() in ("true", "1") if eq else True
    return value


def deterministic_gpu_ops(flags: str | None = None) -> bool:
    """Whether `flags` (default: the `XLA_FLAGS` environment variable) ask XLA for
    deterministic GPU programs."""
    return bool(_flag_value(os.environ.get("XLA_FLAGS", "") if flags is None else flags))


def _ask_for_deterministic_gpu_ops() -> None:
    """Add `--xla_gpu_deterministic_ops=true` to `XLA_FLAGS` unless it names the flag already.

    By default XLA's GPU programs sum with atomic adds (scatters, some reductions), in an order
    that varies from run to run. Measured on an NVIDIA H200 (jax 0.11.2, 2026-11-28,
    `bash benchmarks/gpu_check.sh`, benchmarks/results/gpu_determinism.txt): 5 of the 10
    training methods (ego, rotate, comedi, paired, cole) gave other parameters when the same
    run was repeated, so a resumed run could not equal one never stopped; with the flag those 5
    repeated to the bit too (the other 5 repeated without it). XLA reads the flag when JAX
    starts its backend, so it is set here, on import, before any computation.
    `XLA_FLAGS=--xla_gpu_deterministic_ops=false` keeps XLA's default (the run then records
    that its parameters are not repeatable, see `aht_bench.runs`).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if _flag_value(flags) is None:
        os.environ["XLA_FLAGS"] = f"{flags} {DETERMINISTIC_FLAG}=true".strip()


_ask_for_deterministic_gpu_ops()
