"""MLPActorCritic and RecurrentEgo: the policy protocol, shapes, sampling, value heads, memory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.policies import (
    GRUCarry,
    MLPActorCritic,
    Policy,
    RecurrentEgo,
    reset_carry_where,
)

OBS_DIM, NUM_ACTIONS = 7, 4


def _with_head(params, layer, kernel=None, bias=None):
    """Copy of `params` with layer `layer`'s kernel/bias replaced (to pin the outputs)."""
    inner = dict(params["params"])
    new = dict(inner[layer])
    if kernel is not None:
        new["kernel"] = jnp.asarray(kernel, jnp.float32)
    if bias is not None:
        new["bias"] = jnp.asarray(bias, jnp.float32)
    inner[layer] = new
    return {"params": inner}


@pytest.mark.parametrize(
    "policy",
    [
        MLPActorCritic(OBS_DIM, NUM_ACTIONS, num_value_heads=3, hidden=(16, 16)),
        RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=16, num_value_heads=3),
    ],
    ids=["mlp", "gru"],
)
def test_act_shapes_dtypes_and_log_prob(policy):
    assert isinstance(policy, Policy)
    params = policy.init(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (OBS_DIM,))
    carry = policy.init_carry(())
    action, new_carry, extras = jax.jit(policy.act)(params, carry, obs, jax.random.PRNGKey(2))
    assert action.shape == () and action.dtype == jnp.int32
    assert 0 <= int(action) < NUM_ACTIONS
    assert extras["logits"].shape == (NUM_ACTIONS,) and extras["logits"].dtype == jnp.float32
    assert extras["value"].shape == (3,) and extras["value"].dtype == jnp.float32
    assert extras["log_prob"].shape == ()
    # log pi(a) = logit_a - log sum_b exp(logit_b), computed here in float64 NumPy
    logits = np.asarray(extras["logits"], np.float64)
    expected = logits[int(action)] - np.log(np.exp(logits).sum())
    np.testing.assert_allclose(float(extras["log_prob"]), expected, rtol=1e-5, atol=1e-6)
    # carry keeps its structure, shapes and dtypes
    assert jax.tree.structure(new_carry) == jax.tree.structure(carry)
    for a, b in zip(jax.tree.leaves(new_carry), jax.tree.leaves(carry), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
    # evaluate is what act samples from
    logits2, values2, _ = policy.evaluate(params, carry, obs)
    np.testing.assert_array_equal(logits2, extras["logits"])
    np.testing.assert_array_equal(values2, extras["value"])


@pytest.mark.parametrize(
    "policy",
    [MLPActorCritic(OBS_DIM, NUM_ACTIONS), RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=16)],
    ids=["mlp", "gru"],
)
def test_jit_vmap_over_1024_obs_matches_single_calls(policy):
    params = policy.init(jax.random.PRNGKey(0))
    n = 1024
    obs = jax.random.normal(jax.random.PRNGKey(1), (n, OBS_DIM))
    keys = jax.random.split(jax.random.PRNGKey(2), n)
    carry = policy.init_carry((n,))
    batched = jax.jit(jax.vmap(policy.act, in_axes=(None, 0, 0, 0)))
    actions, carry2, extras = batched(params, carry, obs, keys)
    assert actions.shape == (n,) and actions.dtype == jnp.int32
    assert extras["logits"].shape == (n, NUM_ACTIONS)
    assert extras["value"].shape == (n, 1)
    assert np.all((np.asarray(actions) >= 0) & (np.asarray(actions) < NUM_ACTIONS))
    single = jax.jit(policy.act)
    for i in (0, 511, 1023):
        c_i = jax.tree.map(lambda x, i=i: x[i], carry)
        a_i, _, e_i = single(params, c_i, obs[i], keys[i])
        assert int(a_i) == int(actions[i])
        np.testing.assert_allclose(e_i["logits"], extras["logits"][i], rtol=1e-5, atol=1e-6)


