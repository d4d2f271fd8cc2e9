"""The methods `aht-bench train` can run, by name (`ALGORITHMS`, `get`): one `Algorithm` per line
of the catalogue (`aht_bench.catalog.METHODS`), each with the loop that drives it: `UPDATES`
(one PPO update per step: ippo, br, ego) or an `IterationLoop` over the method's `METHOD` (one
outer-loop iteration per step: ROTATE and the baselines).

May import aht_bench.catalog, aht_bench.algorithms (the modules the catalogue names, imported
by name) and aht_bench.runs.
"""

from __future__ import annotations

import importlib

from aht_bench.catalog import METHODS, Entry
from aht_bench.runs.loops import UPDATES, Algorithm, IterationLoop


def algorithm(entry: Entry) -> Algorithm:
    """The catalogue line `entry` with its module imported. An iteration method's loop drives
    its `METHOD` (`aht_bench.algorithms.api.Method`), and its presets are the METHOD's."""
    module = importlib.import_module(entry.module)
    if entry.loop == "update":
        return Algorithm(
            entry.name,
            module,
            needs_teammates=entry.needs_teammates,
            per_agent=entry.per_agent,
            loop=UPDATES,
            presets=entry.presets,
        )
    return Algorithm(
        entry.name,
        module,
        needs_teammates=entry.needs_teammates,
        per_agent=entry.per_agent,
        loop=IterationLoop(module.METHOD),
        presets=tuple(module.METHOD.presets),
    )


ALGORITHMS: dict[str, Algorithm] = {entry.name: algorithm(entry) for entry in METHODS}
"""What `aht-bench train` can run (and `aht_bench.runs.train` drives), in the catalogue's
order."""


def get(name: str) -> Algorithm:
    """The algorithm `name` (a key of `ALGORITHMS`)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
