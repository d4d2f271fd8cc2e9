"""What the method modules (rotate, fcp, brdiv, comedi, paired, minimax, cole) share besides the
PPO core: config validation that names the field and the fix, the preset lookup, and the
stacking of per-seed states and the in-memory loop over iterations.

May import jax, numpy and aht_bench.envs only.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax
import numpy as np

C = TypeVar("C")
S = TypeVar("S")


def require(ok: bool, field: str, got: Any, fix: str) -> None:
    """Raise `ValueError("<field>=<got> is invalid: <fix>")` unless `ok`."""
    if not ok:
        raise ValueError(f"{field}={got!r} is invalid: {fix}")


def check_task_id(task_id: str) -> None:
    """Raise a ValueError naming `task_id` if it is no registered task id or alias."""
    from aht_bench.envs import registry

    try:
        registry.resolve(task_id)
    except registry.UnknownTaskError as e:
        raise ValueError(f"task_id={task_id!r} is invalid: {e}") from None


def canonical_task_id(task_id: str) -> str:
    """The registered id that `task_id` (an id or alias) names."""
    from aht_bench.envs import registry

    return registry.resolve(task_id)


def check_hidden(config: Any, *names: str) -> None:
    """Turn the hidden-size fields `names` of a frozen `config` into tuples of ints and check
    that each has at least one layer, every size >= 1."""
    for name in names:
        sizes = tuple(int(h) for h in getattr(config, name))
        object.__setattr__(config, name, sizes)
        require(len(sizes) >= 1 and min(sizes) >= 1, name, sizes, "give sizes >= 1")


def check_choice(field: str, value: str, choices: tuple[str, ...]) -> None:
    """Raise a ValueError naming `field` (with the closest choice) unless `value` is one of
    `choices`."""
    if value not in choices:
        close = difflib.get_close_matches(value, choices, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{field}={value!r} is invalid: use one of {choices}{hint}")


def lookup_preset(
    method: str, presets: Mapping[str, Mapping[str, C]], name: str, task: str, **overrides: Any
) -> C:
    """`presets[name][task id of task]` with `overrides` replacing fields (validated like any
    config); a KeyError that lists what exists if either is unknown."""
    from aht_bench.envs.registry import resolve

    if name not in presets:
        close = difflib.get_close_matches(name, list(presets), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no {method} preset {name!r}.{hint} Known: {', '.join(presets)}")
    task_id = resolve(task)
    if task_id not in presets[name]:
        raise KeyError(
            f"the {name!r} {method} preset has no {task_id!r}; it covers "
            f"{', '.join(sorted(presets[name]))}"
        )
    config = presets[name][task_id]
    return dataclasses.replace(config, **overrides) if overrides else config  # type: ignore[type-var]


def stack_seeds(init: Callable[[jax.Array, C], S], key: jax.Array, config: C, num_seeds: int) -> S:
    """`init(k, config)` for each `k` of `split(key, num_seeds)`, stacked on a leading seed axis.

    Seeds are initialised one by one outside jit: a vmapped `MLPActorCritic.init` never returns
    on CPU (see `aht_bench.training.rollout.init_params`); `stack_trees` stacks them."""
    return stack_trees([init(k, config) for k in np.asarray(jax.random.split(key, num_seeds))])


def stack_trees(trees: list[Any]) -> Any:
    """`trees` (one per seed, the same structure) stacked on a leading seed axis: on the host,
    then put on the device once (eager `jnp.stack`s would compile one small kernel per leaf
    shape)."""
    stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)
    return jax.device_put(stacked)


def iterations_done(state: Any) -> int:
    """The iteration counter of a (seed-stacked) iteration-loop state, as a Python int."""
    return int(np.asarray(jax.device_get(state.iteration)).reshape(-1)[0])


def run_iterations(
    iterate: Callable[[S, C], tuple[S, dict[str, np.ndarray]]],
    state: S,
    config: C,
    iterations: int | None = None,
    on_iteration: Callable[[int, S, dict[str, np.ndarray]], None] | None = None,
) -> tuple[S, dict[str, np.ndarray]]:
    """In memory, `iterations` (default: the rest of `config.iterations`) calls of
    `iterate(state, config)` from `state` (leading seed axis); `on_iteration(iteration number,
    state, metrics)` after each (continuing from any state it saw is bit-identical to not
    stopping). Returns the last state and every metric stacked to (num_seeds, iterations run),
    NaN in iterations that do not report it (a two-stage method's stages report different
    metrics)."""
    if iterations is None:
        iterations = int(config.iterations) - iterations_done(state)  # type: ignore[attr-defined]
    history: list[dict[str, np.ndarray]] = []
    for _ in range(int(iterations)):
        state, metrics = iterate(state, config)
        history.append(metrics)
        if on_iteration is not None:
            on_iteration(int(metrics["iteration"][0]), state, metrics)
    names = list(dict.fromkeys(k for m in history for k in m))
    blank = np.full(np.shape(jax.device_get(state.iteration)), np.nan)  # type: ignore[attr-defined]
    return state, {k: np.stack([m.get(k, blank) for m in history], axis=1) for k in names}
