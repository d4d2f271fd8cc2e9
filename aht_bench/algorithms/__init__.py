"""One module per method, each a set of pairings, stream weights and an outer loop over the PPO
core in `aht_bench.training`:

- `ippo`: independent PPO in self-play (heldout IPPO teammates, FCP pools);
- `ego`: PPO for the recurrent ego agent against a teammate population;
- `br`: PPO best response to a fixed teammate or set (normalisation bounds);
- `fixed_partner`: the learner-vs-fixed-teammates core that `ego` and `br` share;
- `rotate`: ROTATE, open-ended teammate generation by regret and an ego trained on the
  population (docs/rotate.md);
- the paper's baselines (docs/baselines/): `fcp` (IPPO checkpoints, then the ego), `brdiv`
  (confederate/best-response pairs, then the ego), `comedi` (teammates one at a time with
  mixed play, then the ego), `paired` (ego, teammate and best response in lockstep),
  `minimax` (ROTATE's loop with return-minimising teammates: `rotate`'s `minimax` variant),
  `cole` (a population grown by Shapley-value incompatibility; its best member is the ego);
- `two_stage`: the ego stage that `fcp`, `brdiv` and `comedi` share; `common`: config
  validation, preset lookup and seed stacking that every method module uses.

`ippo`, `ego` and `br` expose `init(key, config, ...) -> state`, `update(state, config) ->
(state, metrics)` (one PPO update, pure and jittable) and `train(key, config, ..., num_seeds)`;
`rotate` and the baselines expose `init_seeds`, `iterate(state, config)` (one whole iteration)
and `train`. `ALGORITHMS` lists those that long runs on disk (`aht_bench.training.runs.train`,
`aht-bench train`) can drive, and how (`runs.UPDATES` or an `IterationLoop`).

May import aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

from aht_bench.algorithms import br, brdiv, cole, comedi, ego, fcp, ippo, minimax, paired, rotate
from aht_bench.training.runs import ITERATIONS, Algorithm

ALGORITHMS: dict[str, Algorithm] = {
    "ippo": Algorithm("ippo", ippo, needs_teammates=False, per_agent=True),
    "br": Algorithm("br", br, needs_teammates=True, per_agent=False),
    "ego": Algorithm("ego", ego, needs_teammates=True, per_agent=False),
    "rotate": Algorithm(
        "rotate", rotate, needs_teammates=False, loop=ITERATIONS, presets=tuple(rotate.PRESETS)
    ),
    "comedi": Algorithm(
        "comedi", comedi, needs_teammates=False, loop=comedi.LOOP, presets=tuple(comedi.PRESETS)
    ),
    "fcp": Algorithm("fcp", fcp, needs_teammates=False, loop=fcp.LOOP, presets=tuple(fcp.PRESETS)),
    "paired": Algorithm(
        "paired", paired, needs_teammates=False, loop=paired.LOOP, presets=tuple(paired.PRESETS)
    ),
    "minimax": Algorithm(
        "minimax", minimax, needs_teammates=False, loop=minimax.LOOP, presets=tuple(minimax.PRESETS)
    ),
    "brdiv": Algorithm(
        "brdiv", brdiv, needs_teammates=False, loop=brdiv.LOOP, presets=tuple(brdiv.PRESETS)
    ),
    "cole": Algorithm(
        "cole", cole, needs_teammates=False, loop=cole.LOOP, presets=tuple(cole.PRESETS)
    ),
}
"""What `aht-bench train` can run (and `aht_bench.training.runs.train` drives)."""


def get(name: str) -> Algorithm:
    """The algorithm `name` (a key of `ALGORITHMS`)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
