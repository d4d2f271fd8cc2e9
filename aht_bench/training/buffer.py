"""The population buffer of an open-ended method (the paper's B_pi): a fixed number of slots of
teammate params, each with the best response trained with it, filled in order (a method adds
one teammate per iteration, or per generation iteration); the slots exist from the start
(zeros), so the buffer's shapes never change and a run compiles once.

May import jax and aht_bench.policies only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.policies.core import Params


class TeammateBuffer(NamedTuple):
    """The generated population: one slot per teammate, filled in order."""

    teammates: Params  # leaves (slots, ...): teammate params; slot i from the i-th generated
    best_responses: Params  # leaves (slots, ...): the best response trained with each (None
    #   for a method that trains none)
    count: jax.Array  # () int32: filled slots


def empty_buffer(slots: int, teammate: Any, best_response: Any | None) -> TeammateBuffer:
    """A buffer of `slots` zero slots for params shaped like `teammate` and `best_response`
    (pytrees of arrays or `jax.ShapeDtypeStruct`s; `best_response` None: no best responses)."""

    def zeros(x: Any) -> jax.Array:
        return jnp.zeros((slots,) + x.shape, x.dtype)

    return TeammateBuffer(
        teammates=jax.tree.map(zeros, teammate),
        best_responses=None if best_response is None else jax.tree.map(zeros, best_response),
        count=jnp.zeros((), jnp.int32),
    )


def insert(buffer: TeammateBuffer, teammate: Params, best_response: Params) -> TeammateBuffer:
    """`buffer` with `teammate` and `best_response` in its next free slot (`count`)."""

    def put(slots: jax.Array, member: jax.Array) -> jax.Array:
        return slots.at[buffer.count].set(member)

    return TeammateBuffer(
        teammates=jax.tree.map(put, buffer.teammates, teammate),
        best_responses=jax.tree.map(put, buffer.best_responses, best_response),
        count=buffer.count + 1,
    )
