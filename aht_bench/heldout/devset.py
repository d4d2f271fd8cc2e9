"""Development teammate sets: the paper's evaluation heuristics of a task, with BRProx bounds
from PPO best responses trained here. Built by `aht-bench devset build --task T`.

A development set stands in for the published heldout sets (`heldout/<task>/v1`, a later
issue) so that the evaluator can be used and tested now. Its members are the heuristic
teammates of the paper's evaluation set (`PAPER_HEURISTICS[task]`); the bounds follow the
paper's procedure (App. "Evaluation Return Normalization Procedure"): lower 0; upper the return
of a PPO best response trained for the member, raised to the best return any evaluated partner
reaches with it. The partners evaluated here are the best responses, every member of the set
(self-play and cross-play) and a few extra heuristics of the recipe; the manifest records every
partner's return, who set each bound and by how much it was raised.

The best responses are trained on CPU with short budgets (`DevRecipe.br_timesteps`, far below
the paper's), so they are weak, and on most tasks a heuristic partner sets the bound: the
manifest says so under "status". Rebuilding with the recorded command and the same package
and library versions reproduces the numbers (PPO and evaluation are seeded; XLA on CPU is
deterministic for a fixed build).

Layout (compatible with the heldout-sets issue): `heldout/<task_id>/dev/manifest.json`,
`manifest.sha256`, and the best responses as policy files `br/<member>-seat<s>.safetensors`
(+ JSON card; their sha256 in the manifest).

May import jax, numpy, the standard library and aht_bench (it trains best responses, the
heldout-building work, so it lives beside the heldout builds).
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from aht_bench.envs import Task
from aht_bench.evaluation import sets
from aht_bench.evaluation.evaluate import cross_play
from aht_bench.policies.teammate_set import TeammateSet

VERSION = "dev"
BR_SEED_BASE = 7000  # BR seeds 7000 + 10 * member + seat: disjoint from the reference methods'


@dataclasses.dataclass(frozen=True)
class DevRecipe:
    """How a development set is built."""

    task_id: str
    """The registered task id."""
    members: tuple[str, ...]
    """Heuristic names of the members (the paper's evaluation heuristics of the task)."""
    extra_partners: tuple[str, ...] = ()
    """Heuristics that also partner every member when the bounds are estimated."""
    br_timesteps: int = 500_000
    """Env steps of each best response (the `quick` BR preset otherwise)."""
    br_seats: tuple[int, ...] = (0, 1)
    """Seats a best response is trained in (one BR per member and seat)."""
    br_plays_every_seat: bool = False
    """True on seat-symmetric tasks: the BR trained in `br_seats[0]` plays every seating."""

    @property
    def task(self) -> Task:
        """The task the build plays, handed to the evaluator and heuristics as it is."""
        return Task(self.task_id)

    episodes: int = 128
    """Episodes per seating when partners are evaluated with each member."""
    seed: int = 0
    """Seed of the partner evaluation episodes."""


RECIPES: dict[str, DevRecipe] = {
    "overcooked-forced_coord-v1": DevRecipe(
        "overcooked-forced_coord-v1",
        members=("independent_agent_0.6",),
        extra_partners=("independent_agent_0.3", "independent_agent_0.9"),
        br_timesteps=1_000_000,
    ),
    "overcooked-cramped_room-v1": DevRecipe(
        "overcooked-cramped_room-v1",
        # the paper's cramped_room evaluation heuristics (Table normalization_bounds)
        members=(
            "independent_agent_0.4",
            "independent_agent_0",
            "onion_agent_0.1",
            "plate_agent_0.1",
        ),
        br_timesteps=500_000,
    ),
    "lbf-v1": DevRecipe(
        "lbf-v1",
        members=(
            "seq_agent_lexi",
            "seq_agent_rlexi",
            "seq_agent_col",
            "seq_agent_rcol",
            "seq_agent_nearest",
            "seq_agent_farthest",
        ),
        # with a copy that follows the member's own nearest/farthest order, each eats all food
        extra_partners=("seq_agent_nearest_from_partner", "seq_agent_farthest_from_partner"),
        br_timesteps=500_000,
        br_seats=(0,),
        br_plays_every_seat=True,  # LBF is seat-symmetric; observations are egocentric
    ),
}


def recipe(task: str | Task) -> DevRecipe:
    """The recipe of `task` (an id or alias); a ValueError lists the tasks that have one."""
    from aht_bench import envs

    task_id = envs.task(task).id
    if task_id not in RECIPES:
        raise ValueError(
            f"no development-set recipe for {task_id}; recipes exist for {', '.join(RECIPES)}"
        )
    return RECIPES[task_id]


def make_partner(task: Task, name: str) -> Any:
    """A heuristic partner: `make_heuristic` names, plus LBF's `seq_agent_<order>_from_partner`
    (`lbf_heuristic(order, order_from="partner")`: follows the other seat's food order)."""
    from aht_bench.policies.heuristics import lbf_heuristic, make_heuristic

    suffix = "_from_partner"
    if task.id == "lbf-v1" and name.endswith(suffix):
        order = name.removeprefix("seq_agent_").removesuffix(suffix)
        return lbf_heuristic(order, num_agents=2, order_from="partner")
    return make_heuristic(task, name)


def _br_seed(member: int, seat: int) -> int:
    return BR_SEED_BASE + 10 * member + seat


def _train_br(
    task_id: str, name: str, policy: Any, seat: int, timesteps: int, seed: int
) -> tuple[Any, Any, dict[str, Any]]:
    """(network, params, provenance) of a PPO best response to one heuristic."""
    from aht_bench.algorithms import br
    from aht_bench.training import presets
    from aht_bench.training.config import BRConfig

    config = presets.get("br", "quick", task_id, total_timesteps=timesteps, learner_seat=seat)
    assert isinstance(config, BRConfig)
    start = time.perf_counter()
    result = br.train(
        jax.random.PRNGKey(seed), config, inputs=(TeammateSet([name], [(policy, None)]),)
    )
    params = jax.tree.map(lambda x: x[0], br.learner_params(result.state))
    curve = np.asarray(result.metrics["episode_return"][0], np.float64)
    tail = curve[-max(1, len(curve) // 10) :]
    provenance = {
        "algorithm": "br (aht_bench.algorithms.br, PPO)",
        "preset": "quick",
        "total_timesteps": int(config.total_timesteps),
        "learner_seat": seat,
        "seed": seed,
        "key": f"jax.random.PRNGKey({seed})",
        "train_seconds": round(time.perf_counter() - start, 1),
        "final_train_return": float(np.nanmean(tail)) if np.any(np.isfinite(tail)) else None,
    }
    return br.network(config), params, provenance


def _train_best_responses(
    rec: DevRecipe,
    members: list[tuple[str, Any]],
    partners: list[tuple[str, Any, Any]],
    work: Path,
    log: Callable[[str], None],
) -> tuple[dict[str, dict[str, Any]], dict[tuple[int, int], int]]:
    """Train and save (under `work/br/`) a best response to every member in every seat of the
    recipe, appending each to `partners`. Returns (provenance per BR label, the row in
    `partners` of each (member, seat)'s BR)."""
    from aht_bench.policies.io import save_policy

    task_id = rec.task_id
    br_files: dict[str, dict[str, Any]] = {}
    br_rows: dict[tuple[int, int], int] = {}
    for m, (name, policy) in enumerate(members):
        for seat in rec.br_seats:
            seed = _br_seed(m, seat)
            log(
                f"training a best response to {name} in seat {seat} "
                f"({rec.br_timesteps:,} steps, seed {seed})"
            )
            network, params, provenance = _train_br(
                task_id, name, policy, seat, rec.br_timesteps, seed
            )
            label = f"br_{name}_seat{seat}"
            rel = f"br/{name}-seat{seat}.safetensors"
            save_policy(
                work / rel,
                network,
                params,
                {"task_id": task_id, "provenance": provenance | {"best_response_to": name}},
            )
            provenance |= {
                "file": rel,
                "sha256": hashlib.sha256((work / rel).read_bytes()).hexdigest(),
            }
            br_files[label] = provenance
            br_rows[(m, seat)] = len(partners)
            partners.append((label, network, params))
            log(
                f"  done in {provenance['train_seconds']:.0f}s; mean training return at "
                f"the end {provenance['final_train_return']}"
            )
    return br_files, br_rows


def _member_bounds(
    rec: DevRecipe,
    name: str,
    m: int,
    partners: list[tuple[str, Any, Any]],
    per_seating: np.ndarray,
    br_rows: dict[tuple[int, int], int],
    seatings: tuple[tuple[int, ...], ...],
    xp: np.ndarray,
) -> dict[str, Any]:
    """Member `m`'s manifest entry: its upper bound, the best return any partner (its own best
    responses, seat by seat, or a heuristic) reaches with it; fills column `m` of `xp`."""
    candidates = []
    for r, (partner, _, _) in enumerate(partners):
        if partner.startswith("br_"):
            continue
        value = float(per_seating[r, m].mean())
        xp[r, m] = value
        candidates.append({"partner": partner, "kind": "heuristic", "return": value})
    br_seating_returns = []
    for s, seating in enumerate(seatings):
        seat = rec.br_seats[0] if rec.br_plays_every_seat else seating[0]
        br_seating_returns.append(float(per_seating[br_rows[(m, seat)], m, s]))
    br_return = float(np.mean(br_seating_returns))
    for seat in rec.br_seats:
        xp[br_rows[(m, seat)], m] = br_return
    candidates.insert(
        0,
        {
            "partner": "+".join(f"br_{name}_seat{seat}" for seat in rec.br_seats),
            "kind": "best_response",
            "return": br_return,
            "return_per_seating": br_seating_returns,
        },
    )
    best = max(candidates, key=lambda c: c["return"])
    if best["return"] <= 0:
        raise RuntimeError(
            f"no partner scores with {name} (every return <= 0), so it has no upper "
            "bound; train longer best responses (--br-timesteps)"
        )
    return {
        "name": name,
        "kind": "heuristic",
        "heuristic": name,
        "bounds": {
            "lower": 0.0,
            "upper": best["return"],
            "upper_set_by": best["partner"],
            "best_response_return": br_return,
            "raised_by": best["return"] - br_return,
            "partners": candidates,
        },
    }


def _recipe_record(rec: DevRecipe, members: list[tuple[str, Any]], seconds: float) -> dict:
    """The manifest's `recipe`: how to rebuild the set and what went into it."""
    return {
        "command": f"aht-bench devset build --task {rec.task_id} --br-timesteps {rec.br_timesteps}",
        "members": list(rec.members),
        "extra_partners": list(rec.extra_partners),
        "br_timesteps": rec.br_timesteps,
        "br_preset": "quick",
        "br_seats": list(rec.br_seats),
        "br_plays_every_seat": rec.br_plays_every_seat,
        "br_seeds": {
            name: [_br_seed(m, s) for s in rec.br_seats] for m, (name, _) in enumerate(members)
        },
        "evaluation": {
            "episodes_per_seating": rec.episodes,
            "seed": rec.seed,
            "runner": "aht_bench.evaluation.rollout (jitted)",
        },
        "build_seconds": round(seconds, 1),
    }


def build(
    task: str | Task,
    out: Path | None = None,
    *,
    br_timesteps: int | None = None,
    member_names: tuple[str, ...] | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Build the development set of `task` into `out` (default heldout/<task_id>/dev/).

    `br_timesteps` and `member_names` override the recipe (both are recorded in the manifest).
    The folder is assembled in a temporary folder next to `out` and renamed into place at the
    end, so an interrupted build leaves the old set untouched. Returns the set's folder.
    """
    from aht_bench import __version__
    from aht_bench.evaluation.record import library_versions
    from aht_bench.policies.heuristics import make_heuristic

    rec = recipe(task)
    if br_timesteps is not None:
        rec = dataclasses.replace(rec, br_timesteps=int(br_timesteps))
    if member_names is not None:  # a subset, e.g. for a quick check of the recipe
        rec = dataclasses.replace(rec, members=tuple(member_names))
    task_id = rec.task_id
    out = Path(out) if out is not None else sets.heldout_root() / task_id / VERSION
    env = rec.task.env
    seatings = sets.default_seatings(task_id, env.num_agents)
    start = time.perf_counter()

    work = sets.staging_folder(out)
    try:
        members = [(name, make_heuristic(rec.task, name)) for name in rec.members]
        partners: list[tuple[str, Any, Any]] = [(n, p, None) for n, p in members]
        partners += [(n, make_partner(rec.task, n), None) for n in rec.extra_partners]
        br_files, br_rows = _train_best_responses(rec, members, partners, work, log)

        log(
            f"evaluating {len(partners)} partners with {len(members)} member(s), "
            f"{rec.episodes} episodes per seating"
        )
        rows = TeammateSet([n for n, _, _ in partners], [(p, q) for _, p, q in partners])
        cols = TeammateSet([n for n, _ in members], [(p, None) for _, p in members])
        returns = cross_play(rec.task, rows, cols, seatings, rec.episodes, rec.seed)
        per_seating = returns.mean(axis=3)  # (partners, members, seatings)
        xp = np.zeros((len(partners), len(members)))
        manifest_members = [
            _member_bounds(rec, name, m, partners, per_seating, br_rows, seatings, xp)
            for m, (name, _) in enumerate(members)
        ]
        manifest = {
            "format": sets.FORMAT,
            "format_version": sets.FORMAT_VERSION,
            "set_id": f"{task_id}/{VERSION}",
            "version": VERSION,
            "status": (
                "DEVELOPMENT SET, not the published heldout v1: the paper's evaluation "
                "heuristics of this task, with upper bounds from short CPU best-response runs "
                f"({rec.br_timesteps:,} env steps each) raised by the best evaluated partner"
            ),
            "task_id": task_id,
            "env_id": task_id,
            "package_version": __version__,
            "libraries": library_versions(),
            "seatings": [list(s) for s in seatings],
            "members": manifest_members,
            "best_responses": br_files,
            "partner_returns": {
                "rows": [n for n, _, _ in partners],
                "cols": [n for n, _ in members],
                "mean_return": xp.round(6).tolist(),
                "note": "mean base return of each partner (row) with each member (column), "
                "averaged over seatings; a BR row holds the seat-averaged return of the "
                "member's best responses",
            },
            "recipe": _recipe_record(rec, members, time.perf_counter() - start),
        }
        sets.write_manifest(work, manifest)
        if out.exists():
            shutil.rmtree(out)
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    log(f"wrote {out}/ ({len(members)} members) in {time.perf_counter() - start:.0f}s")
    return out
