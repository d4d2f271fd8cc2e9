"""`ppo.permutation`, the minibatch shuffle (jax's for short ones, `_packed_key_permutation`
from 4096 units on): a permutation, uniform over permutations, and the minibatches it makes
hold every transition once."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.training.ppo import Stream, _minibatches, _packed_key_permutation, permutation

permute = jax.jit(permutation, static_argnums=1)


packed = jax.jit(_packed_key_permutation, static_argnums=1)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 100, 4096, 8192, 2**17 + 3])
@pytest.mark.parametrize("fn", [permute, packed])
def test_is_a_permutation(fn, n):
    p = np.asarray(fn(jax.random.PRNGKey(n), n))
    assert p.dtype == np.int32
    np.testing.assert_array_equal(np.sort(p), np.arange(n))


def test_all_permutations_of_four_are_equally_likely():
    draws = jax.jit(jax.vmap(lambda k: _packed_key_permutation(k, 4)))(
        jax.random.split(jax.random.PRNGKey(0), 48_000)
    )
    codes = np.asarray(draws) @ np.array([64, 16, 4, 1])
    index = {
        sum(v * w for v, w in zip(p, (64, 16, 4, 1), strict=True)): i
        for i, p in enumerate(itertools.permutations(range(4)))
    }
    counts = np.bincount([index[c] for c in codes], minlength=24)
    # 2000 expected per permutation; chi-square with 23 degrees of freedom, p < 1e-4 above 60
    chi2 = float(np.sum((counts - 2000.0) ** 2 / 2000.0))
    assert chi2 < 60, counts


def test_no_position_keeps_its_order_more_often_than_chance():
    # Ties between random sort keys keep the earlier order; with jax's rule for the rounds a
    # pair stays in order with probability 1/2 (up to about 2**-30).
    n = 8192
    draws = np.asarray(
        jax.jit(jax.vmap(lambda k: permutation(k, n)))(jax.random.split(jax.random.PRNGKey(1), 400))
    )
    where = np.argsort(draws, axis=1)  # where[d, i]: the position element i went to
    in_order = (where[:, 1:] > where[:, :-1]).mean()  # neighbours i, i + 1 kept in order
    assert in_order == pytest.approx(0.5, abs=0.005)  # sd about 0.0009
    assert where[:, 0].mean() == pytest.approx((n - 1) / 2, abs=0.1 * n)


@pytest.mark.parametrize("recurrent", [False, True])
def test_minibatches_hold_every_transition_once(recurrent):
    steps, envs, m = 6, 8, 4
    tag = jnp.arange(steps * envs, dtype=jnp.float32).reshape(steps, envs)
    ones = jnp.ones((steps, envs))
    stream = Stream(
        obs=jnp.stack([tag, -tag], axis=-1),
        actions=tag.astype(jnp.int32),
        log_probs=tag,
        advantages=tag,
        targets=tag,
        values=tag,
        weights=ones,
        mask=ones.astype(bool),
        starts=jnp.zeros((steps, envs), bool),
        initial_carry=jnp.arange(envs) if recurrent else (),
        value_head=jnp.int32(0),
        sign=jnp.float32(1.0),
    )
    parts = _minibatches(stream, jax.random.PRNGKey(3), m, recurrent)
    seen = np.sort(np.asarray(parts.actions).reshape(-1))
    np.testing.assert_array_equal(seen, np.arange(steps * envs))
    # fields stay aligned: obs, log-probs, ... of a transition move together
    np.testing.assert_array_equal(np.asarray(parts.obs[..., 0]), np.asarray(parts.log_probs))
    np.testing.assert_array_equal(np.asarray(parts.obs[..., 1]), -np.asarray(parts.targets))
    if recurrent:  # whole env sequences, time-major, with their start carries
        assert parts.actions.shape == (m, steps, envs // m)
        envs_of = np.asarray(parts.actions) % envs
        assert (envs_of == envs_of[:, :1]).all()
        np.testing.assert_array_equal(np.asarray(parts.initial_carry), envs_of[:, 0])
    else:
        assert parts.actions.shape == (m, steps * envs // m)
