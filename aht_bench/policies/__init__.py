"""Policies: the protocol, network policies, populations, safe saving/loading and a runner.

`core` holds the one `Policy` protocol; `networks` the flax actor-critics (`MLPActorCritic`,
`RecurrentEgo`); `population` stacked populations and named teammate sets; `io` safetensors +
JSON-card files; `runner` a NumPy adapter for plain Python loops; `agent_file` and `isolated`
load a user's agent file in this process or in a time-limited child process. The `heuristics`
subpackage is imported on its own (`aht_bench.policies.heuristics`).

The names below are imported on first use (`__getattr__`), so importing one module of the
package imports only what that module needs: the sandboxed agent worker loads `agent_file`
without JAX, which only a JAX agent then imports (issue 53: a broken agent file fails in
seconds).

May import aht_bench.policies only (its own modules, re-exported).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers; at run time `__getattr__` imports them
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
    from aht_bench.policies.population import Population
    from aht_bench.policies.runner import PolicyRunner
    from aht_bench.policies.teammate_set import TeammateSet

_EXPORTS = {
    "AgentFileError": "agent_file",
    "AgentLoadError": "agent_file",
    "AgentLoadTimeoutError": "agent_file",
    "AgentRuntimeError": "agent_file",
    "AgentStepTimeoutError": "agent_file",
    "AgentTimeoutError": "agent_file",
    "LoadedAgent": "agent_file",
    "load_agent_file": "agent_file",
    "Carry": "core",
    "Extras": "core",
    "Params": "core",
    "Policy": "core",
    "reset_carry_where": "core",
    "ARCHITECTURES": "io",
    "PolicyFileError": "io",
    "load_policy": "io",
    "load_population": "io",
    "read_card": "io",
    "save_policy": "io",
    "save_population": "io",
    "IsolatedAgent": "isolated",
    "GRUCarry": "networks",
    "MLPActorCritic": "networks",
    "RecurrentEgo": "networks",
    "Population": "population",
    "TeammateSet": "teammate_set",
    "PolicyRunner": "runner",
}
"""Each exported name -> the module it lives in, imported on first use (so that importing one
module, such as `agent_file` in a sandboxed worker, does not import JAX with the others)."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'aht_bench.policies' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aht_bench.policies.{module}"), name)


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
