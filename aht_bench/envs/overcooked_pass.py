"""Overcooked with a shaped reward for completed onion passes: the training task of the heldout
counter_circuit `ippo_mlp_pass` teammates (made by `overcooked.with_shaping(env, onion_pass=c)`;
the evaluator and the heldout sets play the plain task).

May import jax, flax, numpy and aht_bench.envs (core, overcooked, overcooked_render).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from aht_bench.envs.core import EnvState
from aht_bench.envs.overcooked import (
    EMPTY,
    ONION,
    RENDER_CELL,
    Overcooked,
    OvercookedState,
    OvercookedV2,
)
from aht_bench.envs.overcooked_render import render_rgb, render_text


@struct.dataclass
class PassInner:
    """`PassShapedOvercooked`'s backend state: JaxMARL's state plus who put which onion down."""

    base: Any  # OvercookedState
    placed_by: jax.Array  # (H, W) int32: the seat that put the onion on this counter cell, or -1
    passed: jax.Array  # (2,) bool: the onion this seat holds was put down by its partner


class PassShapedOvercooked(Overcooked):
    """Overcooked whose shaped reward also pays for completed onion passes (made by
    `with_shaping(env, onion_pass=c)`; the heldout counter_circuit `ippo_mlp_pass` teammates).

    A pass is an onion that one seat put on a counter, its partner took off it and put in a pot:
    the step it goes into the pot pays `onion_pass` to both seats. The state remembers, per
    counter cell, which seat put the onion there, and per seat whether the onion it holds was
    its partner's; an onion one seat puts down and picks up again pays nothing, nor does an onion
    handed back and forth across a counter, so every paid pass is an onion in a pot (the
    `onion_on_counter` reward, paid at the put-down, was farmed that way). Observations,
    dynamics, base reward and the other shaped terms are `Overcooked`'s; `EnvState.inner` is a
    `PassInner` (training only: the heldout sets and the evaluator use the plain task).
    """

    def _wrap(self, base: OvercookedState) -> PassInner:
        return PassInner(
            base=base,
            placed_by=jnp.full(self._counter_mask.shape, -1, jnp.int32),
            passed=jnp.zeros((2,), bool),
        )

    def _reset_inner(self, key: jax.Array) -> PassInner:  # type: ignore[override]
        return self._wrap(super()._reset_inner(key))

    def _step_inner(  # type: ignore[override]
        self, key: jax.Array, inner: PassInner, actions: jax.Array
    ) -> tuple[PassInner, jax.Array, jax.Array]:
        stepped, reward, shaped = super()._step_inner(key, inner.base, actions)
        before = inner.base
        held, now = before.agent_inv, stepped.agent_inv
        faced = before.agent_pos.astype(jnp.int32) + before.agent_dir.astype(jnp.int32)
        fx, fy = faced[:, 0], faced[:, 1]
        counter = self._counter_mask[fy, fx]
        put = (held == ONION) & (now == EMPTY) & counter
        took = (held == EMPTY) & (now == ONION) & counter
        potted = (held == ONION) & (now == EMPTY) & self._pot_mask[fy, fx]
        partner = 1 - jnp.arange(2)
        took_pass = took & (inner.placed_by[fy, fx] == partner)
        completed = jnp.sum(potted & inner.passed)
        placed_by = inner.placed_by
        for seat in range(2):  # clear the cells onions were taken from, then mark put-downs
            placed_by = placed_by.at[fy[seat], fx[seat]].set(
                jnp.where(took[seat], -1, placed_by[fy[seat], fx[seat]])
            )
        for seat in range(2):
            placed_by = placed_by.at[fy[seat], fx[seat]].set(
                jnp.where(put[seat], seat, placed_by[fy[seat], fx[seat]])
            )
        passed = took_pass | (inner.passed & (held == ONION) & (now == ONION))
        bonus = self.params.onion_pass * completed.astype(jnp.float32)
        out = PassInner(base=stepped, placed_by=placed_by, passed=passed)
        return out, reward, shaped + bonus

    def _observe_inner(self, inner: PassInner) -> jax.Array:  # type: ignore[override]
        return super()._observe_inner(inner.base)

    def _time(self, inner: PassInner) -> jax.Array:  # type: ignore[override]
        return super()._time(inner.base)

    def _validate_inner(self, inner: Any) -> list[str]:
        return super()._validate_inner(inner.base)

    def render_rgb(self, state: EnvState[Any], cell: int = RENDER_CELL) -> np.ndarray:
        return render_rgb(self, jax.device_get(state.inner.base), cell)

    def render_text(self, state: EnvState[Any]) -> str:
        return render_text(self, jax.device_get(state.inner.base), state.episode_return)


class PassShapedOvercookedV2(PassShapedOvercooked, OvercookedV2):
    """`PassShapedOvercooked` on `overcooked-<layout>-v2` (v2's reset, v2's shaping)."""


__all__ = ["PassInner", "PassShapedOvercooked", "PassShapedOvercookedV2"]
