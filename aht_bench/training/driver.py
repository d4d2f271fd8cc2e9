"""The jitted calls of every PPO learner, seeds vmapped: one call per few updates.

A PPO learner (ippo, br, ego) is a pair of pure functions over its own train state (a NamedTuple
holding params, optimiser states, env states, carries, keys and the update counter):

    state = init(key, config, *inputs)          # one seed
    state, metrics = update(state, config)      # ONE PPO update; metrics: dict of scalars

`init_seeds` builds `init` for each seed key; `update_seeds` vmaps `update` over seeds and scans
it `config.updates_per_call` times inside one jitted call: one step of the learner's `Method`
(`aht_bench.algorithms.api`), whose `run` is the in-memory loop over calls and
`aht_bench.runs` the one on disk (checkpoints, metrics files, signals). Because the whole state
of a run is the train state, continuing from a stored state after update k gives bit-identical
results to not stopping.

`update_seeds` takes the update function and the (hashable) config as static arguments, so runs
with equal configs reuse one compiled update. On several devices,
`shard_seeds` splits the seeds over them (every method maps its seeds with `map_seeds`;
`split_seeds` checks the counts first); `group_seeds` runs them in groups of a fixed size, so
that a run gives the same parameters to the bit on one device as on several (the group is what
XLA compiles for, not the device count).

May import jax, numpy and aht_bench.training only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from aht_bench.training.config import RunConfig

Metrics = dict[str, jax.Array]


def init_seeds(keys: jax.Array, init: Callable[..., Any], config: RunConfig, *inputs: Any) -> Any:
    """`init(key, config, *inputs)` for each key of `keys` (num_seeds, 2), stacked; inputs are
    shared by all seeds.

    Seeds are initialised one by one, outside jit: the algorithms' `init` builds its parts with
    separately jitted pieces (`init_params`, `init_rollout`) that compile once and are reused
    for every seed and agent, which costs a fraction of compiling one whole vmapped `init`
    (and a vmapped `MLPActorCritic.init` never returns on CPU, see `init_params`).
    """
    states = [init(key, config, *inputs) for key in keys]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


@partial(jax.jit, static_argnames=("update", "config"))
def update_seeds(
    state: Any, update: Callable[[Any, Any], tuple[Any, Metrics]], config: RunConfig
) -> tuple[Any, Metrics]:
    """`config.updates_per_call` updates of every seed; metrics leaves (num_seeds, calls)."""

    def _one_seed(seed_state):
        return jax.lax.scan(
            lambda s, _: update(s, config), seed_state, None, length=config.updates_per_call
        )

    return map_seeds(_one_seed, state)


SEED_AXIS = "seeds"
"""The mesh axis that `shard_seeds` splits the seed axis over."""
_seed_mesh: list[Mesh] = []
"""The mesh `shard_seeds` set (empty: one device)."""
_inside: list[bool] = []
"""Non-empty while a device's share of the seeds is traced (a nested `map_seeds` stays on it)."""
_seed_group: list[int] = []
"""The group size `group_seeds` set (empty: all of a device's seeds at once)."""


def shard_seeds(devices: Sequence[Any] | None) -> None:
    """Split the seed axis of every `map_seeds` over `devices` (None or one device: no
    sharding, the default): each device runs its share of the seeds (`jax.shard_map`), the
    same per-seed code as on one device. A run's seeds must then be a multiple of the device
    count. Set it before training (a change clears JAX's compile caches, which hold functions
    traced with the previous setting).

    Each device runs its share of the seeds as one batch (or in groups, `group_seeds`). XLA
    compiles a program for that batch size, and its rounding can depend on it (the recurrent
    egos of two methods differ in the last bits between a batch of 4 seeds and two of 2);
    two runs whose devices run batches of the same size give identical parameters. So 4 seeds
    over 2 devices equal 4 seeds on one device in groups of 2 (`group_seeds(2)`, `aht-bench
    train --seed-group 2`): tests/training/test_seed_sharding.py.
    """
    before = list(_seed_mesh)
    _seed_mesh.clear()
    if devices is not None and len(devices) > 1:
        _seed_mesh.append(Mesh(np.asarray(devices), (SEED_AXIS,)))
    if _seed_mesh != before:
        jax.clear_caches()


