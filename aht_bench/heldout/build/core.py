"""What every step of a build shares: the recipe of a task, the candidate, the work folder,
errors.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from aht_bench.heldout import recipes
from aht_bench.heldout.recipes import Recipe

if TYPE_CHECKING:
    from aht_bench.envs import Task


BUILD_DIR_ENV = "AHT_BENCH_BUILD_DIR"
Log = Callable[[str], None]


class HeldoutBuildError(RuntimeError):
    """A set that cannot be built as asked (a usage error or a failed recipe)."""


@dataclasses.dataclass
class Candidate:
    """One candidate member: how it plays and where its weights are."""

    name: str
    kind: str  # "ippo", "ippo-checkpoint", "ippo-shaped", "brdiv", "heuristic"
    policy: Any
    params: Any
    files: list[tuple[int | None, Path]]  # (seat or None for a single agent, cached weight file)
    source: dict[str, Any]  # how it was made (seed, config, training numbers)


def recipe(task: str | Task, version: str | None = None) -> Recipe:
    """The recipe of `task` (id or alias) for `version` (default: the newest version with a
    recipe for the task); a HeldoutBuildError lists the choices."""
    from aht_bench import envs

    task_id = envs.task(task).id
    if version is None:
        have = [v for v, table in recipes.RECIPES.items() if task_id in table and v != recipes.DEV]
        version = have[-1] if have else next(iter(recipes.RECIPES))
    if version not in recipes.RECIPES:
        raise HeldoutBuildError(
            f"no build recipe for version {version!r}; versions with recipes: "
            f"{', '.join(recipes.RECIPES)}"
        )
    table = recipes.RECIPES[version]
    if task_id not in table:
        raise HeldoutBuildError(
            f"no {version} recipe for {task_id}; tasks with one: {', '.join(table)}"
        )
    return table[task_id]


def default_work_dir() -> Path:
    override = os.environ.get(BUILD_DIR_ENV)
    if override:
        return Path(override)
    return Path.home() / ".cache" / "aht-bench" / "heldout-build"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _progress(total: int, label: str) -> tuple[Callable[..., None], Callable[[], None]]:
    """An `on_iteration` callback (`Method.run`: updates done, state, metrics) drawing a tqdm
    bar over `total` updates, and its closer."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit="upd", leave=False, dynamic_ncols=True)

    def update(done: int, *_: Any) -> None:
        bar.update(done - bar.n)

    return update, bar.close


def _seat_agent(tree: Any, seat: int) -> Any:
    """Seat `seat`'s params of seed 0 from IPPO params with leaves (seeds, agents, ...)."""
    return jax.tree.map(lambda x: np.asarray(x[0, seat]), jax.device_get(tree))
