"""Population (stacked, one architecture) and TeammateSet (named, heterogeneous, lax.switch)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_tasks import ConstantAction

from aht_bench.policies import (
    MLPActorCritic,
    Population,
    RecurrentEgo,
    TeammateSet,
    reset_carry_where,
)

OBS_DIM, NUM_ACTIONS = 6, 5


@pytest.fixture(scope="module")
def mlp():
    return MLPActorCritic(OBS_DIM, NUM_ACTIONS, hidden=(16,))


@pytest.fixture(scope="module")
def members(mlp):
    return [mlp.init(jax.random.PRNGKey(s)) for s in range(4)]


def test_stack_size_and_get(mlp, members):
    pop = Population.stack(mlp, members)
    assert pop.size == 4
    # size is static, so it can shape arrays inside jit
    assert jax.jit(lambda p: jnp.zeros(p.size))(pop).shape == (4,)
    get = jax.jit(lambda p, i: p.get(i))
    for i in range(4):
        got = jax.tree.leaves(get(pop, jnp.int32(i)))
        for a, b in zip(got, jax.tree.leaves(members[i]), strict=True):
            np.testing.assert_array_equal(a, b)
    # the same thing built by hand from the stacked leaves
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *members)
    direct = Population(mlp, stacked)
    assert direct.size == 4


def test_uniform_sampling_frequencies(mlp, members):
    pop = Population.stack(mlp, members)
    n = 20000
    idx = jax.jit(jax.vmap(pop.sample))(jax.random.split(jax.random.PRNGKey(0), n))
    assert idx.dtype == jnp.int32
    freq = np.bincount(np.asarray(idx), minlength=4) / n
    # each index has probability 1/4; std of a frequency = sqrt(0.25 * 0.75 / 20000) ~ 0.0031
    np.testing.assert_allclose(freq, [0.25] * 4, atol=0.013)


def test_weighted_sampling_frequencies(mlp, members):
    pop = Population.stack(mlp, members)
    weights = jnp.array([1.0, 3.0, 0.0, 4.0])
    # weights sum to 8, so P = (1/8, 3/8, 0/8, 4/8) = (0.125, 0.375, 0, 0.5)
    n = 20000
    sample = jax.jit(jax.vmap(lambda k: pop.sample(k, weights)))
    idx = np.asarray(sample(jax.random.split(jax.random.PRNGKey(1), n)))
    freq = np.bincount(idx, minlength=4) / n
    # largest std: sqrt(0.5 * 0.5 / 20000) ~ 0.0035; zero weight is never drawn
    np.testing.assert_allclose(freq, [0.125, 0.375, 0.0, 0.5], atol=0.015)
    assert freq[2] == 0.0
    with pytest.raises(ValueError, match=r"weights has shape \(3,\), expected \(4,\)"):
        pop.sample(jax.random.PRNGKey(0), jnp.ones(3))


def test_population_act_matches_member_calls(mlp, members):
    pop = Population.stack(mlp, members)
    n = 16
    obs = jax.random.normal(jax.random.PRNGKey(2), (n, OBS_DIM))
    keys = jax.random.split(jax.random.PRNGKey(3), n)
    index = jnp.arange(n, dtype=jnp.int32) % 4
    batched = jax.jit(jax.vmap(lambda p, i, o, k: p.act(i, (), o, k), in_axes=(None, 0, 0, 0)))
    actions, _, extras = batched(pop, index, obs, keys)
    for j in range(n):
        a, _, e = mlp.act(members[j % 4], (), obs[j], keys[j])
        assert int(a) == int(actions[j])
        np.testing.assert_allclose(e["logits"], extras["logits"][j], rtol=1e-5, atol=1e-6)
    # different members really are different policies
    assert not np.allclose(extras["logits"][0], extras["logits"][1])


@pytest.fixture(scope="module")
def teammates(mlp, members):
    gru = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=8)
    return TeammateSet(
        ["sp_0", "always_3", "gru"],
        [(mlp, members[0]), (ConstantAction(3), None), (gru, gru.init(jax.random.PRNGKey(7)))],
    )


def test_teammate_set_dispatches_with_traced_index(teammates, mlp, members):
    assert teammates.size == 3 and teammates.index("always_3") == 1
    with pytest.raises(KeyError, match="no teammate named 'nope'"):
        teammates.index("nope")
    obs = jax.random.normal(jax.random.PRNGKey(4), (OBS_DIM,))
    key = jax.random.PRNGKey(5)
    carry = teammates.init_carry(())
    act = jax.jit(lambda ts, i, c, o, k: ts.act(i, c, o, k))

    # member 0: the network, exactly as when called directly
    a0, c0, e0 = act(teammates, jnp.int32(0), carry, obs, key)
    want, _, _ = mlp.act(members[0], (), obs, key)
    assert int(a0) == int(want)
    # the constant heuristic has no extras, so none are common to all members
    assert e0 == {}

    # member 1: the constant heuristic, for any key and obs
    for s in range(5):
        a1, c1, _ = act(teammates, jnp.int32(1), carry, obs + s, jax.random.PRNGKey(s))
        assert int(a1) == 3
    # member 2: the GRU advances its own carry; the others are passed through
    a2, c2, _ = act(teammates, jnp.int32(2), carry, obs, key)
    assert int(c2[2].prev_action) == int(a2)
    assert not np.allclose(c2[2].hidden, 0.0)
    # while member 0 acting leaves the GRU's carry fresh
    assert int(c0[2].prev_action) == -1 and np.all(np.asarray(c0[2].hidden) == 0)


def test_teammate_set_vmapped_indices_and_carry_reset(teammates):
    n = 6
    index = jnp.array([0, 1, 2, 2, 1, 0], jnp.int32)
    obs = jax.random.normal(jax.random.PRNGKey(6), (n, OBS_DIM))
    keys = jax.random.split(jax.random.PRNGKey(8), n)
    carry = teammates.init_carry((n,))
    step = jax.jit(jax.vmap(teammates.act))
    actions, carry, _ = step(index, carry, obs, keys)
    assert actions.shape == (n,) and actions.dtype == jnp.int32
    assert int(actions[1]) == 3 and int(actions[4]) == 3
    gru_carry = carry[2]
    # only envs running the GRU (index 2) advanced its carry
    np.testing.assert_array_equal(np.asarray(gru_carry.prev_action)[[0, 1, 4, 5]], -1)
    np.testing.assert_array_equal(gru_carry.prev_action[2:4], actions[2:4])
    done = jnp.array([False, False, True, False, False, False])
    reset = reset_carry_where(teammates, done, carry)
    assert int(reset[2].prev_action[2]) == -1 and np.all(np.asarray(reset[2].hidden[2]) == 0)
    assert int(reset[2].prev_action[3]) == int(actions[3])


def test_common_extras_of_networks_only(mlp, members):
    gru = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=8)
    ts = TeammateSet(["a", "b"], [(mlp, members[1]), (gru, gru.init(jax.random.PRNGKey(0)))])
    obs = jnp.ones(OBS_DIM)
    _, _, extras = jax.jit(ts.act)(jnp.int32(0), ts.init_carry(()), obs, jax.random.PRNGKey(0))
    assert set(extras) == {"logits", "log_prob", "value"}
    want = mlp.act(members[1], (), obs, jax.random.PRNGKey(0))[2]["logits"]
    np.testing.assert_allclose(extras["logits"], want, rtol=1e-5, atol=1e-6)


def test_teammate_set_rejects_bad_names(mlp, members):
    with pytest.raises(ValueError, match="unique"):
        TeammateSet(["a", "a"], [(mlp, members[0]), (ConstantAction(0), None)])
    with pytest.raises(ValueError, match="one name per member"):
        TeammateSet(["a"], [(mlp, members[0]), (ConstantAction(0), None)])