class SeedSplitError(ValueError):
    """A run's seeds do not split over the devices asked for (`split_seeds`); `field` names
    what to change: "devices" or "seed_group"."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def split_seeds(devices: int, num_seeds: int, group: int | None) -> None:
    """Split a run's `num_seeds` seeds over the first `devices` of this machine's devices
    (`shard_seeds`), each device's share a multiple of the seed `group` size (`group_seeds`);
    a `SeedSplitError` (nothing changed) when the machine has fewer devices or the seeds do
    not split so (`aht-bench train --devices`, `--seed-group`)."""
    here = jax.devices()
    if devices > len(here):
        raise SeedSplitError(
            f"this machine has {len(here)} {here[0].platform.upper()} device(s) "
            "(jax.devices()); use at most that many",
            "devices",
        )
    if num_seeds % devices:
        raise SeedSplitError(
            f"{num_seeds} seeds do not split over {devices} devices: use --seeds a multiple "
            f"of {devices}",
            "devices",
        )
    share = num_seeds // devices
    if group is not None and share % group:
        raise SeedSplitError(
            f"each of {devices} devices runs {share} of the {num_seeds} seeds, which do not "
            f"split into groups of {group}: use a --seed-group that divides {share}",
            "seed_group",
        )
    shard_seeds(here[:devices])


def group_seeds(size: int | None) -> None:
    """Run the seeds of every `map_seeds` in groups of `size`, one group after another
    (`jax.lax.map` over groups, `vmap` within one), on each device; None (the default): all of
    a device's seeds at once. A device's share of the seeds must then be a multiple of `size`.
    Runs whose groups have the same size give bit-identical parameters on one device or
    several (`shard_seeds`). Set it before training (a change clears JAX's compile caches)."""
    if size is not None and size < 1:
        raise ValueError(f"seed group size {size} is invalid: use at least 1")
    before = list(_seed_group)
    _seed_group.clear()
    if size is not None:
        _seed_group.append(int(size))
    if _seed_group != before:
        jax.clear_caches()


def seed_group() -> int | None:
    """The group size `group_seeds` set (None: each device runs all its seeds at once)."""
    return _seed_group[0] if _seed_group else None


def seed_devices() -> int:
    """How many devices `map_seeds` splits the seeds over (`shard_seeds`)."""
    return int(_seed_mesh[0].size) if _seed_mesh else 1


def _on_device(fn: Callable[..., Any], *args: Any) -> Any:
    """`_map_groups` of one device's share of the seeds (inside `jax.shard_map`, or the one
    device's); a `map_seeds` nested in `fn` maps its own axis with `_map_here`."""
    _inside.append(True)
    try:
        return _map_groups(fn, *args)
    finally:
        _inside.pop()


def _map_groups(fn: Callable[..., Any], *args: Any) -> Any:
    """`_map_here` of the seeds in groups of `seed_group()`, one group after another."""
    seeds = int(jax.tree.leaves(args)[0].shape[0])
    size = seed_group() or seeds
    if seeds % size:
        raise ValueError(
            f"{seeds} seeds (a device's share) do not split into groups of {size}: use a group "
            f"size that divides {seeds}"
        )
    if size == seeds:
        return _map_here(fn, *args)
    groups = jax.tree.map(lambda x: x.reshape((seeds // size, size) + x.shape[1:]), args)
    out = jax.lax.map(lambda group: _map_here(fn, *group), groups)
    return jax.tree.map(lambda x: x.reshape((seeds,) + x.shape[2:]), out)


def _map_here(fn: Callable[..., Any], *args: Any) -> Any:
    if int(jax.tree.leaves(args)[0].shape[0]) == 1:
        out = fn(*jax.tree.map(lambda x: x[0], args))
        return jax.tree.map(lambda x: x[None], out)
    return jax.vmap(fn)(*args)


def map_seeds(fn: Callable[..., Any], *args: Any) -> Any:
    """`jax.vmap(fn)(*args)` over the leading seed axis of every leaf of `args`, split over the
    devices `shard_seeds` set, if any, and on each device in the groups `group_seeds` set, if
    any. A `map_seeds` inside `fn` maps its own leading axis with a plain `vmap`.

    A single seed (on a device) runs without `vmap` (its axis dropped, then restored): a vmap
    of size one turns every matmul into a batched one, which XLA's CPU backend runs about 1.3x
    slower (benchmarks/train_throughput.py).
    """
    if _inside:
        return _map_here(fn, *args)
    if not _seed_mesh:
        return _on_device(fn, *args)
    mesh = _seed_mesh[0]
    seeds = int(jax.tree.leaves(args)[0].shape[0])
    if seeds % mesh.size:
        raise ValueError(
            f"{seeds} seeds do not split evenly over {mesh.size} devices: use a multiple of "
            f"{mesh.size} seeds, or fewer devices"
        )
    spec = PartitionSpec(SEED_AXIS)
    sharded = jax.shard_map(
        partial(_on_device, fn), mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False
    )
    return sharded(*args)


def updates_done(state: Any) -> int:
    """The update counter of a (seed-stacked) train state, as a Python int."""
    return int(np.asarray(jax.device_get(_update_counter(state))).reshape(-1)[0])


def _update_counter(state: Any) -> jax.Array:
    if not hasattr(state, "update_step"):
        raise TypeError(f"{type(state).__name__} has no update_step; not a train state")
    return state.update_step
