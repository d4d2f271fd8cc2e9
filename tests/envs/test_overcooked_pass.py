"""`PassShapedOvercooked`: the onion-pass reward of the heldout counter_circuit pass teammates."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs
from aht_bench.envs.core import EnvState
from aht_bench.envs.overcooked import EMPTY, ONION, with_shaping
from aht_bench.envs.overcooked_pass import PassShapedOvercooked

UP, DOWN, RIGHT, LEFT, STAY, INTERACT = range(6)
PASS = 2.0


def _env() -> PassShapedOvercooked:
    env = with_shaping(envs.make("overcooked-counter_circuit-v1"), onion_pass=PASS)
    assert isinstance(env, PassShapedOvercooked)
    return env


def _start(env, inv0=ONION, inv1=0):
    """Seat 0 below the island cell (3, 2) facing up, seat 1 above it facing down (counter
    circuit: pots at (3, 0) and (4, 0) above seat 1)."""
    base = env.make_inner([[3, 3], [3, 1]], [0, 1], agent_inv=[inv0, EMPTY if inv1 == 0 else inv1])
    inner = env._wrap(base)
    return EnvState(inner=inner, episode_return=jnp.zeros((2,), jnp.float32))


def _play(env, state, actions):
    shaped, base = [], []
    key = jax.random.PRNGKey(0)
    for a in actions:
        state, ts = env.step(key, state, jnp.asarray(a))
        shaped.append(np.asarray(ts.shaped_reward))
        base.append(np.asarray(ts.reward))
    return state, np.stack(shaped), np.stack(base)


def test_a_pass_pays_both_seats_when_the_passed_onion_goes_into_a_pot():
    env = _env()
    plain = envs.make("overcooked-counter_circuit-v1")
    state = _start(env)
    # seat 0 puts the onion on (3, 2); seat 1 takes it, turns up to the pot and puts it in
    actions = [(INTERACT, STAY), (STAY, INTERACT), (STAY, UP), (STAY, INTERACT)]
    state, shaped, _ = _play(env, state, actions)
    assert state.inner.base.agent_inv.tolist() == [EMPTY, EMPTY]
    # the plain task's shaped reward for the same steps, plus the pass bonus on the last step
    plain_state = EnvState(inner=_start(env).inner.base, episode_return=jnp.zeros((2,)))
    _, plain_shaped, _ = _play(plain, plain_state, actions)
    np.testing.assert_allclose(shaped[:3], plain_shaped[:3])
    np.testing.assert_allclose(shaped[3], plain_shaped[3] + PASS)
    assert plain_shaped[3][1] == pytest.approx(0.5)  # seat 1's own onion-in-pot reward


def test_the_pass_flag_follows_the_onion():
    env = _env()
    state = _start(env)
    state, _, _ = _play(env, state, [(INTERACT, STAY)])
    assert int(state.inner.placed_by[2, 3]) == 0
    state, _, _ = _play(env, state, [(STAY, INTERACT)])
    assert int(state.inner.placed_by[2, 3]) == -1
    assert state.inner.passed.tolist() == [False, True]


def test_an_onion_put_down_and_taken_up_again_by_the_same_seat_pays_nothing():
    env = _env()
    state = _start(env)
    # seat 0 puts down and picks up again 20 times; seat 1 idles
    state, shaped, _ = _play(env, state, [(INTERACT, STAY), (INTERACT, STAY)] * 10)
    assert state.inner.passed.tolist() == [False, False]
    plain = envs.make("overcooked-counter_circuit-v1")
    plain_state = EnvState(inner=_start(env).inner.base, episode_return=jnp.zeros((2,)))
    _, plain_shaped, _ = _play(plain, plain_state, [(INTERACT, STAY), (INTERACT, STAY)] * 10)
    np.testing.assert_allclose(shaped, plain_shaped)


def test_an_onion_handed_back_and_forth_pays_nothing_until_it_reaches_a_pot():
    env = _env()
    state = _start(env)
    ping_pong = [(INTERACT, STAY), (STAY, INTERACT), (STAY, INTERACT), (INTERACT, STAY)] * 5
    state, shaped, _ = _play(env, state, ping_pong)
    plain = envs.make("overcooked-counter_circuit-v1")
    plain_state = EnvState(inner=_start(env).inner.base, episode_return=jnp.zeros((2,)))
    _, plain_shaped, _ = _play(plain, plain_state, ping_pong)
    np.testing.assert_allclose(shaped, plain_shaped)
    assert int(state.inner.base.agent_inv[0]) == ONION


def test_without_onion_pass_the_task_is_the_plain_one_and_training_envs_accept_the_name():
    from aht_bench.training.rollout import make_env

    plain = with_shaping(envs.make("overcooked-counter_circuit-v1"), counter_pickup=0.0)
    assert not isinstance(plain, PassShapedOvercooked)
    env = make_env("overcooked-counter_circuit-v1", (("onion_pass", 1.0),))
    state, ts = jax.jit(env.reset)(jax.random.PRNGKey(1))
    state, ts = jax.jit(env.step)(jax.random.PRNGKey(2), state, jnp.array([4, 4]))
    assert ts.obs.shape == (2, env.obs_dim)
