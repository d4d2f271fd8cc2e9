"""Tasks compiled for a host loop: jitted `reset`/`step` per task id, cached at module level, and
the host copies of what they return. The Gymnasium and PettingZoo shells
(`aht_bench.adapters`), the agent-file checks and the evaluator's step-by-step runner all step
a task through these, so building many of them never recompiles.

    task = compiled_task("lbf-v1")
    key, state, timestep = task.reset(np.uint32(0))
    key, state, timestep = task.step(key, state, actions)   # actions int32 (num_agents,)
    host = to_host(timestep)                                # NumPy fields

May import numpy, jax and aht_bench.envs (core, registry).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from aht_bench.envs.core import Environment, EnvState, TimeStep
from aht_bench.envs.registry import make


class CompiledTask(NamedTuple):
    """A task with its jitted host-loop functions (one per task id, see `compiled_task`)."""

    env: Environment
    reset: Callable[..., Any]  # (seed uint32 ()) -> (key, state, timestep)
    step: Callable[..., Any]  # (key, state, actions int32 (A,)) -> (key, state, timestep)
    action_mask: Callable[..., Any] | None  # (state) -> bool (A, num_actions); None: no mask


@functools.cache
def compiled_task(task_id: str) -> CompiledTask:
    """The task registered as `task_id` (an id, not an alias) with jitted reset/step.

    The episode's JAX key lives inside these functions: `reset` derives it from a host seed and
    `step` splits it, so a host loop makes one jitted call per transition.
    """
    env = make(task_id)

    def _reset(seed: jax.Array):
        key, reset_key = jax.random.split(jax.random.PRNGKey(seed))
        state, timestep = env.reset(reset_key)
        return key, state, timestep

    def _step(key: jax.Array, state: EnvState, actions: jax.Array):
        key, step_key = jax.random.split(key)
        state, timestep = env.step(step_key, state, actions)
        return key, state, timestep

    mask = getattr(env, "action_mask", None)
    return CompiledTask(
        env=env,
        reset=jax.jit(_reset),
        step=jax.jit(_step),
        action_mask=jax.jit(mask) if callable(mask) else None,
    )


def host_action_mask(task: CompiledTask, state: EnvState) -> np.ndarray | None:
    """int8 (num_agents, num_actions): 1 where an action is legal in `state`, None for tasks
    without a mask. int8 because `gymnasium.spaces.Discrete.sample(mask=...)` takes that."""
    if task.action_mask is None:
        return None
    return np.asarray(task.action_mask(state), dtype=np.int8)


class HostTimeStep(NamedTuple):
    """The fields of a `TimeStep` a host loop needs, as NumPy arrays."""

    obs: np.ndarray  # (num_agents, obs_dim) float32, writable
    reward: np.ndarray  # (num_agents,) float32: base reward
    shaped_reward: np.ndarray  # (num_agents,) float32: shaping bonus alone
    episode_return: np.ndarray  # (num_agents,) float32: base return so far
    terminated: bool
    truncated: bool
    time: int


def to_host(timestep: TimeStep) -> HostTimeStep:
    """Copy `timestep` to the host (np.asarray per field is faster than jax.device_get here)."""
    return HostTimeStep(
        obs=np.array(timestep.obs),
        reward=np.asarray(timestep.reward),
        shaped_reward=np.asarray(timestep.shaped_reward),
        episode_return=np.asarray(timestep.episode_return),
        terminated=bool(timestep.terminated),
        truncated=bool(timestep.truncated),
        time=int(timestep.time),
    )
