"""Step 1, the candidates: IPPO self-play teams, BRDiv confederates and heuristics of a recipe,
trained (or read from the work folder's cache) and wrapped as `Candidate`s.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from aht_bench.heldout import recipes
from aht_bench.heldout.build.core import Candidate, Log, _progress, _seat_agent
from aht_bench.heldout.recipes import BRDIV_SEED, IPPO_SEED, Recipe
from aht_bench.policies.seated import SeatPair


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
        result = ippo.train(jax.random.PRNGKey(seed), cfg, 1, on_iteration=tick)
    finally:
        close()
    seconds = round(time.perf_counter() - start, 1)
    curve = np.asarray(result.metrics["episode_return"][0], np.float64)
    tail = curve[-max(1, len(curve) // 10) :]
    final = float(np.nanmean(tail)) if np.any(np.isfinite(tail)) else None
    log(f"  done in {seconds:.0f}s; self-play return at the end {final}")
    net = ippo.network(cfg)
    for update, seat, path in wanted:
        tree = ippo.learner_params(result.state) if update is None else result.kept[update]
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
