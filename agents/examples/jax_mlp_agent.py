"""An agent file with the JAX fast path: a network loaded with `load_policy`.

    aht-bench check-agent agents/examples/jax_mlp_agent.py --task lbf-v1

The weights next to this file (`jax_mlp_lbf.safetensors` and its JSON card) are an UNTRAINED,
seeded `MLPActorCritic` written by `make_jax_mlp.py`: this agent plays about as well as a
random one and exists to show the interface. Put your own trained network there (saved with
`aht_bench.policies.io.save_policy`) and nothing else changes.

The file gives the evaluator two ways in:

- `jax_policy(task_id) -> (policy, params)`: the fast path. The evaluator jits and vmaps
  `policy.act` over heldout teammates and episodes, with no Python in the loop.
- `act(obs)` / `reset()`: the plain path, here a `PolicyRunner` around the same policy, for
  loops that step one observation at a time (e.g. `aht-bench check-agent`).

Weights are loaded relative to `__file__` with `load_policy`, which checks the card, the
sha256 and every tensor's shape before anything is used, and never unpickles.
"""

from pathlib import Path

import numpy as np

from aht_bench.policies.io import load_policy
from aht_bench.policies.runner import PolicyRunner

TASKS = ("lbf-v1",)
WEIGHTS = Path(__file__).resolve().with_name("jax_mlp_lbf.safetensors")

POLICY, PARAMS = load_policy(WEIGHTS)
_runner = PolicyRunner(POLICY, PARAMS, seed=0)


def jax_policy(task_id: str):
    return POLICY, PARAMS


def reset() -> None:
    _runner.reset()


def act(obs: np.ndarray) -> int:
    return _runner.act(obs)
