"""Auto-reset with a pluggable reset source.

`AutoReset(env, source)` starts a new episode whenever one ends. Where the new episode starts is
the source's choice: `P0Starts` samples the task's start distribution; `StoredStates` samples a
batch of states uniformly, which ROTATE's SXP/XSP rollouts need (start from states seen in
other rollouts). Sources are pytrees, so a batch of stored states can be an argument of a jitted
function and change between calls without recompiling.

May import jax, flax and aht_bench.envs.core only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import struct

from aht_bench.envs.core import Environment, EnvState, TimeStep


class ResetSource(Protocol):
    """Where an auto-reset episode starts."""

    def sample(self, key: jax.Array) -> EnvState[Any]:
        """One start state (unbatched)."""
        ...


@struct.dataclass
class P0Starts:
    """Fresh starts from the task's start distribution p0."""

    env: Environment = struct.field(pytree_node=False)

    def sample(self, key: jax.Array) -> EnvState[Any]:
        state, _ = self.env.reset(key)
        return state


@struct.dataclass
class StoredStates:
    """Starts drawn uniformly from a stored batch of states.

    `states` is an `EnvState` with one leading batch axis (e.g. every state of an XP rollout,
    flattened over time and environments). A sampled state keeps its time step, so the episode
    runs on to the same horizon; its `episode_return` restarts at zero.
    """

    states: EnvState[Any]

    @property
    def size(self) -> int:
        return int(self.states.episode_return.shape[0])

    def sample(self, key: jax.Array) -> EnvState[Any]:
        index = jax.random.randint(key, (), 0, self.states.episode_return.shape[0])
        state = jax.tree.map(lambda x: x[index], self.states)
        return state.replace(episode_return=jnp.zeros_like(state.episode_return))


def _where(cond: jax.Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


class AutoReset:
    """Wraps an `Environment` so that `step` starts a new episode when one ends.

    The timestep of the step that ends an episode reports that episode's reward,
    `terminated`/`truncated`, `episode_return` and `final_obs` (the last observation of the
    episode, for bootstrapping truncated returns), while `obs` is already the first
    observation of the next episode. The returned state is the next episode's start state.
    """

    def __init__(self, env: Environment, source: ResetSource | None = None):
        self.env = env
        self.source: ResetSource = source if source is not None else P0Starts(env)

    def __getattr__(self, name: str) -> Any:
        # Static attributes (num_agents, obs_dim, ...) and helpers come from the wrapped env.
        return getattr(self.env, name)

    def reset(self, key: jax.Array) -> tuple[EnvState[Any], TimeStep]:
        """Start from the reset source (not necessarily from p0)."""
        state = self.source.sample(key)
        return state, self.env.observe(state)

    def step(
        self, key: jax.Array, state: EnvState[Any], actions: jax.Array
    ) -> tuple[EnvState[Any], TimeStep]:
        key_step, key_reset = jax.random.split(key)
        next_state, timestep = self.env.step(key_step, state, actions)
        return self.restart_where_done(next_state, timestep, self.source.sample(key_reset))

    def sample_starts(self, keys: jax.Array) -> EnvState[Any]:
        """One start state from the reset source per key of `keys` (N keys): leaves (N, ...)."""
        return jax.vmap(self.source.sample)(keys)

    def restart_where_done(
        self, next_state: EnvState[Any], timestep: TimeStep, start: EnvState[Any]
    ) -> tuple[EnvState[Any], TimeStep]:
        """The second half of `step`: `start` replaces `next_state` if `timestep` ended the
        episode, and the timestep gets the observation of the state returned.

        `(next_state, timestep)` is what the wrapped env's `step` returned and `start` a state
        from the reset source. A caller that steps many envs can split `step` this way to draw
        start states only for the episodes that ended (`aht_bench.training.rollout`).
        """
        out_state = _where(timestep.done, start, next_state)
        # Choose the state first, then observe it once: observing both and choosing between the
        # two flat observations made XLA fuse both observation builds into the select, about
        # half of an Overcooked step on CPU. `final_obs` costs nothing unless a caller reads it.
        return out_state, dataclasses.replace(
            timestep, obs=self.env.observe(out_state).obs, final_obs=timestep.obs
        )
