"""Teammates drawn from a pool (a population, a teammate set, with weights), as one policy of the
protocol.

`SampledTeammate(members)` is a policy that, at the first step of every episode, draws a member
of `members` (a stacked `Population` or a heterogeneous `TeammateSet`) with probability
proportional to `TeammatePool.weights` and plays it for the rest of the episode (the ego update
of the paper's ego-update algorithm samples teammates uniformly from the buffer; here each
env draws its own teammate per episode). A zero weight leaves a member out, so a fixed-size
buffer can grow without recompiling (a method that adds one teammate per iteration).

The draw happens inside `act`, from the act key, when the carry says "no member yet"
(`member == -1`, what `init_carry` and an episode-start reset give), so rollouts need no
special case for it.

`MixedPartner(first, second)` plays, at every step, the action of one of two policies with
probability 1/2 each (the paper's mixed play, Eq. mixed_play_start).

May import jax and aht_bench.policies only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.policies.core import Carry, Extras, Params
from aht_bench.policies.networks import GRUCarry
from aht_bench.policies.population import Population
from aht_bench.policies.teammate_set import TeammateSet


class TeammatePool(NamedTuple):
    """The params of a `SampledTeammate`."""

    members: Population | TeammateSet  # the teammates (their params are leaves)
    weights: jax.Array  # (size,) float32: draw probabilities up to a constant; 0 leaves one out


def teammate_pool(
    members: Population | TeammateSet, weights: jax.Array | None = None
) -> TeammatePool:
    """A pool with uniform weights unless `weights` (size,) is given."""
    if weights is None:
        weights = jnp.ones((members.size,), jnp.float32)
    weights = jnp.asarray(weights, jnp.float32)
    if weights.shape != (members.size,):
        raise ValueError(f"weights has shape {weights.shape}, expected ({members.size},)")
    return TeammatePool(members, weights)


class SampledCarry(NamedTuple):
    """The carry of a `SampledTeammate`."""

    member: jax.Array  # (...) int32: the member playing this episode; -1 before the first act
    inner: Carry  # the members' own carry


class SampledTeammate:
    """A policy that plays one member of a pool per episode (see the module docstring).

    `members` fixes the structure (architectures, size); the params passed to `act` are a
    `TeammatePool` of the same structure.
    """

    def __init__(self, members: Population | TeammateSet):
        self._members = members
        # Equal (and hashable) by structure: architectures, names and size, not param values,
        # so a SampledTeammate can be part of a static jit argument.
        self._structure = jax.tree.structure(members)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SampledTeammate) and self._structure == other._structure

    def __hash__(self) -> int:
        return hash(self._structure)

    @property
    def size(self) -> int:
        return self._members.size

    def init_carry(self, batch_shape: tuple[int, ...]) -> SampledCarry:
        return SampledCarry(
            member=jnp.full(tuple(batch_shape), -1, jnp.int32),
            inner=self._members.init_carry(tuple(batch_shape)),
        )

    def act(
        self, params: TeammatePool, carry: SampledCarry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, SampledCarry, Extras]:
        key_draw, key_act = jax.random.split(key)
        drawn = jax.random.categorical(key_draw, jnp.log(params.weights)).astype(jnp.int32)
        member = jnp.where(carry.member < 0, drawn, carry.member)
        action, inner, _ = params.members.act(member, carry.inner, obs, key_act)
        return jnp.asarray(action, jnp.int32), SampledCarry(member, inner), {}


@dataclasses.dataclass(frozen=True)
class MixedPartner:
    """The mixed policy of Eq. mixed_play_start: each step plays `first`'s action or `second`'s,
    with probability 1/2 each. Params: (first's params, second's params). The carry is
    `first`'s, advanced every step; a recurrent `first` (a `GRUCarry`) is told the action
    actually played. `second` is feed-forward (its carry is `()`)."""

    first: Any  # a policy: the ego, or the teammate being made compatible (pi^comp)
    second: Any  # a feed-forward policy: the best response

    def init_carry(self, batch_shape: tuple[int, ...]) -> Carry:
        return self.first.init_carry(batch_shape)

    def act(
        self, params: tuple[Params, Params], carry: Carry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, Carry, Extras]:
        key_coin, key_first, key_second = jax.random.split(key, 3)
        first_action, carry, _ = self.first.act(params[0], carry, obs, key_first)
        second_action, _, _ = self.second.act(params[1], (), obs, key_second)
        action = jnp.where(jax.random.bernoulli(key_coin), first_action, second_action)
        if isinstance(carry, GRUCarry):
            carry = carry._replace(prev_action=action)
        return action, carry, {}
