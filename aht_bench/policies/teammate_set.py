"""A teammate set: named members that may differ in architecture (networks next to heuristics),
such as a heldout or development set.

`TeammateSet(names, members)`: `act(i, carry, obs, key)` dispatches with `jax.lax.switch`, so `i`
may be traced. Carries of different members have different structures, so a `TeammateSet` carry
is the tuple of every member's own carry; `act` advances only member `i`'s entry and passes the
others through unchanged (`init_carry` and `reset_carry_where` work on the whole tuple). Under
`vmap` with a batched index, `lax.switch` runs every member and selects, so a batched step costs
the sum of the members' costs. It is a pytree whose names and policies are static and whose
params are leaves, so it can be passed into jitted functions as an argument.

Teammates a method generates, of one architecture, are a `Population`
(`aht_bench.policies.population`).

May import jax, numpy and aht_bench.policies.core only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from aht_bench.policies.core import Carry, Extras, Params, Policy


def _common_extras(shapes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Extras keys every member returns with the same shape and dtype (and those specs)."""
    first = shapes[0]
    keep = {}
    for k, spec in first.items():
        if all(
            k in s and s[k].shape == spec.shape and s[k].dtype == spec.dtype for s in shapes[1:]
        ):
            keep[k] = spec
    return keep


@jax.tree_util.register_pytree_node_class
class TeammateSet:
    """Named, possibly heterogeneous members, each a (policy, params) pair.

    `TeammateSet(["sp_0", "fixed_up"], [(net, net_params), (fixed, None)])`. The carry is a
    tuple with one entry per member (that member's own carry). `act` returns the extras keys
    that every member produces with the same shape and dtype (none when, say, a heuristic
    without extras is in the set).
    """

    def __init__(self, names: Sequence[str], members: Sequence[tuple[Policy, Params]]) -> None:
        names = tuple(names)
        if len(names) != len(members) or not members:
            raise ValueError(
                f"TeammateSet needs one name per member and at least one member, got "
                f"{len(names)} names and {len(members)} members"
            )
        if len(set(names)) != len(names):
            raise ValueError(f"TeammateSet member names must be unique, got {names}")
        self.names: tuple[str, ...] = names
        self.policies: tuple[Policy, ...] = tuple(p for p, _ in members)
        self.params: tuple[Params, ...] = tuple(q for _, q in members)

    def tree_flatten(self) -> tuple[tuple[Params, ...], tuple[Any, ...]]:
        return self.params, (self.names, self.policies)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, ...], params: Sequence[Params]) -> TeammateSet:
        names, policies = aux
        return cls(names, list(zip(policies, params, strict=True)))

    @property
    def size(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """The member index of `name`."""
        if name not in self.names:
            raise KeyError(f"no teammate named {name!r}; this set has {list(self.names)}")
        return self.names.index(name)

    def init_carry(self, batch_shape: tuple[int, ...]) -> tuple[Carry, ...]:
        return tuple(p.init_carry(batch_shape) for p in self.policies)

    def act(
        self, index: jax.Array | int, carry: tuple[Carry, ...], obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, tuple[Carry, ...], Extras]:
        """Member `index` (int or traced int32 ()) acts on `obs`; other members' carries pass."""

        def _member_out(i: int, c: Carry, o: jax.Array, k: jax.Array):
            return self.policies[i].act(self.params[i], c[i], o, k)

        shapes = [
            jax.eval_shape(lambda c, o, k, i=i: _member_out(i, c, o, k)[2], carry, obs, key)
            for i in range(self.size)
        ]
        common = _common_extras(shapes)

        def _branch(i: int):
            def run(c: tuple[Carry, ...], o: jax.Array, k: jax.Array):
                action, ci, extras = _member_out(i, c, o, k)
                new_carry = c[:i] + (ci,) + c[i + 1 :]
                return jnp.asarray(action, jnp.int32), new_carry, {k_: extras[k_] for k_ in common}

            return run

        # lax.switch clamps an out-of-range index into [0, size - 1].
        return jax.lax.switch(
            jnp.asarray(index, jnp.int32), [_branch(i) for i in range(self.size)], carry, obs, key
        )
