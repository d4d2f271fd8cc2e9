"""PPO for the recurrent ego agent against teammates drawn uniformly from a population
(paper Alg. rotate_ego_update; the shared ego stage of every two-stage method, Table
ppo_ego_tm_hyperparams).

The ego agent is `RecurrentEgo` (a GRU over observation + previous action: the paper's
observation-action history; the paper uses S5). Each env draws a teammate per episode from the
pool (uniform by default; a `TeammatePool` with zero weights leaves members out). PPO
minibatches are whole env sequences re-run from their stored start carries.

    pop = Population.stack(mlp, [params_0, params_1, ...])
    result = ego.train(key, presets.get("ego", "quick", "lbf"), pop, num_seeds=2)

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
from aht_bench.policies.networks import RecurrentEgo
from aht_bench.training.config import EgoConfig
from aht_bench.training.driver import Metrics
from aht_bench.training.rollout import make_env

EgoState = FixedPartnerState

__all__ = ["METHOD", "SMOKE", "EgoState", "init", "learner_params", "network", "train", "update"]


def network(config: EgoConfig) -> RecurrentEgo:
    """The ego agent's architecture."""
    env = make_env(config.task_id, config.shaping)
    return RecurrentEgo(env.obs_dim, env.num_actions, hidden=config.hidden)


def init(key: jax.Array, config: Any, teammates: Teammates) -> FixedPartnerState:
    """A fresh ego agent against `teammates` (Population, TeammateSet or TeammatePool), freshly
    reset envs."""
    return fixed_partner.init(key, config, network(config), teammates)


def update(state: FixedPartnerState, config: Any) -> tuple[FixedPartnerState, Metrics]:
    """One PPO update of the ego agent."""
    return fixed_partner.update(state, config, network(config))


METHOD: Method[Any, FixedPartnerState] = fixed_partner.method("ego", network, init, update)
"""The ego agent as a `Method`: one step `updates_per_call` PPO updates against the teammates
`init` takes after the setup."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()
"""`train(key, config, num_seeds=1, on_iteration=None, inputs=(teammates,))`: a whole run
(`aht_bench.algorithms.api.Method`)."""


SMOKE = ippo.SMOKE
"""The smoke run (`aht_bench.runs.smoke`): IPPO's overrides (the same PPO learner fields), a
whole run of a few PPO updates on LBF."""
