"""The paper's losses against values worked by hand (brax `ppo/losses_test.py` style)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.training import clip_loss, entropy_loss, value_loss
from aht_bench.training.losses import masked_mean, normalize_advantages

# Three transitions, clip eps = 0.2:
#   t0: rho = 1.5, A =  2, w = 3
#   t1: rho = 0.5, A = -1, w = 2
#   t2: rho = 1.1, A =  4, w = 0.5
# Eq. (ppo_clip_loss) per transition: -min(rho * s, clip(rho, 0.8, 1.2) * s), s = sign * w * A.
#
# sign = +1:  s = (6, -2, 2)
#   t0: min(1.5 * 6 = 9,     1.2 * 6 = 7.2)   = 7.2   -> -7.2   (clipped: no gradient)
#   t1: min(0.5 * -2 = -1,   0.8 * -2 = -1.6) = -1.6  -> +1.6   (clipped: no gradient)
#   t2: min(1.1 * 2 = 2.2,   1.1 * 2 = 2.2)   = 2.2   -> -2.2
#   mean = (-7.2 + 1.6 - 2.2) / 3 = -2.6
# sign = -1:  s = (-6, 2, -2)
#   t0: min(-9, -7.2) = -9    -> +9     (unclipped)
#   t1: min(1, 1.6)   = 1     -> -1     (unclipped)
#   t2: min(-2.2, -2.2)       -> +2.2
#   mean = (9 - 1 + 2.2) / 3 = 3.4
# Gradient w.r.t. log pi(a_t|s_t) of an unclipped term -rho * s is -rho * s (d rho/d logp = rho),
# divided by the 3 transitions of the mean:
#   sign +1: (0, 0, -1.1 * 2 / 3)            = (0, 0, -0.7333...)
#   sign -1: (-1.5 * -6 / 3, -0.5 * 2 / 3, -1.1 * -2 / 3) = (3, -0.3333..., 0.7333...)
RATIO = np.array([1.5, 0.5, 1.1], np.float32)
ADV = np.array([2.0, -1.0, 4.0], np.float32)
W = np.array([3.0, 2.0, 0.5], np.float32)
OLD = np.array([-1.0, -0.5, -2.0], np.float32)
NEW = OLD + np.log(RATIO)
ALL = np.ones(3, bool)


@pytest.mark.parametrize(
    "sign,loss,grad",
    [(1.0, -2.6, [0.0, 0.0, -2.2 / 3]), (-1.0, 3.4, [3.0, -1.0 / 3, 2.2 / 3])],
)
def test_generalised_clip_loss_by_hand(sign, loss, grad):
    def f(new):
        return clip_loss(new, jnp.asarray(OLD), jnp.asarray(ADV), jnp.asarray(W), sign, 0.2, ALL)

    value, g = jax.value_and_grad(f)(jnp.asarray(NEW))
    assert float(value) == pytest.approx(loss, abs=1e-5)
    np.testing.assert_allclose(np.asarray(g), grad, atol=1e-5)


def test_clip_loss_mask_drops_transitions():
    # t2 masked out, sign +1: (-7.2 + 1.6) / 2 = -2.8
    mask = np.array([True, True, False])
    got = clip_loss(NEW, OLD, ADV, W, 1.0, 0.2, mask)
    assert float(got) == pytest.approx(-2.8, abs=1e-5)


def test_unit_weight_positive_sign_is_standard_ppo():
    # With w = 1 and sign +1 the loss is PPO's -min(rho A, clip(rho) A): t0 min(3, 2.4) = 2.4,
    # t1 min(-0.5, -0.8) = -0.8, t2 min(4.4, 4.4) = 4.4 -> -(2.4 - 0.8 + 4.4) / 3 = -2.0
    got = clip_loss(NEW, OLD, ADV, np.ones(3, np.float32), 1.0, 0.2, ALL)
    assert float(got) == pytest.approx(-2.0, abs=1e-5)


def test_entropy_loss_by_hand():
    # Row 1 uniform over 2 actions: sum pi log pi = log(1/2) = -0.693147.
    # Row 2 pi = (0.75, 0.25): 0.75 log 0.75 + 0.25 log 0.25 = -0.215762 - 0.346574 = -0.562335.
    logits = jnp.array([[0.0, 0.0], [math.log(3.0), 0.0]])
    got = entropy_loss(logits, jnp.ones(2, bool))
    assert float(got) == pytest.approx((-0.693147 - 0.562335) / 2, abs=1e-5)
    only_second = entropy_loss(logits, jnp.array([False, True]))
    assert float(only_second) == pytest.approx(-0.562335, abs=1e-5)


def test_value_loss_by_hand():
    # ((1 - 2)^2 + (2 - 2)^2 + (3 - 0)^2) / 3 = 10 / 3; masking the last: 1 / 2
    v, targ = jnp.array([1.0, 2.0, 3.0]), jnp.array([2.0, 2.0, 0.0])
    assert float(value_loss(v, targ, jnp.ones(3, bool))) == pytest.approx(10 / 3)
    assert float(value_loss(v, targ, jnp.array([True, True, False]))) == pytest.approx(0.5)


def test_masked_helpers():
    x = jnp.array([1.0, 3.0, 100.0])
    mask = jnp.array([True, True, False])
    assert float(masked_mean(x, mask)) == 2.0
    assert float(masked_mean(x, jnp.zeros(3, bool))) == 0.0
    # valid entries (1, 3): mean 2, std 1 -> (-1, 1); the invalid entry becomes 0
    np.testing.assert_allclose(
        np.asarray(normalize_advantages(x, mask)), [-1.0, 1.0, 0.0], atol=1e-6
    )
