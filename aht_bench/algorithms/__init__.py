"""One module per method, each a set of pairings, stream weights and an outer loop over the PPO
core in `aht_bench.training`:

- `ippo`: independent PPO in self-play (heldout IPPO teammates, FCP pools);
- `ego`: PPO for the recurrent ego agent against a teammate population;
- `br`: PPO best response to a fixed teammate or set (normalisation bounds);
- `fixed_partner`: the learner-vs-fixed-teammates core that `ego` and `br` share;
- `rotate`: ROTATE, open-ended teammate generation by regret and an ego trained on the
  population (docs/rotate.md).

`ippo`, `ego` and `br` expose `init(key, config, ...) -> state`, `update(state, config) ->
(state, metrics)` (one PPO update, pure and jittable) and `train(key, config, ..., num_seeds)`;
`rotate` exposes `init_seeds`, `iterate(state, config)` (one whole open-ended iteration) and
`train`. `ALGORITHMS` lists those that long runs on disk (`aht_bench.training.runs.train`,
`aht-bench train`) can drive, and how (`runs.UPDATES` or `runs.ITERATIONS`).

May import aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

from aht_bench.algorithms import br, ego, ippo, rotate
from aht_bench.training.runs import ITERATIONS, Algorithm

ALGORITHMS: dict[str, Algorithm] = {
    "ippo": Algorithm("ippo", ippo, needs_teammates=False, per_agent=True),
    "br": Algorithm("br", br, needs_teammates=True, per_agent=False),
    "ego": Algorithm("ego", ego, needs_teammates=True, per_agent=False),
    "rotate": Algorithm(
        "rotate", rotate, needs_teammates=False, loop=ITERATIONS, presets=tuple(rotate.PRESETS)
    ),
}
"""What `aht-bench train` can run (and `aht_bench.training.runs.train` drives)."""


def get(name: str) -> Algorithm:
    """The algorithm `name` (a key of `ALGORITHMS`)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
