"""PolicyRunner: a NumPy loop adapter that matches the jitted policy step for step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.policies import MLPActorCritic, PolicyRunner, RecurrentEgo

OBS_DIM, NUM_ACTIONS = 6, 4


def _reference_actions(policy, params, seed, obs_seq, reset_at):
    """The documented key scheme written out: key, step_key = split(key); reset the carry."""
    act = jax.jit(policy.act)
    key = jax.random.PRNGKey(seed)
    carry = policy.init_carry(())
    out = []
    for t, obs in enumerate(obs_seq):
        if t in reset_at:
            carry = policy.init_carry(())
        key, step_key = jax.random.split(key)
        action, carry, _ = act(params, carry, jnp.asarray(obs), step_key)
        out.append(int(action))
    return out


def test_runner_matches_jitted_recurrent_policy():
    policy = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=8)
    params = policy.init(jax.random.PRNGKey(0))
    # larger logits so the actions depend strongly on the carry
    p = dict(params["params"])
    p["actor_out"] = {
        "kernel": 3.0 * jax.random.normal(jax.random.PRNGKey(1), (8, NUM_ACTIONS)),
        "bias": jnp.zeros(NUM_ACTIONS),
    }
    params = {"params": p}
    rng = np.random.default_rng(0)
    obs_seq = rng.normal(size=(12, OBS_DIM)).astype(np.float32)
    want = _reference_actions(policy, params, 5, obs_seq, reset_at={6})

    runner = PolicyRunner(policy, params, seed=5)
    got = []
    for t, obs in enumerate(obs_seq):
        if t == 6:
            runner.reset()
        a = runner.act(obs)
        assert type(a) is int
        got.append(a)
    assert got == want
    assert int(runner.carry.prev_action) == got[-1]
    # a reseeded runner replays the same actions
    runner.reset(seed=5)
    replay = [runner.act(o) for o in obs_seq[:6]]
    assert replay == want[:6]


def test_runner_feed_forward_and_shared_jit():
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS, hidden=(8,))
    params = policy.init(jax.random.PRNGKey(0))
    obs_seq = np.random.default_rng(1).normal(size=(5, OBS_DIM))  # float64 input is fine
    want = _reference_actions(policy, params, 0, obs_seq.astype(np.float32), reset_at=set())
    r1 = PolicyRunner(policy, params)
    assert [r1.act(o) for o in obs_seq] == want
    # jitted once per policy object: another runner of the same policy reuses the function
    r2 = PolicyRunner(policy, params, seed=1)
    assert r2._act is r1._act
    assert r1.carry == ()


def test_runner_rejects_wrong_obs_shape():
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS, hidden=(8,))
    runner = PolicyRunner(policy, policy.init(jax.random.PRNGKey(0)))
    with pytest.raises(ValueError, match=r"shape \(6,\), got \(2, 6\)"):
        runner.act(np.zeros((2, OBS_DIM)))
