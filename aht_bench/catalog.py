"""The training methods, one line each (`METHODS`): the one list that `aht-bench train`'s choices
(`aht_bench.cli.train`), the run driver's table (`aht_bench.runs.registry.ALGORITHMS`), the
smoke runs (`aht_bench.runs.smoke`) and the method contract test
(`tests/algorithms/test_method_contract.py`) read. Adding a method is its module or package
(under `aht_bench/algorithms/`) and one line here (docs/write_your_own_method.md).

A line names its module as a string and lists its preset names, so that `aht-bench train
--help` shows the methods and presets without importing a method (or JAX); the run driver
imports the modules. The contract test checks each line's presets against its module's.

May import the standard library only.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Entry:
    """One training method: its name, where it lives and how the run driver steps it."""

    name: str
    """`aht-bench train NAME`; never renamed (runs on disk name it)."""
    module: str
    """The dotted module (a package's `__init__`): it has `METHOD` (an
    `aht_bench.algorithms.api.Method`) and `SMOKE` (its smoke run's overrides,
    `aht_bench.runs.smoke`)."""
    presets: tuple[str, ...]
    """Its preset names (`--preset`): its `METHOD.presets`."""
    needs_teammates: bool = False
    """`METHOD.init` takes the teammates to train with after the setup (`--teammates`: br,
    ego)."""


METHODS: tuple[Entry, ...] = (
    Entry("ippo", "aht_bench.algorithms.ippo", ("quick", "paper")),
    Entry("br", "aht_bench.algorithms.br", ("quick", "paper"), needs_teammates=True),
    Entry("ego", "aht_bench.algorithms.ego", ("quick", "paper"), needs_teammates=True),
    Entry("rotate", "aht_bench.algorithms.rotate", ("quick", "medium", "paper", "sabotage")),
    Entry("fcp", "aht_bench.algorithms.fcp", ("quick", "medium", "paper")),
    Entry("brdiv", "aht_bench.algorithms.brdiv", ("quick", "medium", "paper")),
    Entry("comedi", "aht_bench.algorithms.comedi", ("quick", "medium", "paper")),
    Entry("paired", "aht_bench.algorithms.paired", ("quick", "medium", "paper")),
    Entry("minimax", "aht_bench.algorithms.minimax", ("quick", "medium", "paper")),
    Entry("cole", "aht_bench.algorithms.cole", ("quick", "medium", "paper")),
)
"""Every method `aht-bench train` runs, in the order `--help` lists them."""


def names() -> tuple[str, ...]:
    """The methods' names, in `METHODS`' order."""
    return tuple(entry.name for entry in METHODS)


def preset_names() -> tuple[str, ...]:
    """Every preset name of `METHODS`, each once, in an order that keeps every line's order
    (a name a line adds goes right after the name the line listed before it): quick, medium,
    paper, sabotage."""
    out: list[str] = []
    for entry in METHODS:
        at = 0
        for name in entry.presets:
            if name not in out:
                out.insert(at, name)
            at = out.index(name) + 1
    return tuple(out)
