"""Functional JAX environments for ad hoc teamwork, behind one resettable-to-state API.

    env = aht_bench.envs.make("overcooked-forced_coord-v1")
    state, ts = env.reset(key)
    state, ts = env.step(key, state, actions)   # actions: int32[num_agents]

See `core` for the contract, `wrappers.AutoReset` for auto-reset with a pluggable reset
source, `state_io` for saving and loading states, `gym` and `pz` for the Gymnasium and
PettingZoo shells, and `render` for frames and GIFs.
"""

from aht_bench.envs import tasks as _tasks  # noqa: F401  (registers every task)
from aht_bench.envs.core import Environment, EnvState, InvalidStateError, TimeStep
from aht_bench.envs.registry import (
    UnknownTaskError,
    aliases,
    describe,
    make,
    registered_ids,
    resolve,
)
from aht_bench.envs.state_io import StateFileError, load_states, save_states
from aht_bench.envs.wrappers import AutoReset, P0Starts, StoredStates

__all__ = [
    "AutoReset",
    "EnvState",
    "Environment",
    "InvalidStateError",
    "P0Starts",
    "StateFileError",
    "StoredStates",
    "TimeStep",
    "UnknownTaskError",
    "aliases",
    "describe",
    "load_states",
    "make",
    "registered_ids",
    "resolve",
    "save_states",
]
