"""IPPO: learns a 2x2 coordination game, keeps checkpoints, and resumes bit-identically."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_tasks import COORD_TASK

from aht_bench.algorithms import ippo
from aht_bench.training import IPPOConfig, PPOConfig

pytestmark = pytest.mark.usefixtures("tiny_tasks")


@pytest.fixture(scope="module")
def config():
    # payoff [[2, 0], [0, 1]]: the optimal joint action (A, A) returns 2, the other
    # equilibrium 1 (the test task exists only while this module's tests run)
    return IPPOConfig(
        task_id=COORD_TASK,
        total_timesteps=32 * 4 * 30,
        num_envs=32,
        rollout_length=4,
        hidden=(16,),
        ppo=PPOConfig(
            learning_rate=3e-3, anneal_lr=False, num_epochs=4, num_minibatches=2, ent_coef=0.0
        ),
        checkpoint_updates=(10, 30),
    )


@pytest.fixture(scope="module")
def result(config):
    return ippo.train(jax.random.PRNGKey(0), config, num_seeds=2)


def test_ippo_reaches_the_optimal_return(result, config):
    cfg = config
    returns = result.metrics["episode_return"]
    assert returns.shape == (2, cfg.num_updates)
    assert np.all(returns[:, -5:].mean(axis=1) >= 1.9), returns[:, -5:]
    assert np.all(returns[:, 0] < 1.5)  # it did have something to learn


def test_metrics_and_checkpoints(result, config):
    cfg = config
    m = result.metrics
    for k in (
        "loss",
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clip_fraction",
        "episodes",
        "env_steps",
    ):
        assert m[k].shape == (2, cfg.num_updates) and np.all(np.isfinite(m[k])), k
    np.testing.assert_array_equal(m["env_steps"][0], np.arange(1, 31) * cfg.batch_size)
    assert sorted(result.kept) == [10, 30]
    final = jax.tree.leaves(result.state.learners.params)
    for a, b in zip(jax.tree.leaves(result.kept[30]), final, strict=True):
        assert a.shape[:2] == (2, 2)  # (seeds, agents, ...)
        np.testing.assert_array_equal(a, b)
    assert int(result.state.update_step[0]) == cfg.num_updates


def test_stopping_after_two_updates_and_resuming_is_bit_identical(config):
    cfg = config
    state = ippo.init_seeds(jax.random.PRNGKey(7), cfg, 2)
    straight = ippo.run(state, cfg, 4)  # calls of updates_per_call = 1 update
    first = ippo.run(state, cfg, 2)
    stored = jax.device_get(first.state)  # what a checkpoint holds: host copies of the state
    resumed = ippo.run(jax.tree.map(jnp.asarray, stored), cfg, 2)
    for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for k, v in straight.metrics.items():
        both = np.concatenate([first.metrics[k], resumed.metrics[k]], axis=1)
        np.testing.assert_array_equal(v, both)


def test_the_shaped_reward_coefficient_anneals_linearly_to_zero(config):
    import dataclasses

    # 128 env steps per update, annealed over 256: 1, 0.5, then 0 from the third update on
    cfg = dataclasses.replace(
        config, total_timesteps=128 * 4, shaped_reward_anneal_steps=256, checkpoint_updates=()
    )
    result = ippo.train(jax.random.PRNGKey(0), cfg)
    np.testing.assert_allclose(result.metrics["shaped_reward_coef"][0], [1.0, 0.5, 0.0, 0.0])
    assert (
        "shaped_reward_coef"
        not in ippo.train(
            jax.random.PRNGKey(0), dataclasses.replace(cfg, shaped_reward_anneal_steps=None)
        ).metrics
    )
