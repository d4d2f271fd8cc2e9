"""Steps 3 and 6: evaluate every partner against every candidate, prune, bound, and publish the
set folder (`build`), assembled in a temporary folder and renamed into place.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from aht_bench.evaluation import sets
from aht_bench.heldout.build.best_responses import _best_responses
from aht_bench.heldout.build.bounds import (
    _example_agent_returns,
    _example_upper_returns,
    _settle_example_rounding,
    upper_bound,
)
from aht_bench.heldout.build.candidates import (
    _brdiv_candidates,
    _heuristic_candidates,
    _ippo_candidates,
)
from aht_bench.heldout.build.core import (
    Candidate,
    HeldoutBuildError,
    Log,
    _sha256,
    default_work_dir,
    recipe,
)
from aht_bench.heldout.build.selection import select
from aht_bench.heldout.recipes import BR_SEED, BRDIV_SEED, IPPO_SEED, Recipe
from aht_bench.policies.teammate_set import TeammateSet

if TYPE_CHECKING:
    from aht_bench.envs import Task


@dataclasses.dataclass(frozen=True)
class _Played:
    """What the build's evaluation measured: every partner (row) with every candidate
    (column), and the example agents' returns."""

    row_names: list[str]
    row_kinds: list[str]
    mean: np.ndarray  # (rows incl. example agents, candidates): mean over seatings, episodes
    per_seating: np.ndarray  # (partners, candidates, seatings)
    xp: np.ndarray  # (candidates, candidates): best response i with candidate j
    examples: list[tuple[str, np.ndarray]]
    example_upper: dict[str, dict[int, float]]  # file -> kept column -> upper CI of its return


def _copy_member(cand: Candidate, tmp: Path) -> dict[str, Any]:
    """A kept candidate's manifest entry without its bounds: a heuristic by name, a learned
    member's weight file(s) copied into the set."""
    entry: dict[str, Any] = {"name": cand.name, "kind": cand.kind}
    if cand.kind == "heuristic":
        entry["heuristic"] = cand.name
        return entry
    copied = []
    for seat, path in cand.files:
        rel = f"members/{cand.name}" + ("" if seat is None else f"-seat{seat}")
        rel += ".safetensors"
        _copy_policy(path, tmp / rel)
        copied.append({"seat": seat, "file": rel, "sha256": _sha256(tmp / rel)})
    if len(copied) == 1:
        entry["file"], entry["sha256"] = copied[0]["file"], copied[0]["sha256"]
    else:
        entry["seat_files"] = copied
        entry["plays"] = (
            "by side: the agent trained on the side (left = seat 0, right = seat 1) "
            "the member stands on (aht_bench.policies.seated.SeatPair)"
        )
    return entry


def _copy_best_responses(cand: Candidate, provenance: list[dict], tmp: Path) -> list[dict]:
    """The manifest's `best_responses` entry of a kept candidate, its files copied into the set."""
    out = []
    for prov in provenance:
        rel = f"br/{cand.name}-seat{prov['learner_seat']}.safetensors"
        _copy_policy(Path(prov["cache_file"]), tmp / rel)
        info = {k: v for k, v in prov.items() if k != "cache_file"}
        out.append(info | {"file": rel, "sha256": _sha256(tmp / rel)})
    return out


