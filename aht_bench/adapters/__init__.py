"""Shells over the functional tasks for the loops other libraries run:

- `gym`: `EgoEnv`, one seat of a task as a `gymnasium.Env` with the other seats' policies
  folded in; importing it registers every task as ``aht_bench/<task id>`` with Gymnasium.
- `vector`: `EgoVectorEnv`, `num_envs` `EgoEnv`s stepped in one jitted call
  (`gymnasium.make_vec`).
- `pz`: `ParallelEnv`, every seat of a task as a `pettingzoo.ParallelEnv`.
- `gymnax`: `EgoGymnaxEnv`, the ego's seat of a task as a gymnax `Environment` for JAX
  trainers, a teammate drawn per episode from a set and played inside the jitted step.

The shells fold policies in (heuristics, networks, heldout members), so they sit above
`aht_bench.policies`; the jitted per-task reset/step they share is
`aht_bench.envs.compiled`. Nothing here is imported by `import aht_bench.adapters`: import the
shell you use (`import aht_bench.adapters.gym`).

May import numpy, jax, flax, gymnasium, gymnax, pettingzoo, aht_bench.envs and
aht_bench.policies (and, for teammate names only, `aht_bench.evaluation.teammates`).
"""
