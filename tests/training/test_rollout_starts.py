"""Episode starts and final values inside `rollout`: the start states of episodes that begin
during a rollout come from a pool drawn before its scan (`_StartPool`), and past the pool's end
from fresh draws; the value of a step's final observation is computed only where the horizon
cut the episode, and is 0 where the task ended it."""

import dataclasses
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_tasks import COORD_TASK, TRUNC_TASK

from aht_bench import envs
from aht_bench.policies import MLPActorCritic
from aht_bench.training import Pairing, init_rollout, rollout
from aht_bench.training.rollout import _pool_size, _StartPool, make_env

pytestmark = pytest.mark.usefixtures("tiny_tasks")
# the module (`aht_bench.training.rollout` as an attribute is the function)
rollout_module = importlib.import_module("aht_bench.training.rollout")


def _learners(env, hidden=(8,)):
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=hidden)
    params = (net.init(jax.random.PRNGKey(1)), net.init(jax.random.PRNGKey(2)))
    return Pairing(policies=(net, net), learners=(0, 1)), params


def _jit_rollout():  # a fresh jit: tests that patch the pool size must not reuse a compile
    return jax.jit(rollout, static_argnames=("env", "pairing", "num_steps", "keep_states"))


def test_pool_size():
    assert _pool_size(100, 128, 64) == 16 * 64  # LBF: an end every 8 steps
    assert _pool_size(3, 7, 4) == 3 * 4  # a 3-step horizon: an end every 3 steps
    assert _pool_size(1, 5, 4) == 5 * 4  # never more than one end per step


def test_take_fills_ended_envs_in_order_then_draws_past_the_end():
    env = make_env(TRUNC_TASK)
    labels = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 3))[0]
    labels = dataclasses.replace(labels, episode_return=jnp.arange(6.0).reshape(3, 2) + 1.0)
    pool = _StartPool(labels, enough=False)
    done = jnp.array([True, False, True, True, True])
    keys = jax.random.split(jax.random.PRNGKey(1), 5)
    starts, used = jax.jit(pool.take, static_argnums=0)(env, done, jnp.int32(1), keys)
    assert int(used) == 5
    got = np.asarray(starts.episode_return[:, 0])
    # pool states 1 and 2 go to the first two envs that ended; the next two are past the end
    # of the pool (3 states) and start from a fresh draw (episode return 0)
    assert got[0] == 3.0 and got[2] == 5.0
    assert got[3] == 0.0 and got[4] == 0.0


# slow: compiles an LBF rollout that keeps its states; the pool's past-the-end draws are
# checked fast by test_take_fills_ended_envs_in_order_then_draws_past_the_end
@pytest.mark.slow
def test_restarts_past_the_pool_are_fresh_valid_draws(monkeypatch):
    monkeypatch.setattr(rollout_module, "_pool_size", lambda horizon, steps, num_envs: 8)
    env = make_env("lbf-v1")
    pairing, params = _learners(env)
    num_envs = 32
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), num_envs)
    # every env 3 steps before the horizon: all episodes end at step 2 and restart at step 3
    inner = state.env_state.inner.replace(
        step_count=jnp.full((num_envs,), env.horizon - 3, jnp.int32)
    )
    state = state._replace(env_state=dataclasses.replace(state.env_state, inner=inner))
    _, traj = _jit_rollout()(env, pairing, params, state, jax.random.PRNGKey(4), 5, True)
    assert traj.states is not None
    assert np.asarray(traj.truncated)[2].all() and np.asarray(traj.starts)[3].all()
    restarts = jax.tree.map(lambda x: x[3], traj.states)
    np.testing.assert_array_equal(np.asarray(restarts.inner.step_count), 0)
    env.validate(restarts)
    # 8 from the pool, 24 drawn past its end: all different draws (State.key is the generator
    # key the start state came from), none a state seen before
    seen = {tuple(k) for k in np.asarray(state.env_state.inner.key)}
    new = [tuple(k) for k in np.asarray(restarts.inner.key)]
    assert len(set(new)) == num_envs and not seen & set(new)


def test_final_values_are_zero_where_the_task_ended_the_episode():
    env = make_env(COORD_TASK)  # every episode ends (terminates) after one step
    pairing, params = _learners(env)
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), 4)
    _, traj = _jit_rollout()(env, pairing, params, state, jax.random.PRNGKey(1), 3)
    assert np.asarray(traj.terminated).all()
    for data in traj.learners:
        np.testing.assert_array_equal(np.asarray(data.final_values), 0.0)


def test_final_values_with_p0_and_with_stored_starts_agree():
    # With p0 starts only truncated steps are evaluated (at most ceil(T / horizon) per env);
    # with stored starts every step is. Stored p0 states replay the same deterministic game.
    env = make_env(TRUNC_TASK)
    pairing, params = _learners(env)
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), 4)
    stored = envs.AutoReset(env.env, envs.StoredStates(state.env_state))
    run = _jit_rollout()
    _, p0 = run(env, pairing, params, state, jax.random.PRNGKey(1), 8)
    _, st = run(stored, pairing, params, state, jax.random.PRNGKey(1), 8)
    np.testing.assert_array_equal(np.asarray(p0.truncated), np.asarray(st.truncated))
    assert np.asarray(p0.truncated).any()
    for a, b in zip(p0.learners, st.learners, strict=True):
        np.testing.assert_allclose(
            np.asarray(a.final_values), np.asarray(b.final_values), atol=1e-6
        )
