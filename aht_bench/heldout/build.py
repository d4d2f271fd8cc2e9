"""Building a heldout set: candidates, best responses, cross-play, pruning, bounds, publishing.

    aht-bench heldout build --task cramped_room --version v1      # -> heldout/<task_id>/v1/
    build("cramped_room", "v1", out=Path("/tmp/rebuild"))          # a rebuild elsewhere

The steps (paper App. "Evaluation Teammates" and "Evaluation Return Normalization Procedure"):

1. **Candidates** from the recipe (`recipes.V1`): IPPO self-play teams, BRDiv confederates,
   heuristics. A learned candidate is one agent on seat-symmetric tasks (LBF and the undivided
   Overcooked layouts: the agent that trained in seat 1, the teammate seat when an ego takes
   seat 0; observations are egocentric and spawns symmetric, so it plays either seat). On the
   divided layouts (asymm_advantages, forced_coord) it is the self-play pair, played as a
   `SeatPair`: the IPPO team's agent of each side, or the BRDiv confederate on its side with its
   own best response on the other.
2. **Best responses**: a PPO best response per candidate and seat (`recipe.br_seats`); on
   divided layouts the two seats' best responses form one `SeatPair` partner. v1 trains each
   for `br_timesteps`; a recipe with `br_plateau` (v2) trains it in chunks until its return
   stops rising (`plateaued`), saving the train state after every chunk.
3. **Evaluation**: every partner (each candidate's best response, every candidate, the recipe's
   extra heuristics) plays every candidate in every seating (`evaluate.cross_play`).
4. **Pruning**: an IPPO team of a source with `tries` that ends its training with self-play
   return 0 is no candidate (the next seed is tried). A candidate is kept if it is competent
   (its best-response return is above zero and at least `min_competence` of the best
   candidate's) and adds diversity: its own best response beats the other kept candidates' best
   responses with it by at least `min_gap` of its best-response return. Candidates failing
   diversity are dropped one at a time, the least diverse first, recomputing the others'
   off-diagonal means after each drop. Every pruned candidate is recorded with its reason and
   numbers.
5. **Bounds**: lower 0; upper the best-response return, raised to the best return of any
   evaluated partner (who raised it and by how much is recorded). Bounds v2 (`upper_bound`):
   the partners include the recipe's example agent files, played by the evaluator, and the
   task's maximum return is one more candidate; every candidate value is recorded. An example
   agent's candidate value is the upper end of its per-member 95% CI exactly as `aht-bench
   evaluate` computes it on the published set (`_example_upper_returns`), so that no example
   agent can score above 1 even at the upper end of its CI (an example that sets a bound at its
   mean return would score 1.0 with a CI above 1).
6. **Publish**: `heldout/<task_id>/<version>/manifest.json` (+ `manifest.sha256`), the kept
   members' weights under `members/`, their best responses under `br/`; assembled in a temporary
   folder and renamed into place. A published version is never overwritten: building onto an
   existing folder is refused (rebuild elsewhere with `out=`).

Trained pieces are cached under the work folder (default `~/.cache/aht-bench/heldout-build/`,
`AHT_BENCH_BUILD_DIR` or `work=`), keyed by name, seed and budget, so an interrupted build
resumes where it stopped. PPO, BRDiv and evaluation are seeded; on the same CPU build of the
same libraries a rebuild reproduces the same weights bit for bit.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from aht_bench.evaluation import sets
from aht_bench.heldout import recipes
from aht_bench.heldout.recipes import BR_SEED, BRDIV_SEED, IPPO_SEED, Recipe
from aht_bench.policies.population import TeammateSet
from aht_bench.policies.seated import SeatPair

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


def _progress(total: int, label: str) -> tuple[Callable[[int, Any], None], Callable[[], None]]:
    """An `on_update` callback drawing a tqdm bar over `total` updates, and its closer."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit="upd", leave=False, dynamic_ncols=True)

    def update(done: int, _metrics: Any) -> None:
        bar.update(done - bar.n)

    return update, bar.close


def _seat_agent(tree: Any, seat: int) -> Any:
    """Seat `seat`'s params of seed 0 from IPPO params with leaves (seeds, agents, ...)."""
    return jax.tree.map(lambda x: np.asarray(x[0, seat]), jax.device_get(tree))


# ---------------------------------------------------------------------------------- candidates


def _pairs(env: Any) -> bool:
    """Whether learned members are side pairs (`SeatPair`): on divided Overcooked layouts."""
    return bool(getattr(env, "divided", False))


def _cached_policy(path: Path) -> tuple[Any, Any] | None:
    from aht_bench.policies.io import PolicyFileError, load_policy

    if not path.is_file():
        return None
    try:
        return load_policy(path)
    except PolicyFileError:
        return None


