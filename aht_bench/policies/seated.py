"""A self-play pair acting as one teammate on a divided layout: the agent of the side it stands on.

Learned heldout members are self-play pairs (an IPPO team; a BRDiv confederate with its best
response). On a layout whose floor splits into a left and a right region (Overcooked's
asymm_advantages and forced_coord: seat 0 always spawns left, seat 1 right), each agent of a
pair has only ever played its own side, so a member that must play either seat plays it with
the pair's agent of that side. The side is read from the observation itself: channel 0 of an
Overcooked observation marks the observing agent's own cell (JaxMARL's `get_obs`, own layers
first), and the right region's cells are fixed by the layout.

    pair = SeatPair((net, net), height, width, right_cells)      # right_cells: y * width + x
    action, carry, extras = pair.act((params_left, params_right), carry, obs, key)

On undivided layouts and LBF no side can be read (and none is needed: spawns and observations
are seat-symmetric), so members there are a single agent.

May import jax, numpy and aht_bench.policies.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.policies.core import Carry, Extras, Params

NUM_CHANNELS = 26  # Overcooked observation channels (aht_bench.envs.overcooked)


@dataclasses.dataclass(frozen=True)
class SeatPair:
    """Two policies, one per side of a divided layout; params are `(params_left, params_right)`.

    Both policies must be feed-forward (carry `()`), as the heldout members are.
    """

    policies: tuple[Any, Any]
    height: int
    width: int
    right_cells: tuple[int, ...]  # flat cell indices y * width + x of the right (seat-1) region

    def __post_init__(self) -> None:
        if len(self.policies) != 2:
            raise ValueError(f"SeatPair takes two policies (left, right), got {len(self.policies)}")
        if not self.right_cells:
            raise ValueError("SeatPair needs the right region's cells")
        cells = self.height * self.width
        if not all(0 <= c < cells for c in self.right_cells):
            raise ValueError(
                f"right_cells must be in [0, {cells}) for a {self.height}x{self.width} grid"
            )
        object.__setattr__(self, "right_cells", tuple(int(c) for c in self.right_cells))

    @classmethod
    def for_env(cls, env: Any, policies: tuple[Any, Any]) -> SeatPair:
        """The pair on an `aht_bench.envs.overcooked.Overcooked` env with a divided floor."""
        if not getattr(env, "divided", False):
            raise ValueError(
                f"{env.task_id} has no left and right regions: a SeatPair cannot tell the sides"
            )
        right = np.asarray(env.spawn_cells[1])  # (n, 2) (x, y)
        cells = tuple(int(y) * env.width + int(x) for x, y in right)
        return cls(tuple(policies), env.height, env.width, cells)  # type: ignore[arg-type]

    @property
    def obs_dim(self) -> int:
        return self.height * self.width * NUM_CHANNELS

    def side(self, obs: jax.Array) -> jax.Array:
        """int32 (): 1 if the observing agent stands in the right region, else 0."""
        own = obs.reshape(self.height * self.width, NUM_CHANNELS)[:, 0]
        return (own[jnp.asarray(self.right_cells)].sum() > 0).astype(jnp.int32)

    def init_carry(self, batch_shape: tuple[int, ...]) -> Carry:
        return ()

    def act(
        self, params: Params, carry: Carry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, Carry, Extras]:
        left, right = self.policies

        def _left(o: jax.Array, k: jax.Array) -> jax.Array:
            return jnp.asarray(left.act(params[0], (), o, k)[0], jnp.int32)

        def _right(o: jax.Array, k: jax.Array) -> jax.Array:
            return jnp.asarray(right.act(params[1], (), o, k)[0], jnp.int32)

        action = jax.lax.cond(self.side(obs) == 1, _right, _left, obs, key)
        return action, carry, {}
