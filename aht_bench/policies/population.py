"""A population: the teammates a method generates and publishes (the paper's population; an
IPPO run's team), one architecture, params stacked.

`Population(policy, params_stacked)`: the members share one architecture and their params are
stacked on a leading axis (xland-minigrid `Benchmark` style), so `get`, `sample` and `act` take a
traced member index and jit/vmap freely. It is a pytree whose policy is static and whose params
are leaves, so it can be passed into jitted functions as an argument. Its size is
`population_size` wherever the word appears (a method's config: how many it generates; a run's
metrics: how many so far; a population file's card: how many it holds).

Named members of any architecture (a heldout or development set) are a `TeammateSet`
(`aht_bench.policies.teammate_set`), not a population.

May import jax, flax, numpy and aht_bench.policies.core only.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import struct

from aht_bench.policies.core import Carry, Extras, Params, Policy


@struct.dataclass
class Population:
    """`size` members of one architecture `policy`, params stacked on a leading axis."""

    policy: Policy = struct.field(pytree_node=False)
    params: Params  # every leaf (size, ...)

    @classmethod
    def stack(cls, policy: Policy, members: Sequence[Params]) -> Population:
        """A population from a list of per-member params (all of `policy`'s architecture)."""
        if not members:
            raise ValueError("a Population needs at least one member")
        return cls(policy, jax.tree.map(lambda *xs: jnp.stack(xs), *members))

    @property
    def size(self) -> int:
        """Number of members (a Python int read from static shapes, so usable under jit)."""
        leaves = jax.tree.leaves(self.params)
        if not leaves:
            raise ValueError("a Population of parameterless policies has no size; use TeammateSet")
        return int(leaves[0].shape[0])

    def get(self, index: jax.Array | int) -> Params:
        """Params of member `index` (int or traced int32 ())."""
        return jax.tree.map(lambda x: x[index], self.params)

    def sample(self, key: jax.Array, weights: jax.Array | None = None) -> jax.Array:
        """A member index int32 (): uniform, or with probability `weights[i] / sum(weights)`."""
        if weights is None:
            return jax.random.randint(key, (), 0, self.size, dtype=jnp.int32)
        weights = jnp.asarray(weights, jnp.float32)
        if weights.shape != (self.size,):
            raise ValueError(f"weights has shape {weights.shape}, expected ({self.size},)")
        return jax.random.categorical(key, jnp.log(weights)).astype(jnp.int32)

    def init_carry(self, batch_shape: tuple[int, ...]) -> Carry:
        return self.policy.init_carry(batch_shape)

    def act(
        self, index: jax.Array | int, carry: Carry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, Carry, Extras]:
        """Member `index` acts: `policy.act(get(index), carry, obs, key)`."""
        return self.policy.act(self.get(index), carry, obs, key)