_SHAPING_TAGS = {"counter_pickup": "cp", "onion_pass": "op"}


def _shaping_tag(shaping: tuple[tuple[str, float], ...]) -> str:
    """The cache-file tag of shaped-reward coefficients ("" for the paper's, "-cp0" for
    counter_pickup 0): files trained with other coefficients are never reused."""
    return "".join(f"-{_SHAPING_TAGS.get(k, k)}{v:g}" for k, v in shaping)


def _shaping_provenance(rec: Recipe) -> dict[str, float]:
    """The recipe's shaping for a card's provenance (nothing for the paper's, as in the sets
    published before recipes had shaping)."""
    return dict(rec.shaping)


def _ippo_candidates(
    rec: Recipe,
    env: Any,
    work: Path,
    log: Log,
    rejected: list[dict[str, Any]] | None = None,
    only: tuple[int, int] | None = None,
) -> list[Candidate]:
    """The recipe's IPPO teams (trained or read from `work`) as candidates; a source with `tries`
    appends the teams it did not keep to `rejected`. `only=(source, team)` trains (or finds) that
    one team into `work` and returns no candidates (`train_unit`)."""
    from aht_bench.policies.io import read_card
    from aht_bench.training import presets
    from aht_bench.training.config import IPPOConfig

    out: list[Candidate] = []
    for index, source in enumerate(rec.ippo):
        if only is not None and index != only[0]:
            continue
        accepted = 0
        base = presets.get("ippo", source.preset, rec.task_id)
        assert isinstance(base, IPPOConfig)
        steps = source.timesteps or base.total_timesteps
        config = dataclasses.replace(base, total_timesteps=steps)
        updates = config.num_updates
        marks = tuple(sorted({max(1, round(f * updates)) for f in source.checkpoints}))
        shaping = (
            rec.shaping
            + (
                (("onion_on_counter", source.onion_on_counter_reward),)
                if source.onion_on_counter_reward
                else ()
            )
            + source.shaping
        )
        if shaping:
            config = dataclasses.replace(config, shaping=shaping)
        for k in range(source.seeds if source.tries is None else source.tries):
            if only is not None and k != only[1]:
                continue
            if accepted == source.seeds:
                break
            seed = rec.seed_base + IPPO_SEED + source.seed_offset + k
            name = f"{source.prefix}_{k}"
            # the quick preset's files keep the name they had before presets were recorded
            stem = (
                f"{name}-s{seed}-t{steps}"
                + ("" if source.preset == "quick" else f"-{source.preset}")
                + _shaping_tag(rec.shaping + source.shaping)
            )
            seats = (0, 1) if _pairs(env) else (1,)
            team_marks = marks if k == source.checkpoint_team else ()
            wanted = [(None, s, work / f"{stem}-seat{s}.safetensors") for s in seats]
            wanted += [
                (u, s, work / f"{stem}-c{u}-seat{s}.safetensors") for u in team_marks for s in seats
            ]
            if not all(p.is_file() for _, _, p in wanted):
                cfg = dataclasses.replace(config, checkpoint_updates=team_marks)
                _train_ippo_team(rec, source, cfg, name, seed, wanted, log)
            final_return = read_card(wanted[0][2])["provenance"]["final_self_play_return"]
            if only is not None:
                continue
            if source.tries is not None and not (final_return or 0.0) > 0.0:
                log(f"  {name} ended with self-play return {final_return}: not a candidate")
                if rejected is not None:
                    rejected.append(
                        {
                            "name": name,
                            "reason": "not competent in self-play (no best response trained)",
                            "self_play_return": float(final_return or 0.0),
                            "threshold": 0.0,
                            "seed": seed,
                        }
                    )
                continue
            accepted += 1
            out += [
                _team_candidate(env, source.kind, name, stem, update, seats, work)
                for update in (None, *team_marks)
            ]
    return out