def test_mlp_samples_from_its_logits():
    policy = MLPActorCritic(OBS_DIM, 3, hidden=(8,))
    params = policy.init(jax.random.PRNGKey(0))
    # zero final kernel: logits = bias = log(0.1, 0.2, 0.7) whatever the observation
    probs = np.array([0.1, 0.2, 0.7])
    params = _with_head(params, "actor_out", kernel=np.zeros((8, 3)), bias=np.log(probs))
    n = 8192
    obs = jax.random.normal(jax.random.PRNGKey(1), (n, OBS_DIM))
    keys = jax.random.split(jax.random.PRNGKey(2), n)
    actions, _, extras = jax.jit(jax.vmap(policy.act, in_axes=(None, None, 0, 0)))(
        params, (), obs, keys
    )
    freq = np.bincount(np.asarray(actions), minlength=3) / n
    # binomial std of a frequency is at most sqrt(0.25 / 8192) ~ 0.0055; allow ~4 std
    np.testing.assert_allclose(freq, probs, atol=0.022)
    np.testing.assert_allclose(extras["log_prob"], np.log(probs)[np.asarray(actions)], rtol=1e-5)


def test_k_value_heads_are_separate_outputs():
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS, num_value_heads=3, hidden=(8,))
    params = policy.init(jax.random.PRNGKey(0))
    # distinct heads at init: each head reads its own column of the last kernel
    _, values, _ = policy.evaluate(params, (), jnp.ones(OBS_DIM))
    assert len(set(np.round(np.asarray(values), 6).tolist())) == 3
    # pin head k to the constant k+1 (zero kernel, bias [1, 2, 3])
    params = _with_head(params, "critic_out", kernel=np.zeros((8, 3)), bias=[1.0, 2.0, 3.0])
    _, values, _ = policy.evaluate(params, (), jnp.ones(OBS_DIM))
    np.testing.assert_array_equal(values, [1.0, 2.0, 3.0])


def test_gru_fresh_carry_and_prev_action_in_carry():
    policy = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=16)
    fresh = policy.init_carry((2, 3))
    assert isinstance(fresh, GRUCarry)
    assert fresh.hidden.shape == (2, 3, 16) and fresh.hidden.dtype == jnp.float32
    assert fresh.prev_action.shape == (2, 3) and fresh.prev_action.dtype == jnp.int32
    assert np.all(np.asarray(fresh.hidden) == 0) and np.all(np.asarray(fresh.prev_action) == -1)
    params = policy.init(jax.random.PRNGKey(0))
    obs = jnp.ones(OBS_DIM)
    action, carry, _ = policy.act(params, policy.init_carry(()), obs, jax.random.PRNGKey(3))
    assert int(carry.prev_action) == int(action)
    assert not np.allclose(carry.hidden, 0.0)


def test_gru_sees_previous_action():
    policy = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=16)
    params = policy.init(jax.random.PRNGKey(0))
    # Bigger logits weights so differences are far above float noise (init scale is 0.01).
    params = _with_head(
        params, "actor_out", kernel=jax.random.normal(jax.random.PRNGKey(9), (16, NUM_ACTIONS))
    )
    obs = jax.random.normal(jax.random.PRNGKey(1), (OBS_DIM,))
    hidden = jnp.zeros(16)
    logits = [
        policy.evaluate(params, GRUCarry(hidden, jnp.int32(a)), obs)[0] for a in (-1, 0, 1, 2, 3)
    ]
    for i in range(5):
        for j in range(i + 1, 5):
            assert np.max(np.abs(np.asarray(logits[i]) - np.asarray(logits[j]))) > 1e-3, (i, j)


