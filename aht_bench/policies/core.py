"""The one policy protocol every agent follows: heuristic teammates, networks, ego agents and
users' JAX agents alike.

    carry = policy.init_carry(batch_shape)
    action, carry, extras = policy.act(params, carry, obs, key)

`act` is pure, jittable and vmappable. `obs` is one agent's flat observation, float32 (obs_dim,)
(vmap for batches). `params` is a pytree (`None` for heuristics). `carry` is the policy's memory
(an empty tuple for feed-forward policies); `extras` is a dict of what the policy computed on the
way (e.g. `value`, `log_prob`, `logits`), possibly empty.

Episode starts: the caller resets the carry. Whoever runs a rollout replaces the carry of an env
whose episode just ended by `init_carry` (see `reset_carry_where`), so a policy never needs to
detect episode boundaries itself; a policy that needs to know it is at the first step of an
episode keeps that in its carry (`init_carry` says "not started").

May import jax, flax, numpy and aht_bench.envs only.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

Carry = Any  # a pytree; () for feed-forward policies
Params = Any  # a pytree; None for heuristics
Extras = dict[str, jax.Array]


@runtime_checkable
class Policy(Protocol):
    """Anything that acts in an aht-bench task."""

    def init_carry(self, batch_shape: tuple[int, ...]) -> Carry:
        """The carry at an episode start, with leading `batch_shape` on every leaf."""
        ...

    def act(
        self, params: Params, carry: Carry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, Carry, Extras]:
        """(action int32 (), next carry, extras) for one agent's observation `obs` (obs_dim,)."""
        ...


def reset_carry_where(policy: Policy, done: jax.Array, carry: Carry) -> Carry:
    """`carry` with the entries where `done` (bool, batch_shape) replaced by a fresh carry."""
    fresh = policy.init_carry(tuple(done.shape))

    def _pick(new: jax.Array, old: jax.Array) -> jax.Array:
        mask = jnp.reshape(done, done.shape + (1,) * (old.ndim - done.ndim))
        return jnp.where(mask, new, old)

    return jax.tree.map(_pick, fresh, carry)
