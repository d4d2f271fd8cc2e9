"""PPO best response to a fixed teammate or set (paper: the RL-trained best responses behind the
normalisation upper bounds, App. "Evaluation Return Normalization Procedure").

A state-based MLP learner (the paper's BRs are fully connected) in `config.learner_seat`, the
teammate(s) in the other seat(s), drawn per episode from the given set. The paper gives no BR
table; its presets use the IPPO table (the base algorithm of every method).

    heuristic = overcooked_heuristic("cramped_room", "independent", 0.0)
    mates = TeammateSet(["independent_agent_0"], [(heuristic, None)])
    result = br.train(key, presets.get("br", "quick", "cramped_room"), mates)

May import jax, aht_bench.policies, aht_bench.training and aht_bench.algorithms (api,
fixed_partner, ippo)
only.
"""

from __future__ import annotations

from typing import Any

import jax

from aht_bench.algorithms import fixed_partner, ippo
from aht_bench.algorithms.api import Method
from aht_bench.algorithms.fixed_partner import FixedPartnerState, Teammates, learner_params
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.training.config import BRConfig
from aht_bench.training.driver import Metrics
from aht_bench.training.rollout import make_env

BRState = FixedPartnerState

__all__ = ["METHOD", "SMOKE", "BRState", "init", "learner_params", "network", "train", "update"]


def network(config: BRConfig) -> MLPActorCritic:
    """The best response's architecture."""
    env = make_env(config.task_id, config.shaping)
    return MLPActorCritic(env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.hidden)


def init(key: jax.Array, config: Any, teammates: Teammates) -> FixedPartnerState:
    """A fresh best response against `teammates` (Population, TeammateSet or TeammatePool), freshly
    reset envs."""
    return fixed_partner.init(key, config, network(config), teammates)


def update(state: FixedPartnerState, config: Any) -> tuple[FixedPartnerState, Metrics]:
    """One PPO update of the best response."""
    return fixed_partner.update(state, config, network(config))


METHOD: Method[Any, FixedPartnerState] = fixed_partner.method("br", network, init, update)
"""The best response as a `Method`: one step `updates_per_call` PPO updates against the teammates
`init` takes after the setup."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()
"""`train(key, config, num_seeds=1, on_iteration=None, inputs=(teammates,))`: a whole run
(`aht_bench.algorithms.api.Method`)."""


SMOKE = ippo.SMOKE
"""The smoke run (`aht_bench.runs.smoke`): IPPO's overrides (the same PPO learner fields), a
whole run of a few PPO updates on LBF."""
