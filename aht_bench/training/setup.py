"""A run's setup: what a training method derives from its config (the env, the networks, the
pairings of its rollouts, the optimisers), built once by the method's `setup(config)` and passed
down to every phase, instead of re-derived from the config where each piece is needed.

A setup is a frozen dataclass over this base, its derived fields after `config`, e.g.
`aht_bench.algorithms.api.MethodSetup` (env, networks, pairings, param shapes, optimiser), which
every iteration-based method builds:

    @dataclasses.dataclass(frozen=True, eq=False)
    class MethodSetup(Setup):
        env: AutoReset
        networks: Any
        ...

A setup compares and hashes as its type and config alone, so a jitted function that takes one as
a static argument compiles once for equal configs (two runs of one config in one process share
the program, as the tests and sweeps rely on), whatever objects the two setups hold.

May import the standard library only.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, eq=False)
class Setup:
    """The base of every method's setup (module docstring)."""

    config: Any
    """The run's config; everything else in the setup is derived from it."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.config == self.config  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.config))
