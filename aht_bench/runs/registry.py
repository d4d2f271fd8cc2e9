"""The methods `aht-bench train` can run, by name (`ALGORITHMS`, `get`), each with the loop that
drives it: `UPDATES` (one PPO update per step: ippo, br, ego) or an `IterationLoop` over the
method's `METHOD` (one outer-loop iteration per step: ROTATE and the baselines).

May import aht_bench.algorithms and aht_bench.runs.
"""

from __future__ import annotations

from types import ModuleType

from aht_bench.algorithms import br, brdiv, cole, comedi, ego, fcp, ippo, minimax, paired, rotate
from aht_bench.runs.loops import Algorithm, IterationLoop


def _iterations(name: str, module: ModuleType) -> Algorithm:
    """An iteration-based method: the module's `METHOD` (`aht_bench.algorithms.api.Method`),
    driven one iteration per step."""
    return Algorithm(
        name,
        module,
        needs_teammates=False,
        loop=IterationLoop(module.METHOD),
        presets=tuple(module.METHOD.presets),
    )


ALGORITHMS: dict[str, Algorithm] = {
    "ippo": Algorithm("ippo", ippo, needs_teammates=False, per_agent=True),
    "br": Algorithm("br", br, needs_teammates=True, per_agent=False),
    "ego": Algorithm("ego", ego, needs_teammates=True, per_agent=False),
    **{
        name: _iterations(name, module)
        for name, module in (
            ("rotate", rotate),
            ("comedi", comedi),
            ("fcp", fcp),
            ("paired", paired),
            ("minimax", minimax),
            ("brdiv", brdiv),
            ("cole", cole),
        )
    },
}
"""What `aht-bench train` can run (and `aht_bench.runs.train` drives)."""


def get(name: str) -> Algorithm:
    """The algorithm `name` (a key of `ALGORITHMS`)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
