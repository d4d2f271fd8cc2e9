"""The PPO losses of the paper (its pseudocode appendix, "Generalized PPO loss functions").

Each function is one formula over a batch of transitions with a validity mask; "E_D" below is the
mean over the valid transitions of the batch. Algorithms never write their own losses: they
choose the data, weights and signs of the streams that `aht_bench.training.ppo` feeds in here.

May import jax and chex only.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    """`sum(x * mask) / max(sum(mask), 1)`: the mean over valid entries, 0 when none is valid."""
    chex.assert_equal_shape([x, mask])
    mask = mask.astype(x.dtype)
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def normalize_advantages(advantages: jax.Array, mask: jax.Array) -> jax.Array:
    """`(A - mean(A)) / (std(A) + 1e-8)` over the valid entries (invalid entries are left as 0).

    Not in the paper's equations; every PPO implementation the paper builds on (PureJaxRL,
    JaxMARL) does it per minibatch, before the weight and sign of Eq. (ppo_clip_loss) apply.
    """
    mean = masked_mean(advantages, mask)
    var = masked_mean(jnp.square(advantages - mean), mask)
    return jnp.where(mask, (advantages - mean) / (jnp.sqrt(var) + 1e-8), 0.0)


def clip_loss(
    log_probs: jax.Array,
    old_log_probs: jax.Array,
    advantages: jax.Array,
    weights: jax.Array,
    sign: jax.Array | float,
    clip_eps: float,
    mask: jax.Array,
) -> jax.Array:
    """The generalised PPO clip loss, paper Eq. (ppo_clip_loss):

        rho_t  = pi_theta(a_t|s_t) / pi_theta_old(a_t|s_t)
        L_CLIP = E_D[ -min( rho_t * sign * w_t * A_t,
                            clip(rho_t, 1 - eps, 1 + eps) * sign * w_t * A_t ) ]

    The weight `w_t` and the sign (+1 or -1) multiply the advantage inside the min, as the paper
    writes it: with sign -1 the pessimistic side of the min is the side that lowers the
    advantage-weighted ratio. With `w = 1`, `sign = +1` it is the standard PPO clip loss.

    Shapes: `log_probs`, `old_log_probs`, `advantages`, `weights`, `mask` are (N,) (or any common
    shape); `sign` is a scalar. Returns a scalar.
    """
    chex.assert_equal_shape([log_probs, old_log_probs, advantages, weights, mask])
    ratio = jnp.exp(log_probs - old_log_probs)
    signed = sign * weights * advantages
    unclipped = ratio * signed
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * signed
    return masked_mean(-jnp.minimum(unclipped, clipped), mask)


def entropy_loss(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """Negative policy entropy, paper Eq. (ent_loss): L_ENT = E_D[ sum_a pi(a|s) log pi(a|s) ].

    The paper prints the summand at the taken action only, `pi(a_t|s_t) log pi(a_t|s_t)`; we sum
    over actions (the negative entropy of pi(.|s_t)), which is what "whose minimization increases
    policy entropy" needs and what the PPO implementations it cites compute. Algorithms scale it
    by the tables' Ent-Coef.

    Shapes: `logits` (N, A), `mask` (N,). Returns a scalar.
    """
    chex.assert_rank(logits, mask.ndim + 1)
    chex.assert_equal_shape_prefix([logits, mask], mask.ndim)
    log_pi = jax.nn.log_softmax(logits)
    return masked_mean(jnp.sum(jnp.exp(log_pi) * log_pi, axis=-1), mask)


def value_loss(values: jax.Array, targets: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean squared error to the GAE target, paper Eq. (val_loss):

        L_VAL = E_D[ (V_sigma(s) - V^targ_sigma_old(s))^2 ],   V^targ = A^GAE + V_sigma_old(s)

    Shapes: `values`, `targets`, `mask` (N,). Returns a scalar.
    """
    chex.assert_equal_shape([values, targets, mask])
    return masked_mean(jnp.square(values - targets), mask)


def approx_kl(log_probs: jax.Array, old_log_probs: jax.Array, mask: jax.Array) -> jax.Array:
    """KL(pi_old || pi) estimate `E_D[(rho - 1) - log rho]` (Schulman's k3), a diagnostic."""
    log_ratio = log_probs - old_log_probs
    return masked_mean(jnp.expm1(log_ratio) - log_ratio, mask)


def clip_fraction(
    log_probs: jax.Array, old_log_probs: jax.Array, clip_eps: float, mask: jax.Array
) -> jax.Array:
    """Fraction of valid transitions whose ratio lies outside [1 - eps, 1 + eps], a diagnostic."""
    ratio = jnp.exp(log_probs - old_log_probs)
    return masked_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), mask)
