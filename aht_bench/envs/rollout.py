"""Uniform-random rollouts: the smallest jitted loop over the API, used by the contract tests,
the throughput benchmark, `aht-bench render` and anyone checking a task by hand.

May import jax and aht_bench.envs only.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from aht_bench.envs.core import Environment, EnvState, TimeStep
from aht_bench.envs.wrappers import AutoReset


def random_actions(key: jax.Array, num_agents: int, num_actions: int) -> jax.Array:
    """Uniform actions, int32 (num_agents,)."""
    return jax.random.randint(key, (num_agents,), 0, num_actions, dtype=jnp.int32)


@partial(jax.jit, static_argnames=("env", "num_steps"))
def random_rollout(
    env: Environment | AutoReset, key: jax.Array, state: EnvState[Any], num_steps: int
) -> tuple[EnvState[Any], tuple[EnvState[Any], jax.Array, TimeStep]]:
    """Scan `num_steps` uniform-random steps of one env from `state`.

    Returns the last state and, per step, (state before the step, actions, timestep after it),
    each with a leading time axis. vmap it over keys and states for a batch of envs.
    """

    def _env_step(carry, step_key):
        state = carry
        key_act, key_env = jax.random.split(step_key)
        actions = random_actions(key_act, env.num_agents, env.num_actions)
        next_state, timestep = env.step(key_env, state, actions)
        return next_state, (state, actions, timestep)

    return jax.lax.scan(_env_step, state, jax.random.split(key, num_steps))
