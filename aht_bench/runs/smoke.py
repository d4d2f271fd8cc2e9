"""Smoke-sized runs of every method: per method, overrides of its `quick` preset (as `aht-bench
train --set` takes them) that make a whole run of a few PPO updates per stage on LBF (seconds of
training; compilation dominates). Each method module keeps its own as `SMOKE`; `OVERRIDES` reads
them for every method of the registry (`aht_bench.runs.registry.ALGORITHMS`). The method
contract test (`tests/algorithms/test_method_contract.py`) and the bit-identity check of
refactors (`benchmarks/method_fingerprints.py`) run them.

May import aht_bench.runs.
"""

from __future__ import annotations

from aht_bench.runs.registry import ALGORITHMS

TASK = "lbf"
"""The task the smoke runs train on."""

TEAMMATES = ("lexi",)
"""The teammates of the methods that train against given ones (br, ego)."""

OVERRIDES: dict[str, tuple[str, ...]] = {
    name: tuple(algo.module.SMOKE)
    for name, algo in ALGORITHMS.items()
    if hasattr(algo.module, "SMOKE")
}
"""Method name -> `field=value` overrides of its quick preset on `TASK` (its module's `SMOKE`;
the contract test fails for a method without one)."""


def pairs(method: str) -> tuple[tuple[str, str], ...]:
    """`OVERRIDES[method]` as (field, value) pairs, as `RunSpec.overrides` takes them."""
    return tuple((k, v) for k, _, v in (item.partition("=") for item in OVERRIDES[method]))