def test_gru_remembers_earlier_observations():
    policy = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=16)
    params = policy.init(jax.random.PRNGKey(0))
    params = _with_head(
        params, "actor_out", kernel=jax.random.normal(jax.random.PRNGKey(9), (16, NUM_ACTIONS))
    )
    fresh = policy.init_carry(())
    last = jnp.zeros(OBS_DIM)

    def logits_after(first_obs):
        _, _, c = policy.evaluate(params, fresh, first_obs)
        c = c._replace(prev_action=jnp.int32(0))  # same previous action in both histories
        return policy.evaluate(params, c, last)[0]

    a = logits_after(jnp.ones(OBS_DIM))
    b = logits_after(-jnp.ones(OBS_DIM))
    assert np.max(np.abs(np.asarray(a) - np.asarray(b))) > 1e-3


def test_reset_carry_where_resets_only_done_entries():
    policy = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=16)
    params = policy.init(jax.random.PRNGKey(0))
    n = 4
    step = jax.jit(jax.vmap(policy.act, in_axes=(None, 0, 0, 0)))
    carry = policy.init_carry((n,))
    for t in range(3):
        obs = jax.random.normal(jax.random.PRNGKey(10 + t), (n, OBS_DIM))
        _, carry, _ = step(params, carry, obs, jax.random.split(jax.random.PRNGKey(t), n))
    done = jnp.array([True, False, True, False])
    reset = reset_carry_where(policy, done, carry)
    for i in range(n):
        if bool(done[i]):
            assert np.all(np.asarray(reset.hidden[i]) == 0) and int(reset.prev_action[i]) == -1
        else:
            np.testing.assert_array_equal(reset.hidden[i], carry.hidden[i])
            assert int(reset.prev_action[i]) == int(carry.prev_action[i])
    # a feed-forward policy's empty carry stays empty
    mlp = MLPActorCritic(OBS_DIM, NUM_ACTIONS)
    assert reset_carry_where(mlp, done, mlp.init_carry((n,))) == ()


def test_wrong_obs_shape_is_a_clear_error():
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS)
    params = policy.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"shape \(7,\).*vmap"):
        policy.act(params, (), jnp.ones((2, OBS_DIM)), jax.random.PRNGKey(0))


def test_recurrent_evaluate_sequence_equals_scanning_evaluate():
    """The batched sequence evaluation PPO uses gives what stepping `evaluate` gives: carries
    reset at episode starts, the previous action taken from the sequence, the initial carry's
    hidden state and previous action used until the first start."""
    from aht_bench.policies.core import reset_carry_where
    from aht_bench.policies.networks import GRUCarry
    from aht_bench.training.rollout import record_action

    net = RecurrentEgo(16, 6, hidden=32)
    params = net.init(jax.random.PRNGKey(0))
    steps, batch = 20, 5
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(1), 4)
    obs = jax.random.normal(k1, (steps, batch, 16))
    actions = jax.random.randint(k2, (steps, batch), 0, 6)
    starts = jax.random.bernoulli(k3, 0.2, (steps, batch)).at[0, 0].set(True)
    starts = starts.at[:, 1].set(False)  # one sequence never restarts
    carry = GRUCarry(jax.random.normal(k4, (batch, 32)), jnp.array([-1, 0, 3, 5, 2], jnp.int32))
    evaluate = jax.vmap(net.evaluate, in_axes=(None, 0, 0))

    def _step(c, inputs):
        o, a, s = inputs
        logits, values, c = evaluate(params, reset_carry_where(net, s, c), o)
        return record_action(c, a), (logits, values)

    _, (want_logits, want_values) = jax.lax.scan(_step, carry, (obs, actions, starts))
    logits, values = net.evaluate_sequence(params, carry, obs, actions, starts)
    assert logits.shape == (steps, batch, 6) and values.shape == (steps, batch, 1)
    np.testing.assert_allclose(np.asarray(logits), np.asarray(want_logits), atol=1e-6)
    np.testing.assert_allclose(np.asarray(values), np.asarray(want_values), atol=1e-6)
    # the initial carry matters where no start resets it
    other = carry._replace(hidden=carry.hidden + 1.0)
    moved, _ = net.evaluate_sequence(params, other, obs, actions, starts)
    assert not np.allclose(np.asarray(moved[:, 1]), np.asarray(logits[:, 1]))
