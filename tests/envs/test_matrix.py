"""Scenario tests for the native matrix games, expected values worked by hand from the paper."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs
from aht_bench.envs.matrix import enumerate_nonterminal_states

H, T, S = 0, 1, 2


def play(env, joint_actions):
    state, ts = env.reset(jax.random.PRNGKey(0))
    out = []
    for a in joint_actions:
        state, ts = env.step(jax.random.PRNGKey(0), state, jnp.asarray(a, jnp.int32))
        out.append(ts)
    return state, out


@pytest.fixture(scope="module")
def sabotage():
    return envs.make("sabotage-v1")


def test_sabotage_payoffs(sabotage):
    # paper Table "Payoff matrix for the sabotage game": H/H = T/T = 1, H/T = T/H = 0, any S = -1
    expected = {(H, H): 1, (T, T): 1, (H, T): 0, (T, H): 0, (S, H): -1, (H, S): -1, (S, S): -1}
    for joint, value in expected.items():
        _, (ts,) = play(sabotage, [joint])
        assert ts.reward.tolist() == [value, value], joint


@pytest.mark.parametrize("who", [(S, H), (T, S), (S, S)])
def test_sabotage_ends_the_episode_with_minus_one(sabotage, who):
    state, steps = play(sabotage, [(H, H), (T, T), who])
    # returns: 1 + 1 - 1 = 1 after the sabotage step
    assert [bool(ts.terminated) for ts in steps] == [False, False, True]
    assert not any(bool(ts.truncated) for ts in steps)
    assert steps[-1].reward.tolist() == [-1.0, -1.0]
    assert steps[-1].episode_return.tolist() == [1.0, 1.0]
    sabotage.validate(state)


def test_sabotage_lasts_five_steps(sabotage):
    _, steps = play(sabotage, [(H, H)] * 5)
    assert [bool(ts.terminated) for ts in steps] == [False] * 4 + [True]
    assert steps[-1].episode_return.tolist() == [5.0, 5.0]
    assert [int(ts.time) for ts in steps] == [1, 2, 3, 4, 5]


def test_observation_is_own_action_first_history(sabotage):
    _, steps = play(sabotage, [(H, T), (S, H)])
    obs = np.asarray(steps[-1].obs).reshape(2, 5, 2, 3)
    # agent 0 saw (own H, partner T) then (own S, partner H); agent 1 the mirror image
    assert obs[0, 0, 0].tolist() == [1, 0, 0] and obs[0, 0, 1].tolist() == [0, 1, 0]
    assert obs[1, 0, 0].tolist() == [0, 1, 0] and obs[1, 0, 1].tolist() == [1, 0, 0]
    assert obs[0, 1, 0].tolist() == [0, 0, 1] and obs[1, 1, 1].tolist() == [0, 0, 1]
    assert obs[:, 2:].sum() == 0


def test_enumerator_returns_341_distinct_nonterminal_states(sabotage):
    states = enumerate_nonterminal_states(sabotage)
    assert states.episode_return.shape == (341, 2)  # 1 + 4 + 16 + 64 + 256
    sabotage.validate(states)
    ts = jax.vmap(sabotage.observe)(states)
    assert not ts.done.any()
    distinct = {np.asarray(o[0]).tobytes() for o in ts.obs}
    assert len(distinct) == 341
    counts = np.bincount(np.asarray(states.inner.time), minlength=5)
    assert counts.tolist() == [1, 4, 16, 64, 256]
    # the stored return is the sum of the history's payoffs (H/H, T/T pay 1; H/T, T/H pay 0)
    h = np.asarray(states.inner.history)
    matches = ((h[..., 0] == h[..., 1]) & (h[..., 0] >= 0)).sum(axis=1)
    np.testing.assert_array_equal(states.episode_return[:, 0], matches)


def test_sabotage_validate_rejects_impossible_histories(sabotage):
    state, _ = play(sabotage, [(H, H)])
    bad = state.replace(inner=state.inner.replace(history=state.inner.history.at[3].set(H)))
    with pytest.raises(envs.InvalidStateError, match="after time 1 must be -1"):
        sabotage.validate(bad)
    state, _ = play(sabotage, [(S, H)])
    bad = state.replace(inner=state.inner.replace(ended=jnp.asarray(False)))
    with pytest.raises(envs.InvalidStateError, match="disagrees with the history"):
        sabotage.validate(bad)


def test_regret_matrix_game():
    env = envs.make("matrix-regret-v1")
    # paper App. A: rows A/B (seat 0), columns X/Y (seat 1): [[5, 1], [5, 0]]
    for (a, b), value in {(0, 0): 5, (0, 1): 1, (1, 0): 5, (1, 1): 0}.items():
        _, (ts,) = play(env, [(a, b)])
        assert ts.reward.tolist() == [value, value]
        assert bool(ts.terminated) and not bool(ts.truncated)
