"""The methods `aht-bench train` can run, by name (`ALGORITHMS`, `get`): one `Algorithm` per line
of the catalogue (`aht_bench.catalog.METHODS`), the `MethodLoop` over its module's `METHOD`
(one PPO update per step for ippo, br and ego; one outer-loop iteration for ROTATE and the
baselines: the method's `schedule`).

May import aht_bench.catalog, aht_bench.algorithms (the modules the catalogue names, imported
by name) and aht_bench.runs.
"""

from __future__ import annotations

import importlib

from aht_bench.catalog import METHODS, Entry
from aht_bench.runs.loops import Algorithm, MethodLoop


def algorithm(entry: Entry) -> Algorithm:
    """The catalogue line `entry` with its module imported: the loop over its `METHOD`
    (`aht_bench.algorithms.api.Method`), whose presets are the line's."""
    module = importlib.import_module(entry.module)
    loop = MethodLoop(module.METHOD)
    return Algorithm(entry.name, module, loop, needs_teammates=entry.needs_teammates)


ALGORITHMS: dict[str, Algorithm] = {entry.name: algorithm(entry) for entry in METHODS}
"""What `aht-bench train` can run (and `aht_bench.runs.train` drives), in the catalogue's
order."""


def get(name: str) -> Algorithm:
    """The algorithm `name` (a key of `ALGORITHMS`)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