def _member_bounds(
    rec: Recipe, j: int, cand: Candidate, partners: list[tuple[str, str, Any, Any]], p: _Played
) -> dict[str, Any]:
    """Candidate `j`'s bounds: Bounds v2 (the highest of every source, each listed) or v1 (its
    own best response raised by the best partner)."""
    br_return = float(p.xp[j, j])
    per_seating = [float(v) for v in p.per_seating[j, j]]
    if not _bounds_v2(rec):
        column = [
            {"partner": partners[r][0], "kind": partners[r][1], "return": float(p.mean[r, j])}
            for r in range(len(partners))
        ]
        best = max(column, key=lambda c: c["return"])
        upper = max(best["return"], br_return)
        return {
            "lower": 0.0,
            "upper": upper,
            "upper_set_by": best["partner"] if best["return"] > br_return else f"br_{cand.name}",
            "best_response_return": br_return,
            "best_response_return_per_seating": per_seating,
            "raised_by": upper - br_return,
        }
    sources = [{"set_by": f"br_{cand.name}", "kind": "own best response", "value": br_return}]
    sources += [
        {"set_by": p.row_names[r], "kind": p.row_kinds[r], "value": float(p.mean[r, j])}
        for r in range(len(p.row_names))
        if r != j and p.row_kinds[r] != "example_agent"
    ]
    sources += [
        {"set_by": rel, "kind": "example_agent",
         "value": float(p.example_upper[rel][j]), "mean_return": float(r[j].mean()),
         "statistic": "upper end of the per-member 95% CI (aht-bench evaluate's)"}
        for rel, r in p.examples
    ]  # fmt: skip
    if rec.task_maximum is not None:
        sources.append(
            {"set_by": "task maximum", "kind": "task maximum", "value": float(rec.task_maximum)}
        )
    bound = upper_bound(sources)
    return {
        "lower": 0.0,
        "upper": bound["upper"],
        "upper_set_by": bound["upper_set_by"],
        "upper_set_by_kind": bound["kind"],
        "best_response_return": br_return,
        "best_response_return_per_seating": per_seating,
        "raised_by": bound["upper"] - br_return,
        "upper_candidates": sources,
    }


def _recipe_record(rec: Recipe, version: str, seconds: float) -> dict[str, Any]:
    """The manifest's `recipe`: the command that rebuilds the set and what went into it."""
    return {
        "command": f"aht-bench heldout build --task {rec.task_id} --version {version}",
        "definition": _jsonable(dataclasses.asdict(rec)),
        "seeds": {
            "ippo": f"{rec.seed_base + IPPO_SEED} + source seed_offset + team",
            "brdiv": f"{rec.seed_base + BRDIV_SEED} + run",
            "best_response": f"{rec.seed_base + BR_SEED} + 10 * candidate index + seat",
        },
        "evaluation": {
            "episodes_per_seating": rec.episodes,
            "seed": rec.eval_seed,
            "runner": "aht_bench.evaluation.rollout (jitted)",
        },
        "build_seconds": round(seconds, 1),
    }


def _cross_play_record(xp: np.ndarray, names: list[str], kept: list[int]) -> dict[str, Any]:
    """The manifest's `cross_play`: the kept members' best-response cross-play matrix."""
    sub = xp[np.ix_(kept, kept)]
    k = len(kept)
    return {
        "rows": [f"br_{names[i]}" for i in kept],
        "cols": [names[j] for j in kept],
        "mean_return": sub.round(6).tolist(),
        "diagonal_mean": float(np.diag(sub).mean()),
        "off_diagonal_mean": float(sub[~np.eye(k, dtype=bool)].mean()) if k > 1 else float("nan"),
        "note": "mean base return of each member's best response (row) with each member "
        "(column), averaged over seatings and episodes",
    }


