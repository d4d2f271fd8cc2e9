"""A build's independent units (each learned candidate and its best responses), for running
them apart (e.g. one per machine) before `build` assembles the set.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aht_bench.heldout.build.best_responses import _best_responses
from aht_bench.heldout.build.candidates import (
    _brdiv_candidates,
    _heuristic_candidates,
    _ippo_candidates,
)
from aht_bench.heldout.build.core import HeldoutBuildError, Log, default_work_dir, recipe

if TYPE_CHECKING:
    from aht_bench.envs import Task


def units(task: str | Task, version: str = "v1") -> list[str]:
    """The training units of a build that can run in separate processes before it: one per IPPO
    team (`ippo:<source>:<team>`, every team a source may try) and BRDiv run (`brdiv:<run>`).
    Best responses (`br:<candidate>`) are named by candidate once those exist."""
    rec = recipe(task, version)
    out = [
        f"ippo:{i}:{k}"
        for i, source in enumerate(rec.ippo)
        for k in range(source.seeds if source.tries is None else source.tries)
    ]
    if rec.brdiv is not None:
        out += [f"brdiv:{r}" for r in range(rec.brdiv.runs)]
    return out


def train_unit(
    task: str | Task, version: str, unit: str, *, work: Path | None = None, log: Log = print
) -> None:
    """Train one unit of `task`'s `version` build into the work cache, exactly as `build` would
    (same seed, config and file), so that several processes or machines can share a build: run
    the `units` first, then `br:<candidate>` for each candidate, then `build`, which finds them
    all cached. `br:<candidate>` needs the IPPO and BRDiv units (it trains any that are missing,
    in this process)."""
    rec = recipe(task, version)
    cache = (Path(work) if work is not None else default_work_dir()) / rec.task_id
    cache.mkdir(parents=True, exist_ok=True)
    env = rec.task.env
    kind, _, rest = unit.partition(":")
    if kind in ("ippo", "brdiv"):
        if unit not in units(task, version):
            raise HeldoutBuildError(
                f"no unit {unit!r} in the {version} recipe of {rec.task_id}; its units: "
                f"{', '.join(units(task, version)) or 'none'}, and br:<candidate>"
            )
        if kind == "ippo":
            source, team = (int(x) for x in rest.split(":"))
            _ippo_candidates(rec, env, cache, log, None, only=(source, team))
        else:
            _brdiv_candidates(rec, env, cache, log, only=int(rest))
        return
    if kind != "br" or not rest:
        raise HeldoutBuildError(
            f"unknown unit {unit!r}: use ippo:<source>:<team>, brdiv:<run> or br:<candidate>"
        )
    candidates = _ippo_candidates(rec, env, cache, log, [])
    candidates += _brdiv_candidates(rec, env, cache, log)
    candidates += _heuristic_candidates(rec)
    names = [c.name for c in candidates]
    if rest not in names:
        raise HeldoutBuildError(
            f"no candidate {rest!r} in the {version} build of {rec.task_id}; its candidates: "
            + ", ".join(names)
        )
    _best_responses(rec, env, candidates, cache, log, only=names.index(rest))
