"""PPO ego agent against a population: it learns to adapt to the teammate it is paired with."""

import jax
import numpy as np
import pytest
from tiny_tasks import TRUNC_TASK, ConstantAction

from aht_bench.algorithms import ego
from aht_bench.policies import TeammateSet
from aht_bench.training import EgoConfig, PPOConfig

pytestmark = pytest.mark.usefixtures("tiny_tasks")


def test_ego_adapts_to_teammates_drawn_from_a_population():
    # payoff [[2, 0], [0, 1]] for 3 steps; each episode's teammate always plays A or always B
    # (drawn uniformly). Ignoring the teammate, the best is "always A": (6 + 0) / 2 = 3.
    # Adapting (A first, then copy the teammate) earns (6 + 2) / 2 = 4.
    config = EgoConfig(
        task_id=TRUNC_TASK,
        total_timesteps=32 * 6 * 100,
        num_envs=32,
        rollout_length=6,
        hidden=16,
        ppo=PPOConfig(
            learning_rate=3e-3, anneal_lr=False, num_epochs=4, num_minibatches=4, ent_coef=0.0
        ),
    )
    mates = TeammateSet(
        ["always_A", "always_B"], [(ConstantAction(0), None), (ConstantAction(1), None)]
    )
    result = ego.train(jax.random.PRNGKey(0), config, num_seeds=2, inputs=(mates,))
    returns = result.metrics["episode_return"]
    assert np.all(returns[:, -20:].mean(axis=1) >= 3.3), returns[:, -20:].mean(axis=1)
    hidden = result.state.learner.params["params"]["gru"]
    assert jax.tree.leaves(hidden)[0].shape[0] == 2  # a leading seed axis
