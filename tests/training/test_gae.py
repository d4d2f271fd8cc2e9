"""GAE against a plain Python loop, including terminated and truncated episode boundaries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.training import gae


def gae_reference(rewards, values, final_values, last_value, terminated, truncated, gamma, lam):
    """Textbook GAE, one env at a time, written without reusing anything from the package."""
    steps = len(rewards)
    advantages = [0.0] * steps
    running = 0.0
    for t in reversed(range(steps)):
        if terminated[t]:
            next_value = 0.0
        elif truncated[t]:
            next_value = final_values[t]
        elif t == steps - 1:
            next_value = last_value
        else:
            next_value = values[t + 1]
        delta = rewards[t] + gamma * next_value - values[t]
        episode_goes_on = not (terminated[t] or truncated[t])
        running = delta + gamma * lam * (running if episode_goes_on else 0.0)
        advantages[t] = running
    targets = [a + v for a, v in zip(advantages, values, strict=True)]
    return advantages, targets


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 1.0), (1.0, 0.0)])
def test_gae_matches_python_loop_with_episode_boundaries(gamma, lam):
    rng = np.random.default_rng(0)
    steps, envs = 37, 5
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    final_values = rng.normal(size=(steps, envs)).astype(np.float32)
    last_value = rng.normal(size=(envs,)).astype(np.float32)
    ends = rng.random((steps, envs))
    terminated = ends < 0.08
    truncated = (ends >= 0.08) & (ends < 0.16)
    # make sure both kinds of boundary occur, including at the last step
    terminated[3, 0], truncated[3, 0] = True, False
    truncated[5, 1], terminated[5, 1] = True, False
    truncated[-1, 2], terminated[-1, 2] = True, False
    terminated[-1, 3], truncated[-1, 3] = True, False
    adv, targ = jax.jit(gae, static_argnums=(6, 7))(
        jnp.asarray(rewards),
        jnp.asarray(values),
        jnp.asarray(final_values),
        jnp.asarray(last_value),
        jnp.asarray(terminated),
        jnp.asarray(truncated),
        gamma,
        lam,
    )
    for e in range(envs):
        want_adv, want_targ = gae_reference(
            rewards[:, e].tolist(),
            values[:, e].tolist(),
            final_values[:, e].tolist(),
            float(last_value[e]),
            terminated[:, e].tolist(),
            truncated[:, e].tolist(),
            gamma,
            lam,
        )
        np.testing.assert_allclose(np.asarray(adv[:, e]), want_adv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(targ[:, e]), want_targ, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_and_termination_does_not():
    # One step, reward 1, V(s) = 0, V(final obs) = 10, gamma 0.5: truncation adds 0.5 * 10.
    ones = jnp.ones((1, 1))
    zeros = jnp.zeros((1, 1))
    args = (ones, zeros, 10.0 * ones, jnp.full((1,), 100.0))
    adv_trunc, _ = gae(*args, jnp.zeros((1, 1), bool), jnp.ones((1, 1), bool), 0.5, 0.9)
    adv_term, _ = gae(*args, jnp.ones((1, 1), bool), jnp.zeros((1, 1), bool), 0.5, 0.9)
    adv_none, _ = gae(*args, jnp.zeros((1, 1), bool), jnp.zeros((1, 1), bool), 0.5, 0.9)
    assert float(adv_trunc[0, 0]) == pytest.approx(1.0 + 0.5 * 10.0)
    assert float(adv_term[0, 0]) == pytest.approx(1.0)
    assert float(adv_none[0, 0]) == pytest.approx(1.0 + 0.5 * 100.0)  # V(s_T) of the next rollout
    del zeros


def test_gae_refuses_mismatched_shapes():
    x = jnp.zeros((4, 3))
    with pytest.raises(AssertionError):
        gae(x, x, x, jnp.zeros((2,)), x.astype(bool), x.astype(bool), 0.99, 0.95)