def _evaluate_partners(
    rec: Recipe,
    candidates: list[Candidate],
    partners: list[tuple[str, str, Any, Any]],
    seatings: tuple[tuple[int, ...], ...],
    log: Log,
) -> tuple[_Played, list[dict[str, Any]]]:
    """Every partner and example agent with every candidate: (what was measured, the example
    agents' build info)."""
    from aht_bench.evaluation.evaluate import cross_play

    log(
        f"evaluating {len(partners)} partners with {len(candidates)} candidates, "
        f"{rec.episodes} episodes per seating"
    )
    rows = TeammateSet([p[0] for p in partners], [(p[2], p[3]) for p in partners])
    cols = TeammateSet([c.name for c in candidates], [(c.policy, c.params) for c in candidates])
    returns = cross_play(rec.task, rows, cols, seatings, rec.episodes, rec.eval_seed)
    per_seating = returns.mean(axis=3)  # (partners, candidates, seatings)
    mean = per_seating.mean(axis=2)  # (partners, candidates)
    row_names = [p[0] for p in partners]
    row_kinds = [p[1] for p in partners]
    examples, example_info = _example_agent_returns(rec, cols, seatings, log)
    if examples:
        mean = np.vstack([mean, *[r.mean(axis=(1, 2))[None] for _, r in examples]])
        row_names += [rel for rel, _ in examples]
        row_kinds += ["example_agent"] * len(examples)
    played = _Played(row_names, row_kinds, mean, per_seating, mean[: len(candidates)], examples, {})
    return played, example_info


def manifest_head(
    task_id: str, version: str, status: str, seatings: tuple[tuple[int, ...], ...]
) -> dict[str, Any]:
    """The fields every published set's manifest opens with: format, ids, `status`, the
    versions it was built with, and its seatings."""
    from aht_bench import __version__
    from aht_bench.evaluation.record import library_versions

    return {
        "format": sets.FORMAT,
        "format_version": sets.FORMAT_VERSION,
        "set_id": f"{task_id}/{version}",
        "version": version,
        "status": status,
        "task_id": task_id,
        "env_id": task_id,
        "package_version": __version__,
        "libraries": library_versions(),
        "jax_threefry_partitionable": bool(jax.config.values["jax_threefry_partitionable"]),
        "seatings": [list(s) for s in seatings],
    }


def _status(task_id: str, version: str) -> str:
    """The manifest's status line: a development set says it is one (it is never locked nor
    pinned); any other version is a published, immutable set."""
    if version == "dev":
        return (
            f"DEVELOPMENT SET of {task_id}, not a heldout set: for choosing settings, never for "
            "final numbers (it is never locked nor pinned)"
        )
    return (
        f"PUBLISHED heldout set {version}: immutable (a change that would change scores is a "
        "new version)"
    )


