"""Versioned task ids. An id never changes meaning: a change that alters behaviour is a new id.

`make("overcooked-forced_coord-v1")` builds a task; `make("forced_coord")` works too, through
short aliases that always point at the newest version. Unknown ids fail with a suggestion.

May import the standard library and aht_bench.envs.core only.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, NamedTuple

from aht_bench.envs.core import Environment


class TrainingDefaults(NamedTuple):
    """What training needs to know of a task that its tables do not say: registered with the
    task, so a new task states it in one place and no rule guesses it from the id."""

    family: str
    """The kind of task whose per-kind settings it shares: the methods' quick budgets and the
    measured training rates of `aht-bench sweep`'s estimates ("lbf", "overcooked")."""
    rollout_length: int
    """Env steps per env in one rollout of every preset (128 on LBF; one whole 400-step
    episode on Overcooked)."""


class NoTrainingDefaultsError(ValueError):
    """A task registered without `training`: the training presets cannot be built for it."""


class UnknownTaskError(KeyError):
    """Raised for an id that is neither registered nor an alias."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


_REGISTRY: dict[str, Callable[[], Environment]] = {}
_DESCRIPTIONS: dict[str, str] = {}
_HORIZONS: dict[str, int | None] = {}
_ALIASES: dict[str, str] = {}
_SUPERSEDED: dict[str, str] = {}
_TRAINING: dict[str, TrainingDefaults] = {}


def register(
    task_id: str,
    factory: Callable[[], Environment],
    description: str = "",
    horizon: int | None = None,
    training: TrainingDefaults | None = None,
) -> None:
    """Register `factory` under `task_id` (which must end in -vN). Ids are never re-registered.

    `horizon` is the episode length the built task truncates at (its `horizon` attribute),
    recorded here so the Gymnasium registration can state it without building the task.
    `training` is what the training presets need of the task (`TrainingDefaults`); a task
    without it can be evaluated on, not trained on with a preset.
    """
    head, _, version = task_id.rpartition("-v")
    if not head or not version.isdigit():
        raise ValueError(f"task id {task_id!r} must end in a version, e.g. '{task_id}-v1'")
    if task_id in _REGISTRY:
        raise ValueError(f"task id {task_id!r} is already registered; register a new version")
    _REGISTRY[task_id] = factory
    _DESCRIPTIONS[task_id] = description
    _HORIZONS[task_id] = horizon
    if training is not None:
        _TRAINING[task_id] = training


def alias(name: str, task_id: str) -> None:
    """Make `name` (e.g. 'forced_coord') resolve to `task_id`."""
    if task_id not in _REGISTRY:
        raise ValueError(f"cannot alias {name!r} to unregistered id {task_id!r}")
    _ALIASES[name] = task_id


def supersede(task_id: str, by: str) -> None:
    """Record that the registered `task_id` is a retired protocol, superseded by `by` (e.g.
    the v1 Overcooked game by the v2 one, the game the paper's numbers were measured on). The
    old id keeps its meaning; tables (the leaderboard) list its results as retired."""
    for t in (task_id, by):
        if t not in _REGISTRY:
            raise ValueError(f"cannot supersede with unregistered id {t!r}")
    _SUPERSEDED[task_id] = by


def superseded_by(task_id: str) -> str | None:
    """The id that supersedes `task_id` (an id or alias), or None for a current task."""
    return _SUPERSEDED.get(resolve(task_id))


def resolve(name: str) -> str:
    """The registered id that `name` means; raises `UnknownTaskError` with a suggestion."""
    if name in _REGISTRY:
        return name
    if name in _ALIASES:
        return _ALIASES[name]
    known = sorted(_REGISTRY) + sorted(_ALIASES)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownTaskError(
        f"unknown task {name!r}.{hint} Registered tasks: {', '.join(sorted(_REGISTRY))} "
        "(`aht-bench tasks` lists them)."
    )


def make(name: str, **kwargs: Any) -> Environment:
    """Build the task registered as `name` (an id or an alias)."""
    task_id = resolve(name)
    env = _REGISTRY[task_id](**kwargs)
    env.task_id = task_id
    return env


def registered_ids() -> list[str]:
    """Every registered id, sorted."""
    return sorted(_REGISTRY)


def describe(task_id: str) -> str:
    """One line about a registered task."""
    return _DESCRIPTIONS[resolve(task_id)]


def registered_horizon(task_id: str) -> int | None:
    """The horizon `task_id` was registered with (None if it gave none), without building it."""
    return _HORIZONS[resolve(task_id)]


def training_defaults(task_id: str) -> TrainingDefaults:
    """The `TrainingDefaults` `task_id` (an id or an alias) was registered with; raises
    `NoTrainingDefaultsError` naming the fix for a task registered without them."""
    resolved = resolve(task_id)
    if resolved not in _TRAINING:
        raise NoTrainingDefaultsError(
            f"task {resolved!r} was registered without training defaults, so no preset can "
            "train on it: register it with `training=TrainingDefaults(family=..., "
            "rollout_length=...)` (aht_bench/envs/tasks.py)"
        )
    return _TRAINING[resolved]


def aliases() -> dict[str, str]:
    """Short name -> id."""
    return dict(_ALIASES)
