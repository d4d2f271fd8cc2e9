"""One module or package per method, each a set of pairings, stream weights and an outer loop
over the PPO core in `aht_bench.training`:

- `ippo`: independent PPO in self-play (heldout IPPO teammates, FCP pools);
- `ego`: PPO for the recurrent ego agent against a teammate population;
- `br`: PPO best response to a fixed teammate or set (normalisation bounds);
- `fixed_partner`: the learner-vs-fixed-teammates core that `ego` and `br` share, and what the
  three PPO methods share as `Method`s;
- `rotate`: ROTATE, open-ended teammate generation by regret and an ego trained on the
  population (docs/rotate.md);
- the paper's baselines (docs/baselines/): `fcp` (IPPO checkpoints, then the ego), `brdiv`
  (confederate/best-response pairs, then the ego), `comedi` (teammates one at a time with
  mixed play, then the ego), `paired` (ego, teammate and best response in lockstep),
  `minimax` (ROTATE's loop with return-minimising teammates: `rotate`'s `minimax` variant),
  `cole` (a population grown by Shapley-value incompatibility; its best member is the ego);
- `api`: the method contract (`Method`, `TaskConfig`) and the open-ended loop's iteration
  written once; `two_stage`: the ego stage that `fcp`, `brdiv` and `comedi` share; `common`:
  config validation, preset lookup and seed stacking.

Every method is a `Method` (`METHOD`: presets, `init`, one step, `population`, a report and a
`schedule`: what a step counts) and binds `init_seeds`, `iterate`, `run`, `train`,
`ego_params`, `preset`, `networks` and `population` from it (docs/write_your_own_method.md).
`ippo`, `ego` and `br` count PPO updates (one step: `updates_per_call` of them) and also expose
the pieces other methods build on: `init(key, config, ...) -> state` and `update(state, config)
-> (state, metrics)` (one PPO update, pure and jittable). `rotate` and the baselines count
outer-loop iterations; each is a package of `config.py`, `core.py` and `presets.py`
(`minimax`, ROTATE's variant, one module) with its `REPORT`. Every method
module also has `SMOKE`: the overrides of its quick preset for a run of a few updates
(`aht_bench.runs.smoke`). Import a method as `from aht_bench.algorithms import rotate`: this
package imports none of them. The catalogue above it (`aht_bench.catalog.METHODS`, one line per
method) names them for `aht-bench train`, whose run driver (`aht_bench.runs`) imports them.

May import aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""