def _train_ippo_team(
    rec: Recipe,
    source: recipes.IPPOSource,
    cfg: Any,
    name: str,
    seed: int,
    wanted: Sequence[tuple[int | None, int, Path]],
    log: Log,
) -> None:
    """Train IPPO team `name` and save each (checkpoint update or None for the final one, seat)
    agent of `wanted` to its path, its provenance on its card."""
    from aht_bench.algorithms import ippo
    from aht_bench.policies.io import save_policy

    log(f"training IPPO team {name} (seed {seed}, {cfg.total_timesteps:,} env steps)")
    start = time.perf_counter()
    tick, close = _progress(cfg.num_updates, name)
    try:
        result = ippo.train(jax.random.PRNGKey(seed), cfg, 1, on_update=tick)
    finally:
        close()
    seconds = round(time.perf_counter() - start, 1)
    curve = np.asarray(result.metrics["episode_return"][0], np.float64)
    tail = curve[-max(1, len(curve) // 10) :]
    final = float(np.nanmean(tail)) if np.any(np.isfinite(tail)) else None
    log(f"  done in {seconds:.0f}s; self-play return at the end {final}")
    net = ippo.network(cfg)
    for update, seat, path in wanted:
        tree = ippo.learner_params(result.state) if update is None else result.checkpoints[update]
        prov = {
            "algorithm": "ippo (aht_bench.algorithms.ippo)",
            "preset": source.preset,
            "total_timesteps": cfg.total_timesteps,
            "seed": seed,
            "key": f"jax.random.PRNGKey({seed})",
            "seat": seat,
            "update": update if update is not None else cfg.num_updates,
            "train_seconds": seconds,
            "final_self_play_return": final,
            "onion_on_counter_reward": source.onion_on_counter_reward,
        }
        prov.update(_shaping_provenance(rec))
        prov.update(dict(source.shaping))
        save_policy(
            path, net, _seat_agent(tree, seat), {"task_id": rec.task_id, "provenance": prov}
        )


def _team_candidate(
    env: Any, kind: str, name: str, stem: str, update: int | None, seats: tuple, work: Path
) -> Candidate:
    """The saved IPPO team `name` (its checkpoint `update`, or its final agents) as a candidate."""
    from aht_bench.policies.io import read_card

    suffix = "" if update is None else f"_c{update}"
    tag = stem if update is None else f"{stem}-c{update}"
    files: list[tuple[int | None, Path]] = [
        (s if _pairs(env) else None, work / f"{tag}-seat{s}.safetensors") for s in seats
    ]
    loaded = [_cached_policy(p) for _, p in files]
    assert all(x is not None for x in loaded)
    card = read_card(files[0][1])
    kind = kind if update is None else "ippo-checkpoint"
    return _make_candidate(env, f"{name}{suffix}", kind, loaded, files, card["provenance"])


def _make_candidate(
    env: Any,
    name: str,
    kind: str,
    loaded: list[Any],
    files: list[tuple[int | None, Path]],
    source: dict[str, Any],
) -> Candidate:
    if len(loaded) == 1:
        policy, params = loaded[0]
    else:
        policy = SeatPair.for_env(env, (loaded[0][0], loaded[1][0]))
        params = (loaded[0][1], loaded[1][1])
    return Candidate(name, kind, policy, params, files, source)


def _brdiv_candidates(
    rec: Recipe, env: Any, work: Path, log: Log, only: int | None = None
) -> list[Candidate]:
    """The recipe's BRDiv confederates (runs trained or read from `work`) as candidates; `only`
    trains (or finds) that one run into `work` and returns no candidates (`train_unit`)."""
    from aht_bench.algorithms import brdiv
    from aht_bench.training import presets
    from aht_bench.training.config import IPPOConfig

    source = rec.brdiv
    if source is None:
        return []
    out: list[Candidate] = []
    for run in range(source.runs):
        if only is not None and run != only:
            continue
        seed = rec.seed_base + BRDIV_SEED + run
        n = source.population_size
        steps = n * n * source.num_envs * source.rollout_length * source.generation_updates
        extra: dict[str, Any] = {}
        if source.ppo == "ippo-paper":
            ippo_paper = presets.get("ippo", "paper", rec.task_id)
            assert isinstance(ippo_paper, IPPOConfig)
            extra["generation_ppo"] = ippo_paper.ppo
        elif source.ppo != "quick":
            raise ValueError(f"BRDivSource.ppo={source.ppo!r}: use 'quick' or 'ippo-paper'")
        config = brdiv.preset(
            "quick",
            rec.task_id,
            population_size=n,
            num_envs=source.num_envs,
            rollout_length=source.rollout_length,
            generation_timesteps=steps,
            shaping=rec.shaping,
            **extra,
        )
        conf_seat = 1 - config.ego_seat
        # the quick settings' files keep the names they had before these fields existed
        custom = (source.num_envs, source.rollout_length, source.ppo) != (32, 128, "quick")
        stem = (
            f"brdiv{run + 1}-s{seed}-n{n}-u{source.generation_updates}"
            + (f"-e{source.num_envs}x{source.rollout_length}-{source.ppo}" if custom else "")
            + _shaping_tag(rec.shaping)
        )
        paths = {
            (j, role): work / f"{stem}-{role}{j}.safetensors"
            for j in range(n)
            for role in ("conf", "br")
        }
        if not all(p.is_file() for p in paths.values()):
            _train_brdiv_run(rec, config, run, seed, stem, custom, paths, log)
        if only is not None:
            continue
        out += [
            _confederate(env, f"brdiv-conf{run + 1}_{j}", j, conf_seat, paths) for j in range(n)
        ]
    return out


def _train_brdiv_run(
    rec: Recipe,
    config: Any,
    run: int,
    seed: int,
    stem: str,
    custom: bool,
    paths: dict[tuple[int, str], Path],
    log: Log,
) -> None:
    """Train BRDiv run `run` (its generation stage) and save every pair's confederate and best
    response to `paths[(pair, "conf" | "br")]`, their provenance on the cards."""
    from tqdm import tqdm

    from aht_bench.algorithms import brdiv
    from aht_bench.policies.io import save_policy

    source = rec.brdiv
    assert source is not None
    n = source.population_size
    conf_seat = 1 - config.ego_seat
    log(
        f"training BRDiv run {run + 1} (seed {seed}, {n} pairs, "
        f"{config.generation_timesteps:,} env steps)"
    )
    start = time.perf_counter()
    setup = brdiv.setup(config)  # env, networks and optimiser built once for the run
    state = brdiv.init_seeds(jax.random.PRNGKey(seed), setup, 1)
    metrics: dict[str, Any] = {}
    for _ in tqdm(range(config.generation_iterations), desc=stem, leave=False):
        state, metrics = brdiv.iterate(state, setup)
    seconds = round(time.perf_counter() - start, 1)
    sp = float(np.asarray(metrics.get("sp_return", [np.nan]))[0])
    xp = float(np.asarray(metrics.get("xp_return", [np.nan]))[0])
    log(f"  done in {seconds:.0f}s; SP return {sp:.3g}, XP return {xp:.3g}")
    confs = brdiv.population(state, setup, 0)
    brs = brdiv.best_responses(state, setup, 0)
    networks = setup.networks
    for j in range(n):
        for role, pop in (("conf", confs), ("br", brs)):
            prov = {
                "algorithm": "brdiv (aht_bench.algorithms.brdiv), generation stage",
                "preset": "quick",
                "population_size": n,
                "generation_timesteps": config.generation_timesteps,
                "xp_coef": config.xp_coef,
                "seed": seed,
                "key": f"jax.random.PRNGKey({seed})",
                "role": "confederate" if role == "conf" else "best response",
                "pair": j,
                "seat": conf_seat if role == "conf" else config.ego_seat,
                "train_seconds": seconds,
                "final_sp_return": sp,
                "final_xp_return": xp,
            }
            if custom:  # absent from the sets published before these fields
                prov["generation_ppo"] = source.ppo
                prov["rollout"] = f"{source.num_envs} envs x {source.rollout_length}"
            prov.update(_shaping_provenance(rec))
            params = jax.tree.map(lambda x, j=j: np.asarray(x[j]), pop.params)
            network = networks.confederate if role == "conf" else networks.best_response
            save_policy(
                paths[(j, role)], network, params, {"task_id": rec.task_id, "provenance": prov}
            )


def _confederate(
    env: Any, name: str, j: int, conf_seat: int, paths: dict[tuple[int, str], Path]
) -> Candidate:
    """Pair `j`'s saved confederate as a candidate; on a divided layout with its best response
    as the agent of the other side."""
    from aht_bench.policies.io import read_card

    conf = _cached_policy(paths[(j, "conf")])
    assert conf is not None
    prov = read_card(paths[(j, "conf")])["provenance"]
    if _pairs(env):
        br = _cached_policy(paths[(j, "br")])
        assert br is not None
        by_seat = {
            conf_seat: (conf, paths[(j, "conf")]),
            1 - conf_seat: (br, paths[(j, "br")]),
        }
        loaded = [by_seat[0][0], by_seat[1][0]]
        files: list[tuple[int | None, Path]] = [(0, by_seat[0][1]), (1, by_seat[1][1])]
    else:
        loaded, files = [conf], [(None, paths[(j, "conf")])]  # type: ignore[list-item]
    return _make_candidate(env, name, "brdiv", loaded, files, prov)


def _heuristic_candidates(rec: Recipe) -> list[Candidate]:
    from aht_bench.policies.heuristics import make_heuristic

    return [
        Candidate(n, "heuristic", make_heuristic(rec.task, n), None, [], {"heuristic": n})
        for n in rec.heuristics
    ]


# ------------------------------------------------------------------------------ best responses


def _partner_digest(cand: Candidate) -> str:
    """sha256 of a candidate's weight files (of its name for a heuristic): what a cached best
    response was trained against."""
    digest = hashlib.sha256(cand.name.encode())
    for _, path in sorted(cand.files, key=lambda f: str(f[1])):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _cached_br(path: Path, cand: Candidate, partner: str, log: Log) -> tuple[Any, Any] | None:
    """The cached best response at `path` if it was trained against this very candidate: its
    card's `partner_sha256` is the candidate's (files cached before that field existed: the
    best response is newer than the candidate's weight files). A best response to an older
    candidate of the same name (a changed recipe) is retrained."""
    from aht_bench.policies.io import read_card

    cached = _cached_policy(path)
    if cached is None:
        return None
    recorded = read_card(path)["provenance"].get("partner_sha256")
    if recorded is None:
        newer = all(path.stat().st_mtime > f.stat().st_mtime for _, f in cand.files)
        if newer:
            return cached
    elif recorded == partner:
        return cached
    log(f"  the cached best response {path.name} was trained against another {cand.name}")
    return None


def _br_file(rec: Recipe, c: int, name: str, seat: int, work: Path) -> tuple[int, Path]:
    """Seed and cache file of the best response to candidate number `c` (`name`) in `seat`."""
    seed = rec.seed_base + BR_SEED + 10 * c + seat
    tag = ("" if rec.br_preset == "quick" else f"-{rec.br_preset}") + _shaping_tag(rec.shaping)
    if rec.br_plateau is not None:
        plateau = rec.br_plateau
        budget = f"c{rec.br_timesteps}-max{plateau.max_timesteps}-tol{plateau.tolerance:g}"
        if plateau.min_chunks != 2:
            budget += f"-min{plateau.min_chunks}"
    else:
        budget = f"t{rec.br_timesteps}"
    return seed, work / f"br-{name}-seat{seat}-s{seed}-{budget}{tag}.safetensors"


def _best_responses(
    rec: Recipe,
    env: Any,
    candidates: list[Candidate],
    work: Path,
    log: Log,
    only: int | None = None,
) -> list[tuple[Any, Any, list[dict[str, Any]]]]:
    """Per candidate: (partner policy, params, one provenance dict per seat with its file);
    `only`: that candidate's best responses alone (`train_unit`)."""
    from aht_bench.algorithms import br
    from aht_bench.policies.io import read_card, save_policy
    from aht_bench.training import presets
    from aht_bench.training.config import BRConfig

    out = []
    for c, cand in enumerate(candidates):
        if only is not None and c != only:
            continue
        trained = []
        for seat in rec.br_seats:
            seed, path = _br_file(rec, c, cand.name, seat, work)
            partner = _partner_digest(cand)
            cached = _cached_br(path, cand, partner, log)
            if cached is None and rec.br_plateau is not None:
                _train_br_until_plateau(rec, cand, seat, seed, partner, path, log)
                cached = _cached_policy(path)
                assert cached is not None
            if cached is None:
                config = presets.get(
                    "br",
                    rec.br_preset,
                    rec.task_id,
                    total_timesteps=rec.br_timesteps,
                    learner_seat=seat,
                    shaping=rec.shaping,
                )
                assert isinstance(config, BRConfig)
                log(
                    f"training a best response to {cand.name} in seat {seat} "
                    f"({rec.br_timesteps:,} steps, seed {seed})"
                )
                start = time.perf_counter()
                # one name for every teammate: same-architecture members share a compile
                mates = TeammateSet(["partner"], [(cand.policy, cand.params)])
                tick, close = _progress(config.num_updates, f"br {cand.name} seat {seat}")
                try:
                    result = br.train(jax.random.PRNGKey(seed), config, mates, on_update=tick)
                finally:
                    close()
                params = jax.tree.map(lambda x: np.asarray(x[0]), br.learner_params(result.state))
                curve = np.asarray(result.metrics["episode_return"][0], np.float64)
                tail = curve[-max(1, len(curve) // 10) :]
                prov = {
                    "algorithm": "br (aht_bench.algorithms.br, PPO)",
                    "preset": rec.br_preset,
                    "total_timesteps": rec.br_timesteps,
                    "learner_seat": seat,
                    "seed": seed,
                    "key": f"jax.random.PRNGKey({seed})",
                    "best_response_to": cand.name,
                    "partner_sha256": partner,
                    "train_seconds": round(time.perf_counter() - start, 1),
                    "final_train_return": float(np.nanmean(tail))
                    if np.any(np.isfinite(tail))
                    else None,
                }
                prov.update(_shaping_provenance(rec))
                save_policy(
                    path, br.network(config), params, {"task_id": rec.task_id, "provenance": prov}
                )
                log(
                    f"  done in {prov['train_seconds']:.0f}s; "
                    f"return at the end {prov['final_train_return']}"
                )
                cached = _cached_policy(path)
                assert cached is not None
            prov = dict(read_card(path)["provenance"])
            prov["cache_file"] = str(path)
            trained.append((cached, prov))
        if len(trained) == 1:
            (policy, params), _ = trained[0]
        else:
            policy = SeatPair.for_env(env, (trained[0][0][0], trained[1][0][0]))
            params = (trained[0][0][1], trained[1][0][1])
        out.append((policy, params, [p for _, p in trained]))
    return out


def plateaued(curve: list[float], tolerance: float, min_chunks: int = 2) -> bool:
    """Whether a learning curve has stopped rising (Bounds v2's stop rule).

    `curve[k]`: the mean training return over chunk k. Flat once at least `max(2, min_chunks)`
    chunks are done and the last chunk's mean rose by less than `tolerance` times the one
    before: `curve[-1] - curve[-2] < tolerance * |curve[-2]|`. A curve still at 0 (or with a
    chunk in which no episode ended, NaN) is not flat: training goes on to the budget."""
    if len(curve) < max(2, min_chunks):
        return False
    last, before = float(curve[-1]), float(curve[-2])
    if not (np.isfinite(last) and np.isfinite(before)):
        return False
    return last - before < tolerance * abs(before)


def _chunk_mean(returns: np.ndarray) -> float:
    return float(np.nanmean(returns)) if np.any(np.isfinite(returns)) else float("nan")


def _train_br_until_plateau(
    rec: Recipe, cand: Candidate, seat: int, seed: int, partner: str, path: Path, log: Log
) -> None:
    """Train the best response to `cand` in `seat` in chunks of `rec.br_timesteps` env steps
    until `plateaued` or `rec.br_plateau.max_timesteps`, and save it to `path` with its learning
    curve. One run: the train state carries over between chunks (the learning rate anneals over
    the maximum budget) and is saved after every chunk next to `path`, so a killed build resumes
    from the last finished chunk, bit for bit."""
    from aht_bench.algorithms import br
    from aht_bench.algorithms.fixed_partner import as_pool
    from aht_bench.policies.io import save_policy
    from aht_bench.training import checkpoint, driver, presets
    from aht_bench.training.config import BRConfig

    plateau = rec.br_plateau
    assert plateau is not None
    probe = presets.get("br", rec.br_preset, rec.task_id, learner_seat=seat, shaping=rec.shaping)
    assert isinstance(probe, BRConfig)
    chunk_updates = max(1, rec.br_timesteps // probe.batch_size)
    max_chunks = max(1, plateau.max_timesteps // rec.br_timesteps)
    config = presets.get(
        "br",
        rec.br_preset,
        rec.task_id,
        total_timesteps=max_chunks * chunk_updates * probe.batch_size,
        learner_seat=seat,
        shaping=rec.shaping,
    )
    assert isinstance(config, BRConfig) and config.num_updates == max_chunks * chunk_updates
    mates = TeammateSet(["partner"], [(cand.policy, cand.params)])
    state = driver.init_seeds(jax.random.split(jax.random.PRNGKey(seed), 1), br.init, config,
                              as_pool(mates))  # fmt: skip
    state_path = Path(str(path).removesuffix(".safetensors") + ".state.safetensors")
    state, curve, seconds = _resume_chunks(state_path, state, partner, cand.name, log)
    while len(curve) < max_chunks and not plateaued(curve, plateau.tolerance, plateau.min_chunks):
        k = len(curve) + 1
        log(
            f"training a best response to {cand.name} in seat {seat}: chunk {k} of at most "
            f"{max_chunks} ({chunk_updates * config.batch_size:,} env steps, seed {seed})"
        )
        start = time.perf_counter()
        tick, close = _progress(chunk_updates, f"br {cand.name} seat {seat} chunk {k}")
        offset = (k - 1) * chunk_updates  # the driver counts the run's updates, not the chunk's
        try:
            result = driver.run(
                state,
                br.update,
                config,
                br.learner_params,
                chunk_updates,
                on_update=lambda done, m, tick=tick, offset=offset: tick(done - offset, m),
            )
        finally:
            close()
        seconds += time.perf_counter() - start
        state = result.state
        curve.append(_chunk_mean(np.asarray(result.metrics["episode_return"][0], np.float64)))
        log(f"  chunk {k}: mean return {curve[-1]:.4g}")
        checkpoint.save_state(
            state_path,
            state,
            {"curve": curve, "partner_sha256": partner, "train_seconds": round(seconds, 1)},
        )
    flat = plateaued(curve, plateau.tolerance, plateau.min_chunks)
    params = jax.tree.map(lambda x: np.asarray(x[0]), br.learner_params(state))
    prov = {
        "algorithm": "br (aht_bench.algorithms.br, PPO), trained until its return stopped rising",
        "preset": rec.br_preset,
        "total_timesteps": len(curve) * chunk_updates * config.batch_size,
        "learner_seat": seat,
        "seed": seed,
        "key": f"jax.random.PRNGKey({seed})",
        "best_response_to": cand.name,
        "partner_sha256": partner,
        "train_seconds": round(seconds, 1),
    } | _curve_provenance(
        curve,
        chunk_updates * config.batch_size,
        config.num_updates * config.batch_size,
        plateau.tolerance,
        flat,
    )
    prov.update(_shaping_provenance(rec))
    save_policy(path, br.network(config), params, {"task_id": rec.task_id, "provenance": prov})
    log(
        f"  best response to {cand.name} seat {seat}: {len(curve)} chunks, {prov['stopped']}; "
        f"curve {[round(c, 4) for c in curve]}"
    )
    state_path.unlink(missing_ok=True)
    checkpoint.card_path(state_path).unlink(missing_ok=True)


def _resume_chunks(
    state_path: Path, state: Any, partner: str, name: str, log: Log
) -> tuple[Any, list[float], float]:
    """(train state, learning curve, seconds) saved after the last finished chunk of a best
    response to the partner whose sha256 is `partner`; the fresh `state`, [] and 0 if none."""
    from aht_bench.training import checkpoint

    if not state_path.is_file():
        return state, [], 0.0
    try:
        loaded, meta = checkpoint.load_state(state_path, state)
    except checkpoint.CheckpointError as e:
        log(f"  ignoring the unreadable chunk state {state_path.name}: {e}")
        return state, [], 0.0
    if meta.get("partner_sha256") != partner:
        return state, [], 0.0
    curve = list(meta["curve"])
    log(f"  resuming the best response to {name} after chunk {len(curve)}")
    return loaded, curve, float(meta["train_seconds"])


def _curve_provenance(
    curve: list[float], chunk_timesteps: int, max_timesteps: int, tolerance: float, flat: bool
) -> dict[str, Any]:
    """A plateau-trained best response's card fields about its learning curve."""
    return {
        "final_train_return": curve[-1] if curve and np.isfinite(curve[-1]) else None,
        "chunk_timesteps": chunk_timesteps,
        "max_timesteps": max_timesteps,
        "plateau_tolerance": tolerance,
        "learning_curve": [round(c, 6) if np.isfinite(c) else None for c in curve],
        "learning_curve_note": "mean training return (base, the learner's stochastic policy) "
        "per chunk",
        "flat_at_end": flat,
        "stopped": "plateau" if flat else "maximum budget",
    }


# ------------------------------------------------------------------------------------- bounds


def upper_bound(sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The upper bound of one member from its candidate values (Bounds v2): the highest `value`
    of `sources` (each `{"set_by", "kind", "value"}`; NaN values ignored), with the `set_by` of
    the first source that reaches it (list the measured ones before the task maximum)."""
    finite = [x for x in sources if np.isfinite(x["value"])]
    if not finite:
        raise HeldoutBuildError("no finite candidate value for an upper bound")
    best = max(x["value"] for x in finite)
    first = next(x for x in finite if x["value"] == best)
    return {"upper": float(best), "upper_set_by": first["set_by"], "kind": first["kind"]}


def _example_agent_returns(
    rec: Recipe, cols: TeammateSet, seatings: tuple[tuple[int, ...], ...], log: Log
) -> tuple[list[tuple[str, np.ndarray]], list[dict[str, Any]]]:
    """Each applicable example agent's returns with every candidate, (candidates, seatings,
    episodes) over `rec.episodes` episodes, seed `rec.eval_seed` (what `aht-bench evaluate`
    plays), played by the evaluator itself (jitted for a JAX policy, step by step otherwise);
    and one record per agent file (its sha256, runner, or why it was skipped)."""
    from aht_bench.evaluation.evaluate import evaluate_agent_file, file_sha256
    from aht_bench.evaluation.record import returns_of
    from aht_bench.evaluation.sets import EvaluationSet
    from aht_bench.policies.agent_file import AgentLoadError

    repo = sets.heldout_root().parent
    in_memory = EvaluationSet(
        set_id=f"{rec.task_id}/{rec.version}-build",
        task=rec.task,
        teammates=cols,
        lower=np.zeros(cols.size),
        upper=np.ones(cols.size),
        seatings=seatings,
    )
    rows: list[tuple[str, np.ndarray]] = []
    info: list[dict[str, Any]] = []
    for rel in rec.example_agents:
        path = repo / rel
        if not path.is_file():
            raise HeldoutBuildError(
                f"example agent {rel} is missing from {repo}: build from a checkout of the "
                "repository (the recipe plays agents/examples/ to set the bounds)"
            )
        try:
            record = evaluate_agent_file(
                path, in_memory, num_episodes=rec.episodes, seed=rec.eval_seed, reps=100
            )
        except AgentLoadError as e:
            if "(its TASKS)" not in str(e):
                raise HeldoutBuildError(f"example agent {rel} failed to load: {e}") from None
            log(f"example agent {rel}: not for {rec.task_id} (its TASKS), skipped")
            info.append({"file": rel, "sha256": file_sha256(path), "skipped": str(e)})
            continue
        returns = returns_of(record["payload"])[0]  # (candidates, seatings, episodes)
        agent = record["payload"]["agent"]
        best = returns.mean(axis=(1, 2)).max()
        log(f"example agent {rel} ({agent.get('runner')}): best mean return {best:.4g}")
        rows.append((rel, returns))
        info.append(
            {"file": rel, "sha256": file_sha256(path), "runner": agent.get("runner"),
             "kind": agent.get("kind")}
        )  # fmt: skip
    return rows, info


def _example_upper_returns(returns: np.ndarray, seed: int) -> np.ndarray:
    """The upper end of the per-member 95% CI of an example agent's mean return with each
    member of a set, (members,) from its returns (members, seatings, episodes) with exactly
    those members: the evaluator's stratified bootstrap (same resamples, `seed` its episode
    seed), on raw returns. With lower bounds 0, a member whose upper bound is at least this
    value gives the agent a normalised upper CI of at most 1 (`_fit_example_bounds` settles
    the last rounding)."""
    from aht_bench.evaluation import scores

    est = scores.interval_estimates(scores.score_matrix(returns), seed=seed)
    return np.array([m["ci"][1] for m in est["members"]], np.float64)


def _fit_example_bounds(
    upper: np.ndarray, examples: list[np.ndarray], seed: int, max_steps: int = 64
) -> np.ndarray:
    """`upper` (members,), each raised by the fewest float steps (`np.nextafter`) after which
    every example agent's normalised per-member upper CI, as the evaluator computes it with
    lower bounds 0, is at most 1. The bounds set from `_example_upper_returns` are already
    there up to the rounding of (R / upper) against R, a few units in the last place."""
    from aht_bench.evaluation import scores

    upper = np.asarray(upper, np.float64).copy()
    for _ in range(max_steps):
        high = np.zeros_like(upper)
        for returns in examples:
            normalized = scores.normalize(returns, np.zeros_like(upper), upper)
            est = scores.interval_estimates(scores.score_matrix(normalized), seed=seed)
            high = np.maximum(high, [m["ci"][1] for m in est["members"]])
        over = high > 1.0
        if not over.any():
            return upper
        upper[over] = np.nextafter(upper[over], np.inf)
    raise HeldoutBuildError(
        f"an example agent's upper CI stays above 1 after {max_steps} float steps of its bound"
    )


def _settle_example_rounding(
    members: list[dict[str, Any]], examples: list[np.ndarray], seed: int, log: Log
) -> None:
    """Raise, in place, any member's upper bound that leaves an example agent's normalised
    upper CI a rounding step above 1 (`_fit_example_bounds`), recording the raise."""
    upper = np.array([m["bounds"]["upper"] for m in members], np.float64)
    fitted = _fit_example_bounds(upper, examples, seed)
    for m, before, after in zip(members, upper, fitted, strict=True):
        if after != before:
            b = m["bounds"]
            b["upper"] = float(after)
            b["raised_by"] = float(after) - b["best_response_return"]
            b["rounding_raise"] = float(after - before)
            log(f"{m['name']}: upper bound raised by {after - before:.3g} (rounding)")


# ----------------------------------------------------------------------------------- selection


def select(
    xp: np.ndarray, names: list[str], min_competence: float, min_gap: float
) -> tuple[list[int], list[dict[str, Any]]]:
    """Indices of the kept candidates and the pruned ones' records.

    `xp[i, j]`: mean return of candidate i's best response with candidate j (diagonal: each with
    its own). Competence first (diag > 0 and >= `min_competence` * max diag), then diversity:
    while some kept j has `diag_j - offdiag_j < min_gap * diag_j` (offdiag over the other kept
    candidates' best responses), drop the one with the smallest gap ratio.
    """
    diag = np.diag(xp).astype(np.float64)
    best = float(diag.max()) if diag.size else 0.0
    kept: list[int] = []
    pruned: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        if diag[j] <= 0 or diag[j] < min_competence * best:
            pruned.append(
                {
                    "name": name,
                    "reason": "not competent",
                    "best_response_return": float(diag[j]),
                    "threshold": float(max(min_competence * best, 0.0)),
                }
            )
        else:
            kept.append(j)
    while len(kept) > 1:
        gaps = []
        for j in kept:
            others = [i for i in kept if i != j]
            off = float(xp[others, j].mean())
            gaps.append(((diag[j] - off) / diag[j], j, off))
        worst = min(gaps)
        if worst[0] >= min_gap:
            break
        ratio, j, off = worst
        kept.remove(j)
        pruned.append(
            {
                "name": names[j],
                "reason": "adds no diversity",
                "best_response_return": float(diag[j]),
                "other_best_responses_return": off,
                "gap_fraction": ratio,
                "threshold": min_gap,
            }
        )
    return kept, pruned


# ------------------------------------------------------------------------------------- units


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


# ------------------------------------------------------------------------------------- build


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
        status = (
            f"PUBLISHED heldout set {version}: immutable (a change that would change scores is "
            "a new version)"
        )
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
