"""A task resolved once (`Task`), and tasks compiled for a host loop: jitted `reset`/`step` per
task id, cached at module level, and the host copies of what they return.

A task name (an id or an alias) becomes a `Task` once, at the edge: the CLI's `--task`, or the
first line of a public function that takes a name. Inner code is handed the `Task` and never
resolves the name again; its `env` and `compiled` are built once per process and shared by every
layer (the evaluator, the agent-file checks, the Gymnasium and PettingZoo shells), so building
many of them never recompiles.

    task = envs.task("lbf")                                 # UnknownTaskError here, or never
    task.id                                                 # "lbf-v1"
    key, state, timestep = task.compiled.reset(np.uint32(0))
    key, state, timestep = task.compiled.step(key, state, actions)  # actions int32 (A,)
    host = to_host(timestep)                                # NumPy fields

May import numpy, jax and aht_bench.envs (core, registry).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from aht_bench.envs.core import Environment, EnvState, TimeStep
from aht_bench.envs.registry import (
    TrainingDefaults,
    describe,
    make,
    registered_horizon,
    registered_ids,
    resolve,
    training_defaults,
)


class CompiledTask(NamedTuple):
    """A task with its jitted host-loop functions (one per task id, see `compiled_task`)."""

    env: Environment
    reset: Callable[..., Any]  # (seed uint32 ()) -> (key, state, timestep)
    step: Callable[..., Any]  # (key, state, actions int32 (A,)) -> (key, state, timestep)
    action_mask: Callable[..., Any] | None  # (state) -> bool (A, num_actions); None: no mask


@dataclasses.dataclass(frozen=True)
class Task:
    """A registered task, resolved once (`task(name)` makes one from an id or an alias). It
    compares and hashes as its id, so it can be a static argument of a jitted function."""

    id: str
    """The registered id, e.g. "overcooked-forced_coord-v2" (never an alias)."""

    def __post_init__(self) -> None:
        if self.id not in registered_ids():
            raise ValueError(
                f"{self.id!r} is not a registered task id; `aht_bench.envs.task(name)` turns an "
                "id or an alias into a Task"
            )

    @property
    def compiled(self) -> CompiledTask:
        """The environment with its jitted host-loop functions, built once per process (eager
        even when first asked for inside a jit trace: its arrays are constants, not tracers)."""
        with jax.ensure_compile_time_eval():
            return compiled_task(self.id)

    @property
    def env(self) -> Environment:
        """The environment object every layer shares (jit's caches are keyed on it)."""
        return self.compiled.env

    @property
    def horizon(self) -> int | None:
        """The episode length the task was registered with, known without building it."""
        return registered_horizon(self.id)

    @property
    def training(self) -> TrainingDefaults:
        """What the training presets need of the task (`registry.training_defaults`; raises
        `NoTrainingDefaultsError` for a task registered without them)."""
        return training_defaults(self.id)

    @property
    def description(self) -> str:
        """One line about the task (`aht-bench tasks`)."""
        return describe(self.id)

    def __str__(self) -> str:
        return self.id


def task(name: str | Task) -> Task:
    """The `Task` that `name` (a registered id or an alias) means; a `Task` is returned as it is.
    Raises `UnknownTaskError` with a suggestion for a name that is neither."""
    return name if isinstance(name, Task) else Task(resolve(name))


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
