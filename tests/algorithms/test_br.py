"""PPO best response: against a teammate that always plays B, the best response plays B."""

import jax
import numpy as np
import pytest
from tiny_tasks import COORD_TASK, ConstantAction

from aht_bench.algorithms import br
from aht_bench.policies import TeammateSet
from aht_bench.training import BRConfig, PPOConfig

pytestmark = pytest.mark.usefixtures("tiny_tasks")


def test_best_response_to_a_fixed_teammate_reaches_its_optimum():
    # payoff [[2, 0], [0, 1]]; with the teammate on B the best the learner can get is 1
    config = BRConfig(
        task_id=COORD_TASK,
        total_timesteps=32 * 4 * 30,
        num_envs=32,
        rollout_length=4,
        hidden=(16,),
        learner_seat=1,
        ppo=PPOConfig(
            learning_rate=3e-3, anneal_lr=False, num_epochs=4, num_minibatches=2, ent_coef=0.0
        ),
    )
    mates = TeammateSet(["always_B"], [(ConstantAction(1), None)])
    result = br.train(jax.random.PRNGKey(0), config, num_seeds=2, inputs=(mates,))
    returns = result.metrics["episode_return"]
    assert np.all(returns[:, -5:].mean(axis=1) >= 0.95), returns[:, -5:]
    assert np.all(returns[:, 0] < 0.8)
