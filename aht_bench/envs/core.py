"""The functional environment contract every aht-bench task implements.

An environment is a set of small hooks over an explicit backend state (`_reset_inner`,
`_step_inner`, `_observe_inner`, `_time`, `_is_terminal`); the base class `Environment` writes
`reset`, `step`, `observe` and reset-to-state once for all tasks. Agents live on a leading
array axis. There is no auto-reset inside `step`: see `aht_bench.envs.wrappers.AutoReset`.

This module may import jax, flax and numpy only; it knows nothing about backends.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

Inner = TypeVar("Inner")


class InvalidStateError(ValueError):
    """A state that the environment could never produce (raised by `Environment.validate`)."""


@struct.dataclass
class EnvState(Generic[Inner]):
    """The state of one aht-bench episode.

    Every state an environment produced, and every state loaded from disk that passes
    `Environment.validate`, is a valid start state.
    """

    inner: Inner  # the backend's state pytree (Jumanji LBF, JaxMARL Overcooked or native)
    episode_return: jax.Array  # (num_agents,) float32: base return since the episode started


@struct.dataclass
class TimeStep:
    """What the agents see after `reset` or `step`.

    `reward` is the base (unshaped) reward that evaluation scores; `shaped_reward` is the
    task's shaping bonus alone (zero where the task has none), so a trainer uses
    `reward + coef * shaped_reward`.
    """

    obs: jax.Array  # (num_agents, obs_dim) float32: each agent's flat observation
    reward: jax.Array  # (num_agents,) float32: base reward of this transition
    shaped_reward: jax.Array  # (num_agents,) float32: shaping bonus of this transition
    terminated: jax.Array  # () bool: the episode ended inside the task (not by the horizon)
    truncated: jax.Array  # () bool: the horizon was reached without termination
    episode_return: jax.Array  # (num_agents,) float32: base return including this step
    time: jax.Array  # () int32: steps taken in the episode so far
    final_obs: jax.Array  # (num_agents, obs_dim) float32: obs before any auto-reset

    @property
    def done(self) -> jax.Array:
        """`terminated | truncated`, shape ()."""
        return jnp.logical_or(self.terminated, self.truncated)


class Environment(Generic[Inner]):
    """Base class: subclasses set the static attributes in `__init__` and write the hooks.

    Static attributes (fix array shapes; never traced):
        task_id: the registry id, e.g. ``"overcooked-forced_coord-v1"``.
        num_agents: number of seats.
        num_actions: size of every seat's discrete action space.
        obs_dim: length of each agent's flat observation.
        horizon: the episode is truncated after this many steps.
        action_names: one short name per action index.
    """

    task_id: str
    num_agents: int
    num_actions: int
    obs_dim: int
    horizon: int
    action_names: tuple[str, ...]

    # ------------------------------------------------------------------ hooks
    def _reset_inner(self, key: jax.Array) -> Inner:
        """Sample a start state from the task's start distribution p0."""
        raise NotImplementedError

    def _step_inner(
        self, key: jax.Array, inner: Inner, actions: jax.Array
    ) -> tuple[Inner, jax.Array, jax.Array]:
        """One transition: returns (next inner, base reward (A,), shaped bonus (A,))."""
        raise NotImplementedError

    def _observe_inner(self, inner: Inner) -> jax.Array:
        """Flat float32 observations of shape (num_agents, obs_dim)."""
        raise NotImplementedError

    def _time(self, inner: Inner) -> jax.Array:
        """Steps taken in the episode, int32 ()."""
        raise NotImplementedError

    def _is_terminal(self, inner: Inner) -> jax.Array:
        """Whether the task ended the episode (not counting the horizon), bool ()."""
        return jnp.zeros((), dtype=bool)

    def _validate_inner(self, inner: Any) -> list[str]:
        """Problems that make a concrete (NumPy) backend state impossible; [] if none."""
        return []

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-dimension (low, high) of the flat observation, float32 arrays of shape (obs_dim,)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ API
    def reset(self, key: jax.Array) -> tuple[EnvState[Inner], TimeStep]:
        """Start an episode from p0."""
        inner = self._reset_inner(key)
        state = EnvState(inner=inner, episode_return=jnp.zeros((self.num_agents,), jnp.float32))
        return state, self.observe(state)

    def step(
        self, key: jax.Array, state: EnvState[Inner], actions: jax.Array
    ) -> tuple[EnvState[Inner], TimeStep]:
        """Apply `actions` (int32 (num_agents,)) to `state`. Does not auto-reset.

        Stepping a state that is already done is undefined; wrap the env in `AutoReset`.
        """
        actions = jnp.asarray(actions, dtype=jnp.int32)
        inner, reward, shaped = self._step_inner(key, state.inner, actions)
        reward = reward.astype(jnp.float32)
        episode_return = state.episode_return + reward
        next_state = EnvState(inner=inner, episode_return=episode_return)
        timestep = self.observe(next_state)
        return next_state, dataclasses.replace(
            timestep, reward=reward, shaped_reward=shaped.astype(jnp.float32)
        )

    def observe(self, state: EnvState[Inner]) -> TimeStep:
        """The timestep for `state` as a start state: reset-to-state is `observe(state)`."""
        obs = self._observe_inner(state.inner).astype(jnp.float32)
        time = jnp.asarray(self._time(state.inner), jnp.int32)
        terminated = jnp.asarray(self._is_terminal(state.inner), bool)
        truncated = jnp.logical_and(time >= self.horizon, jnp.logical_not(terminated))
        zeros = jnp.zeros((self.num_agents,), jnp.float32)
        return TimeStep(
            obs=obs,
            reward=zeros,
            shaped_reward=zeros,
            terminated=terminated,
            truncated=truncated,
            episode_return=state.episode_return,
            time=time,
            final_obs=obs,
        )

    def validate(self, state: EnvState[Inner]) -> None:
        """Raise `InvalidStateError` if `state` is one this task can never produce.

        Works on one state or on a batch (leading axes are checked element by element).
        Runs on the host: call it outside jit.
        """
        host = jax.tree.map(np.asarray, state)
        ret = host.episode_return
        problems: list[str] = []
        if ret.shape[-1:] != (self.num_agents,):
            problems.append(
                f"episode_return has shape {ret.shape}, expected (..., {self.num_agents})"
            )
        elif not np.all(np.isfinite(ret)):
            problems.append("episode_return holds non-finite values")
        batch_shape = ret.shape[:-1]
        for index in np.ndindex(*batch_shape):
            inner = jax.tree.map(lambda x, index=index: x[index], host.inner)
            where = f"state{list(index)}: " if batch_shape else ""
            problems += [where + p for p in self._validate_inner(inner)]
        if problems:
            shown = "\n  - ".join(problems[:10])
            more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
            raise InvalidStateError(
                f"{self.task_id}: impossible state:\n  - {shown}{more}\n"
                "Build start states with env.reset / env.step, or load ones saved by "
                "aht_bench.envs.save_states."
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.task_id!r}, agents={self.num_agents}, "
            f"actions={self.num_actions}, obs_dim={self.obs_dim}, horizon={self.horizon})"
        )
