"""PPO for the recurrent ego agent against teammates drawn uniformly from a population
(paper Alg. rotate_ego_update; the shared ego stage of every two-stage method, Table
ppo_ego_tm_hyperparams).

The ego agent is `RecurrentEgo` (a GRU over observation + previous action: the paper's
observation-action history; the paper uses S5). Each env draws a teammate per episode from the
pool (uniform by default; a `TeammatePool` with zero weights leaves members out). PPO
minibatches are whole env sequences re-run from their stored start carries.

    pop = Population.stack(mlp, [params_0, params_1, ...])
    result = ego.train(key, presets.get("ego", "quick", "lbf"), pop, num_seeds=2)

May import jax, aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax

from aht_bench.algorithms import fixed_partner
from aht_bench.algorithms.fixed_partner import FixedPartnerState, Teammates, learner_params
from aht_bench.policies.networks import RecurrentEgo
from aht_bench.training.config import EgoConfig
from aht_bench.training.driver import Metrics, TrainResult
from aht_bench.training.rollout import make_env

EgoState = FixedPartnerState

__all__ = ["EgoState", "init", "learner_params", "network", "train", "update"]


@functools.lru_cache(maxsize=32)
def network(config: EgoConfig) -> RecurrentEgo:
    """The ego agent's architecture."""
    env = make_env(config.task_id, config.shaping)
    return RecurrentEgo(env.obs_dim, env.num_actions, hidden=config.hidden)


def init(key: jax.Array, config: EgoConfig, teammates: Teammates) -> EgoState:
    """A fresh ego agent against `teammates` (Population, TeammateSet or TeammatePool)."""
    return fixed_partner.init(key, config, network(config), teammates)


def update(state: EgoState, config: EgoConfig) -> tuple[EgoState, Metrics]:
    """One PPO update of the ego agent."""
    return fixed_partner.update(state, config, network(config))


def train(
    key: jax.Array,
    config: EgoConfig,
    teammates: Teammates,
    num_seeds: int = 1,
    on_update: Callable[[int, Metrics], None] | None = None,
) -> TrainResult:
    """A whole run for `num_seeds` seeds at once (seed i uses `split(key, num_seeds)[i]`)."""
    return fixed_partner.train(key, config, teammates, init, update, num_seeds, on_update)
