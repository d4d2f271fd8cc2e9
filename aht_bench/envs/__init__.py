"""Functional JAX environments for ad hoc teamwork, behind one resettable-to-state API.

    env = aht_bench.envs.make("overcooked-forced_coord-v1")
    state, ts = env.reset(key)
    state, ts = env.step(key, state, actions)   # actions: int32[num_agents]

`task(name)` resolves a task id or alias once into a `Task`, the object inner code is handed
(its `env` built once per process). See `core` for the contract, `wrappers.AutoReset` for
auto-reset with a pluggable reset source, `state_io` for saving and loading states,
`compiled` for `Task` and the jitted per-task reset/step of host loops, and `render` for
frames and GIFs. The Gymnasium and PettingZoo shells live above the policies, in
`aht_bench.adapters`.

May import aht_bench.envs only (its own modules, re-exported).
"""

from aht_bench.envs import tasks as _tasks  # noqa: F401  (registers every task)
from aht_bench.envs.compiled import Task, task
from aht_bench.envs.core import Environment, EnvState, InvalidStateError, TimeStep
from aht_bench.envs.registry import (
    NoTrainingDefaultsError,
    TrainingDefaults,
    UnknownTaskError,
    aliases,
    describe,
    make,
    registered_ids,
    resolve,
    superseded_by,
    training_defaults,
)
from aht_bench.envs.state_io import StateFileError, load_states, save_states
from aht_bench.envs.wrappers import AutoReset, P0Starts, StoredStates

__all__ = [
    "AutoReset",
    "EnvState",
    "Environment",
    "InvalidStateError",
    "NoTrainingDefaultsError",
    "P0Starts",
    "StateFileError",
    "StoredStates",
    "Task",
    "TimeStep",
    "TrainingDefaults",
    "UnknownTaskError",
    "aliases",
    "describe",
    "load_states",
    "make",
    "registered_ids",
    "resolve",
    "save_states",
    "superseded_by",
    "task",
    "training_defaults",
]
