"""One module per method, each a set of pairings, stream weights and an outer loop over the PPO
core in `aht_bench.training`:

- `ippo`: independent PPO in self-play (heldout IPPO teammates, FCP pools);
- `ego`: PPO for the recurrent ego agent against a teammate population;
- `br`: PPO best response to a fixed teammate or set (normalisation bounds);
- `fixed_partner`: the learner-vs-fixed-teammates core that `ego` and `br` share.

Each exposes `init(key, config, ...) -> state`, `update(state, config) -> (state, metrics)` (one
PPO update, pure and jittable) and `train(key, config, ..., num_seeds)`.

May import aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""
