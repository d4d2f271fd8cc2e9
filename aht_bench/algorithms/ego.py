"""PPO for the recurrent ego agent against teammates drawn uniformly from a population
(paper Alg. rotate_ego_update; the shared ego stage of every two-stage method, Table
ppo_ego_tm_hyperparams).

The ego agent is `RecurrentEgo` (a GRU over observation + previous action: the paper's
observation-action history; the paper uses S5). Each env draws a teammate per episode from the
pool (uniform by default; a `TeammatePool` with zero weights leaves members out). PPO
minibatches are whole env sequences re-run from their stored start carries.

    pop = Population.stack(mlp, [params_0, params_1, ...])
    result = ego.train(key, presets.get("ego", "quick", "lbf"), pop, num_seeds=2)

May import aht_bench.policies, aht_bench.training and aht_bench.algorithms (fixed_partner, ippo)
only.
"""

from __future__ import annotations

from aht_bench.algorithms import fixed_partner, ippo
from aht_bench.algorithms.fixed_partner import FixedPartnerState, learner_params
from aht_bench.policies.networks import RecurrentEgo
from aht_bench.training.config import EgoConfig
from aht_bench.training.rollout import make_env

EgoState = FixedPartnerState

__all__ = ["SMOKE", "EgoState", "init", "learner_params", "network", "train", "update"]


def network(config: EgoConfig) -> RecurrentEgo:
    """The ego agent's architecture."""
    env = make_env(config.task_id, config.shaping)
    return RecurrentEgo(env.obs_dim, env.num_actions, hidden=config.hidden)


init, update, train = fixed_partner.bind(network)
"""`init(key, config, teammates)`, `update(state, config)` and `train(key, config, teammates,
num_seeds=1, on_update=None)` of the ego agent (`fixed_partner.Learner`)."""


SMOKE = ippo.SMOKE
"""The smoke run (`aht_bench.runs.smoke`): IPPO's overrides (the same PPO learner fields), a
whole run of a few PPO updates on LBF."""
