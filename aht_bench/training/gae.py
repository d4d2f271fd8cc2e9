"""Generalized Advantage Estimation, the one copy every learner uses.

May import jax and chex only.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def gae(
    rewards: jax.Array,
    values: jax.Array,
    final_values: jax.Array,
    last_value: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets of a time-major rollout with auto-reset (Schulman et al. 2016).

    The advantage the paper writes `A_t` in Eq. (ppo_clip_loss) and the target
    `V^targ = A^GAE + V_old(s)` of Eq. (val_loss) (the paper's pseudocode appendix):

        next_t  = 0                      if terminated_t   (the episode is over)
                = V(final_obs_t)         if truncated_t    (cut by the horizon: bootstrap)
                = V(s_{t+1})             otherwise         (V(s_T) = last_value)
        delta_t = r_t + gamma * next_t - V(s_t)
        A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1},     A_T = 0
        target_t = A_t + V(s_t)

    With auto-reset, the observation after a step that ended an episode belongs to the next
    episode, so `V(s_{t+1})` must never be read across `done_t = terminated_t | truncated_t`;
    the value of the episode's own last observation (`TimeStep.final_obs`) is read instead
    when the horizon cut it.

    Shapes: `rewards`, `values`, `final_values`, `terminated`, `truncated` are (T, ...) and
    `last_value` is (...), for any trailing batch shape (...). Returns (advantages, targets),
    both (T, ...) float32.
    """
    chex.assert_equal_shape([rewards, values, final_values, terminated, truncated])
    chex.assert_shape(last_value, values.shape[1:])
    terminated = terminated.astype(bool)
    truncated = truncated.astype(bool)
    following = jnp.concatenate([values[1:], last_value[None]], axis=0)
    next_values = jnp.where(terminated, 0.0, jnp.where(truncated, final_values, following))
    deltas = rewards + gamma * next_values - values
    continues = 1.0 - jnp.logical_or(terminated, truncated).astype(values.dtype)

    def _backward(advantage, step):
        delta, cont = step
        advantage = delta + gamma * gae_lambda * cont * advantage
        return advantage, advantage

    _, advantages = jax.lax.scan(
        _backward, jnp.zeros_like(last_value), (deltas, continues), reverse=True
    )
    return advantages, advantages + values
