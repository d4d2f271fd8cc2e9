"""The environment contract, checked over every registered id (JaxMARL's
test_envs_implement_base_api and Jumanji's env_not_smoke are the model)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs
from aht_bench.envs.rollout import random_rollout

NUM_ENVS = 8
TASK_IDS = envs.registered_ids()


def _steps(env) -> int:
    # Long enough to cross an episode end on the short games, short enough for CI on Overcooked.
    return min(2 * env.horizon + 3, 60)


@pytest.fixture(scope="module", params=TASK_IDS)
def task(request):
    """(env, batched rollout) per task: one compile per task for the whole module."""
    env = envs.make(request.param)
    auto = envs.AutoReset(env)
    steps = _steps(env)

    @jax.jit
    def run(key):
        keys = jax.random.split(key, NUM_ENVS)
        start, _ = jax.vmap(env.reset)(keys)
        return jax.vmap(lambda k, s: random_rollout(auto, k, s, steps))(keys, start)

    return env, run


def test_static_attributes(task):
    env, _ = task
    assert env.num_agents >= 2 and env.num_actions >= 2 and env.obs_dim >= 1 and env.horizon >= 1
    assert len(env.action_names) == env.num_actions
    low, high = env.observation_bounds()
    assert low.shape == high.shape == (env.obs_dim,)
    assert np.all(low <= high)


def test_reset_and_step_jit_and_vmap(task):
    env, _ = task
    keys = jax.random.split(jax.random.PRNGKey(0), NUM_ENVS)
    state, ts = jax.jit(jax.vmap(env.reset))(keys)
    assert ts.obs.shape == (NUM_ENVS, env.num_agents, env.obs_dim)
    assert ts.obs.dtype == jnp.float32
    assert ts.reward.shape == ts.shaped_reward.shape == (NUM_ENVS, env.num_agents)
    assert ts.terminated.shape == ts.truncated.shape == ts.time.shape == (NUM_ENVS,)
    assert not ts.done.any() and (ts.time == 0).all() and (ts.episode_return == 0).all()
    actions = jnp.zeros((NUM_ENVS, env.num_agents), jnp.int32)
    state2, ts2 = jax.jit(jax.vmap(env.step))(keys, state, actions)
    assert ts2.obs.shape == ts.obs.shape
    assert (ts2.time == 1).all()
    # observe(state) is reset-to-state: it reproduces the step's observation exactly
    np.testing.assert_array_equal(jax.vmap(env.observe)(state2).obs, ts2.obs)
    env.validate(state2)


def test_same_key_same_trajectory_different_key_different(task):
    _, run = task
    a = run(jax.random.PRNGKey(1))
    b = run(jax.random.PRNGKey(1))
    c = run(jax.random.PRNGKey(2))
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    (_, (_, actions_a, ts_a)), (_, (_, actions_c, ts_c)) = a, c
    differs = not np.array_equal(actions_a, actions_c) or not np.array_equal(ts_a.obs, ts_c.obs)
    assert differs


def test_observations_in_bounds_and_everything_finite(task):
    env, run = task
    _, (states, _, ts) = run(jax.random.PRNGKey(3))
    low, high = env.observation_bounds()
    for obs in (ts.obs, ts.final_obs):
        obs = np.asarray(obs)
        assert np.isfinite(obs).all()
        assert (obs >= low).all() and (obs <= high).all(), (
            f"dims out of bounds: {np.nonzero((obs < low) | (obs > high))[-1][:10]}"
        )
    for leaf in jax.tree.leaves((states, ts)):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.isfinite(np.asarray(leaf)).all()


def test_terminated_truncated_at_the_right_steps(task):
    env, run = task
    _, (states, _, ts) = run(jax.random.PRNGKey(4))
    time, term, trunc = np.asarray(ts.time), np.asarray(ts.terminated), np.asarray(ts.truncated)
    assert not (term & trunc).any(), "terminated and truncated are exclusive"
    # truncation happens exactly at the horizon, and only when the task did not terminate
    np.testing.assert_array_equal(trunc, (time >= env.horizon) & ~term)
    assert (time <= env.horizon).all()
    # time counts up by one per step within an episode; after an episode ends, AutoReset starts
    # a fresh p0 episode, so the next step reports time 1
    done = term | trunc
    np.testing.assert_array_equal(time[:, 1:], np.where(done[:, :-1], 1, time[:, :-1] + 1))


def test_saved_mid_episode_state_reproduces_trajectory(task, tmp_path):
    env, _ = task
    keys = jax.random.split(jax.random.PRNGKey(5), NUM_ENVS)
    start, _ = jax.vmap(env.reset)(keys)
    auto = envs.AutoReset(env)
    rollout = jax.jit(
        jax.vmap(lambda key, s, n: random_rollout(auto, key, s, n), (0, 0, None)),
        static_argnums=2,
    )
    mid, _ = rollout(keys, start, 7)
    env.validate(mid)
    path = tmp_path / "mid.safetensors"
    envs.save_states(path, env, mid)
    loaded = envs.load_states(path, env)
    for x, y in zip(jax.tree.leaves(mid), jax.tree.leaves(loaded), strict=True):
        np.testing.assert_array_equal(x, y)
    n = 7  # as many steps as to the mid state: one compile of `rollout` serves both
    cont_keys = jax.random.split(jax.random.PRNGKey(6), NUM_ENVS)
    _, (_, act_a, ts_a) = rollout(cont_keys, mid, n)
    _, (_, act_b, ts_b) = rollout(cont_keys, loaded, n)
    for x, y in zip(jax.tree.leaves((act_a, ts_a)), jax.tree.leaves((act_b, ts_b)), strict=True):
        np.testing.assert_array_equal(x, y)
