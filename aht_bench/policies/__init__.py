"""Policies: the protocol, network policies, populations, safe saving/loading and a runner.

`core` holds the one `Policy` protocol; `networks` the flax actor-critics (`MLPActorCritic`,
`RecurrentEgo`); `population` stacked populations and named teammate sets; `io` safetensors +
JSON-card files; `runner` a NumPy adapter for plain Python loops; `agent_file` and `isolated`
load a user's agent file in this process or in a time-limited child process. The `heuristics`
subpackage is imported on its own (`aht_bench.policies.heuristics`).

May import aht_bench.policies only (its own modules, re-exported).
"""

from aht_bench.policies.agent_file import (
    AgentFileError,
    AgentLoadError,
    AgentLoadTimeoutError,
    AgentRuntimeError,
    AgentStepTimeoutError,
    AgentTimeoutError,
    LoadedAgent,
    load_agent_file,
)
from aht_bench.policies.core import Carry, Extras, Params, Policy, reset_carry_where
from aht_bench.policies.io import (
    ARCHITECTURES,
    PolicyFileError,
    load_policy,
    load_population,
    read_card,
    save_policy,
    save_population,
)
from aht_bench.policies.isolated import IsolatedAgent
from aht_bench.policies.networks import GRUCarry, MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population, TeammateSet
from aht_bench.policies.runner import PolicyRunner

__all__ = [
    "AgentFileError",
    "AgentLoadError",
    "AgentLoadTimeoutError",
    "AgentRuntimeError",
    "AgentStepTimeoutError",
    "AgentTimeoutError",
    "IsolatedAgent",
    "LoadedAgent",
    "load_agent_file",
    "ARCHITECTURES",
    "Carry",
    "Extras",
    "GRUCarry",
    "MLPActorCritic",
    "Params",
    "Policy",
    "PolicyFileError",
    "PolicyRunner",
    "Population",
    "RecurrentEgo",
    "TeammateSet",
    "load_policy",
    "load_population",
    "read_card",
    "save_policy",
    "save_population",
    "reset_carry_where",
]