def _kept_members(
    rec: Recipe,
    kept: list[int],
    candidates: list[Candidate],
    brs: list[tuple[Any, Any, list[dict]]],
    partners: list[tuple[str, str, Any, Any]],
    played: _Played,
    tmp: Path,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """(the manifest's members, its best_responses): every kept candidate with its files copied
    into `tmp`, its bounds and its diversity numbers."""
    members = []
    br_entries: dict[str, list[dict[str, Any]]] = {}
    for j in kept:
        cand = candidates[j]
        entry = _copy_member(cand, tmp)
        entry["source"] = cand.source
        br_entries[cand.name] = _copy_best_responses(cand, brs[j][2], tmp)
        entry["bounds"] = _member_bounds(rec, j, cand, partners, played)
        others = [i for i in kept if i != j]
        entry["diversity"] = {
            "own_best_response_return": float(played.xp[j, j]),
            "other_best_responses_return": float(played.xp[others, j].mean()) if others else None,
        }
        members.append(entry)
    return members, br_entries


def build(
    task: str | Task,
    version: str = "v1",
    *,
    out: Path | None = None,
    work: Path | None = None,
    log: Log = print,
) -> Path:
    """Build `version` of `task`'s heldout set into `out` (default heldout/<task_id>/<version>/).

    Refuses to overwrite an existing set (published sets are immutable). Returns the folder.
    """
    from aht_bench.heldout.devset import make_partner

    rec = recipe(task, version)
    task_id = rec.task_id
    out = Path(out) if out is not None else sets.heldout_root() / task_id / version
    if (out / sets.MANIFEST).exists():
        raise HeldoutBuildError(
            f"{out} already holds a set: published sets are never overwritten; rebuild into "
            "another folder with --out DIR (and compare), or make a new version"
        )
    if out.exists() and any(out.iterdir()):
        raise HeldoutBuildError(f"{out} exists and is not empty; choose an empty or new folder")
    cache = Path(work) if work is not None else default_work_dir()
    cache = cache / task_id
    cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    env = rec.task.env
    seatings = sets.default_seatings(task_id, env.num_agents)

    rejected: list[dict[str, Any]] = []
    candidates = _ippo_candidates(rec, env, cache, log, rejected)
    candidates += _brdiv_candidates(rec, env, cache, log)
    candidates += _heuristic_candidates(rec)
    names = [c.name for c in candidates]
    brs = _best_responses(rec, env, candidates, cache, log)
    partners: list[tuple[str, str, Any, Any]] = [
        (f"br_{c.name}", "best_response", p, q)
        for c, (p, q, _) in zip(candidates, brs, strict=True)
    ] + [(c.name, c.kind, c.policy, c.params) for c in candidates]
    partners += [(n, "heuristic", make_partner(rec.task, n), None) for n in rec.extra_partners]
    played, example_info = _evaluate_partners(rec, candidates, partners, seatings, log)
    kept, pruned = select(played.xp, names, rec.min_competence, rec.min_gap)
    pruned = rejected + pruned
    for p in pruned:
        log(f"pruned {p['name']}: {p['reason']}")
    # an example agent's candidate bound: its upper CI with the kept members (the published set)
    for rel, r in played.examples:
        upper = _example_upper_returns(r[kept], rec.eval_seed)
        played.example_upper[rel] = dict(zip(kept, upper, strict=True))

    with sets.staged(out) as tmp:
        members, br_entries = _kept_members(rec, kept, candidates, brs, partners, played, tmp)
        if _bounds_v2(rec) and played.examples:
            _settle_example_rounding(
                members, [r[kept] for _, r in played.examples], rec.eval_seed, log
            )
        cross = _cross_play_record(played.xp, names, kept)
        status = _status(task_id, version)
        manifest = manifest_head(task_id, version, status, seatings) | {
            "members": members,
            "best_responses": br_entries,
            "cross_play": cross,
            "pruned": pruned,
            "candidates": {
                "names": names,
                "kinds": [c.kind for c in candidates],
                "best_response_xp": played.xp.round(6).tolist(),
            },
            "partner_returns": {
                "rows": played.row_names,
                "cols": names,
                "mean_return": played.mean.round(6).tolist(),
            }
            | ({"kinds": played.row_kinds} if _bounds_v2(rec) else {}),
            "recipe": _recipe_record(rec, version, time.perf_counter() - start),
        }
        if _bounds_v2(rec):
            manifest |= {"example_agents": example_info, "bounds_procedure": BOUNDS_V2}
        sets.write_manifest(tmp, manifest)
    log(
        f"wrote {out}/: {len(kept)} of {len(candidates)} candidates kept; cross-play diagonal "
        f"mean {cross['diagonal_mean']:.4g}, off-diagonal mean {cross['off_diagonal_mean']:.4g}; "
        f"{time.perf_counter() - start:.0f}s"
    )
    return out


BOUNDS_V2 = (
    "Bounds v2 (docs/heldout.md): lower 0; upper the highest of the member's own best response "
    "(trained until its return stopped rising), every partner evaluated with the member (the "
    "other candidates' best responses, the candidates, extra heuristics, the example agents), "
    "and the task's maximum where it has one; each member's upper_candidates lists them all. "
    "An example agent counts with the upper end of its per-member 95% CI as aht-bench evaluate "
    "computes it on this set, so no example agent scores above 1 even at its upper CI"
)


def _bounds_v2(rec: Recipe) -> bool:
    """Whether `rec` builds Bounds v2 (the v1 recipes build v1's bounds, byte for byte)."""
    return rec.br_plateau is not None or bool(rec.example_agents) or rec.task_maximum is not None


def _copy_policy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    shutil.copyfile(Path(str(src) + ".json"), Path(str(dst) + ".json"))


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str))
