"""Building a human-proxy set: clone the proxy and the BC partner, bound them, write the set
folder.

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from aht_bench.heldout.human.bc import BCConfig, _transitions, evaluate_bc, train_bc
from aht_bench.heldout.human.data import load_split
from aht_bench.heldout.human.fetching import fetch, sha256_file
from aht_bench.heldout.human.replay import Replay, replay
from aht_bench.heldout.human.versions import (
    DATA_LAYOUTS,
    OVERCOOKED_AI_VERSION,
    PICKLES,
    SDIST_FILENAME,
    SDIST_SHA256,
    SPLITS,
    VERSIONS,
    HumanDataError,
    Log,
    ProxyVersion,
)

if TYPE_CHECKING:
    from aht_bench.envs import Task


def resolve_task(task: str | Task, version: str | None = None) -> tuple[Task, ProxyVersion]:
    """(the `Task` of `task`, an id, alias or `Task`, and its `ProxyVersion`), or a ValueError
    naming the fix. `version` None: the newest version built on the task's version (v1 task:
    human-proxy-v1, v2 task: human-proxy-v3)."""
    from aht_bench import envs

    task = envs.task(task)
    task_id = task.id
    if task_id not in DATA_LAYOUTS:
        have = ", ".join(t for v in VERSIONS.values() for t in v.tasks)
        raise ValueError(f"no human gameplay data for {task_id}; human proxies exist for {have}")
    if version is None:  # the newest version built on the task's version
        *_, proxy = (v for v in VERSIONS.values() if task_id in v.tasks)
        return task, proxy
    if version not in VERSIONS:
        raise ValueError(
            f"unknown human-proxy version {version!r}; choose one of {', '.join(VERSIONS)}"
        )
    proxy = VERSIONS[version]
    if task_id not in proxy.tasks:
        layout = task_id.removeprefix("overcooked-").rsplit("-", 1)[0]
        raise ValueError(
            f"{version} is built on the v{proxy.task_version} tasks, not on {task_id}: build it "
            f"for {proxy.task_id(layout)}"
        )
    return task, proxy


BOUNDS_V2 = (
    "Bounds v2 (issue 27; docs/heldout.md, docs/human_proxies.md): lower 0; upper the highest "
    "mean return measured with the proxy during the build: its self-play, the BC partner, the "
    "layout's paper heuristics and the example agents of agents/examples/ that list the task "
    "(played by the evaluator, aht_bench.evaluation.evaluate.evaluate_agent_file), each in "
    "every seating, with the build's episodes and seed; Overcooked has no task maximum. No "
    "best response to the proxy is trained (see docs/human_proxies.md). human-proxy-v1 used "
    "the proxy's self-play return alone. members[0].bounds.upper_candidates lists every source"
)


def upper_bound_sources(
    task: str | Task,
    proxy_set: Any,
    seatings: tuple[tuple[int, ...], ...],
    self_play: float,
    with_partner: float,
    cfg: BCConfig,
    log: Log,
    proxy: ProxyVersion,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[np.ndarray]]:
    """The candidate upper bounds of the proxy (Bounds v2, `build.upper_bound` takes them):
    `{"set_by", "kind", "value"}` per partner, the mean return of that partner with the proxy
    over every seating, `cfg.episodes` episodes each, seed `cfg.eval_seed`. In order: the
    proxy's self-play and with the BC partner (measured by the caller), each paper heuristic
    of the layout (jitted, `cross_play`) and each example agent file whose TASKS lists the task
    (`build._example_agent_returns`: the evaluator itself). With `proxy.example_upper_ci`
    (human-proxy-v3) an example agent is played with `aht-bench evaluate`'s default protocol
    (`DEFAULT_EPISODES` per seating, seed `cfg.eval_seed`) and its candidate is the upper end
    of its 95% CI (`build._example_upper_returns`), with its `mean` beside it. Also returns
    one record per example agent file (sha256 and runner, or why it was skipped) and each
    played example agent's returns with the proxy, (1, seatings, episodes)."""
    from aht_bench import envs
    from aht_bench.evaluation.evaluate import DEFAULT_EPISODES, cross_play
    from aht_bench.heldout import recipes
    from aht_bench.heldout.build.bounds import _example_agent_returns, _example_upper_returns
    from aht_bench.policies.heuristics import PAPER_HEURISTICS, make_heuristic
    from aht_bench.policies.teammate_set import TeammateSet

    task = envs.task(task)
    sources = [
        {"set_by": "human_proxy self-play", "kind": "self-play", "value": self_play},
        {"set_by": "bc_partner", "kind": "bc-partner", "value": with_partner},
    ]
    names = list(PAPER_HEURISTICS[task.id])
    heuristics = TeammateSet(names, [(make_heuristic(task, n), None) for n in names])
    # rows: the heuristics; (heuristics, 1, seatings, episodes)
    returns = cross_play(task, heuristics, proxy_set, seatings, cfg.episodes, cfg.eval_seed)
    for name, value in zip(names, returns[:, 0].mean(axis=(1, 2)), strict=True):
        sources.append({"set_by": name, "kind": "heuristic", "value": float(value)})
        log(f"  {name} with human_proxy: {value:.2f}")
    # the example agents, played by the evaluator: human-proxy-v2 with this build's episodes
    # and a mean, from v3 on with `aht-bench evaluate`'s protocol and the upper end of the CI
    upper_ci = proxy.example_upper_ci
    episodes = DEFAULT_EPISODES if upper_ci else cfg.episodes
    rec = recipes.Recipe(
        task_id=task.id,
        version=proxy.name,
        ippo=(),
        brdiv=None,
        heuristics=(),
        example_agents=recipes.EXAMPLE_AGENTS,
        episodes=episodes,
        eval_seed=cfg.eval_seed,
    )
    examples, example_info = _example_agent_returns(rec, proxy_set, seatings, log)
    for rel, returns in examples:
        source = {"set_by": rel, "kind": "example_agent", "value": float(returns[0].mean())}
        if upper_ci:
            mean = source["value"]
            source["value"] = float(_example_upper_returns(returns, cfg.eval_seed)[0])
            source |= {"mean": mean, "value_is": "upper end of the 95% CI (evaluator)"}
            log(f"  {rel} with human_proxy: mean {mean:.2f}, upper CI {source['value']:.2f}")
        sources.append(source)
    protocol = {"episodes_per_seating": episodes, "seed": cfg.eval_seed}
    return sources, [info | protocol for info in example_info], [r for _, r in examples]


def _replay_splits(
    env: Any, data_layout: str, proxy: ProxyVersion, cache: Path, log: Log
) -> tuple[dict[str, Replay], dict[str, dict[str, Any]]]:
    """Every split's trials of `data_layout` replayed through `env`: (replay per split, the
    manifest's numbers per split)."""
    replays: dict[str, Replay] = {}
    splits: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        data = load_split(split, cache)
        trials = data.trials_of(data_layout)
        t0 = time.perf_counter()
        rep = replay(env, data, trials, seats_by_side=proxy.seats_by_side)
        replays[split] = rep
        splits[split] = {
            "trials": len(trials),
            "workers": [int(data.worker[i]) for i in trials],
            "joint_steps": len(rep.actions),
            "transitions": 2 * len(rep.actions),
            "replay_match_rate": rep.match_rate,
            "replay_full_match_rate": rep.full_match_rate,
        }
        log(
            f"{env.task_id} {split}: {len(trials)} trials, {len(rep.actions)} joint steps; "
            f"replay match {rep.match_rate:.4%} (full {rep.full_match_rate:.4%}) "
            f"[{time.perf_counter() - t0:.0f}s]"
        )
    return replays, splits


def _clone(
    name: str,
    split: str,
    other: str,
    net_seed: int,
    network: Any,
    replays: dict[str, Replay],
    splits: dict[str, dict[str, Any]],
    cfg: BCConfig,
    log: Log,
) -> tuple[Any, dict[str, Any]]:
    """(params, record) of the BC model `name` trained on `split` (a validation share of its
    trials held out for early stopping), scored on the `other` split."""
    rep = replays[split]
    trials = np.unique(rep.trial)  # the data's trial indices, ascending
    # who played each trial, in the same order: the Carroll data's workers, or the file of
    # each recorded play episode (aht_bench.heldout.played)
    label = "workers" if "workers" in splits[split] else "episodes"
    players = np.asarray(splits[split][label])
    rng = np.random.default_rng(net_seed)
    n_val = max(1, int(round(cfg.validation_fraction * len(trials))))
    if n_val >= len(trials):
        raise HumanDataError(f"{split} split has too few trials to hold one out")
    val_trials = np.sort(rng.choice(trials, n_val, replace=False))
    is_val = np.isin(rep.trial, val_trials)
    seats = rep.actions.shape[1]  # the seats whose actions are cloned (2 here, 1 for play)
    log(
        f"{name}: BC on the {split} split, {len(trials) - n_val} trials "
        f"({seats * int((~is_val).sum())} transitions), {n_val} held out for early stopping"
    )
    t0 = time.perf_counter()
    params, record = train_bc(
        jax.random.PRNGKey(net_seed),
        network,
        *_transitions(rep, ~is_val),
        *_transitions(rep, is_val),
        cfg,
        log,
    )
    everything = np.ones(len(replays[other].trial), bool)
    held_out = evaluate_bc(network, params, *_transitions(replays[other], everything))
    validation = evaluate_bc(network, params, *_transitions(rep, is_val))
    record |= {
        "trained_on": f"{split} split",
        "seed": net_seed,
        "validation_trials": [int(t) for t in val_trials],
        f"validation_{label}": players[np.searchsorted(trials, val_trials)].tolist(),
        "train_seconds": round(time.perf_counter() - t0, 1),
        "held_out": {"split": other} | held_out,
        "validation": validation,
    }
    log(
        f"  held-out ({other} split) action accuracy {held_out['action_accuracy']:.4f} "
        f"(majority action {held_out['majority_action_accuracy']:.4f})"
    )
    return params, record


def _summary(returns: np.ndarray) -> dict[str, Any]:
    """Mean, per-seating mean and std of (seatings, episodes) returns."""
    return {
        "return": float(returns.mean()),
        "return_per_seating": [float(r.mean()) for r in returns],
        "return_std": float(returns.std()),
    }


def _play_models(
    task: Task,
    network: Any,
    trained: dict[str, tuple[Any, dict[str, Any]]],
    seatings: tuple[tuple[int, ...], ...],
    cfg: BCConfig,
    log: Log,
) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the proxy as a TeammateSet, the proxy's self-play, the BC partner's self-play, the two
    together): returns over the build's evaluation protocol."""
    from aht_bench.evaluation.evaluate import cross_play
    from aht_bench.policies.teammate_set import TeammateSet

    team = TeammateSet(
        ["human_proxy", "bc_partner"],
        [(network, trained["human_proxy"][0]), (network, trained["bc_partner"][0])],
    )
    proxy_only = TeammateSet(["human_proxy"], [(network, trained["human_proxy"][0])])
    log(f"evaluating: {cfg.episodes} episodes per seating, seed {cfg.eval_seed}")
    t0 = time.perf_counter()
    # rows: the agent's seats; cols: the others. (2, 1, seatings, episodes)
    with_proxy = cross_play(task, team, proxy_only, seatings, cfg.episodes, cfg.eval_seed)
    partner_only = TeammateSet(["bc_partner"], [(network, trained["bc_partner"][0])])
    partner_sp = cross_play(task, partner_only, partner_only, seatings, cfg.episodes, cfg.eval_seed)
    proxy_sp = _summary(with_proxy[0, 0])
    partner_sp_s = _summary(partner_sp[0, 0])
    mixed = _summary(with_proxy[1, 0])
    log(
        f"  self-play: human_proxy {proxy_sp['return']:.2f}, "
        f"bc_partner {partner_sp_s['return']:.2f}; "
        f"human_proxy with bc_partner {mixed['return']:.2f} [{time.perf_counter() - t0:.0f}s]"
    )
    return proxy_only, proxy_sp, partner_sp_s, mixed


def _proxy_bounds(
    task: Task,
    proxy: ProxyVersion,
    proxy_only: Any,
    seatings: tuple[tuple[int, ...], ...],
    proxy_sp: dict[str, Any],
    mixed: dict[str, Any],
    cfg: BCConfig,
    log: Log,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the human proxy's bounds, the example agents' build info): its self-play return
    (human-proxy-v1), or Bounds v2, the highest return a partner measured in the build reaches
    with it (raised, where the version says so, until no example agent's upper CI is above 1)."""
    if proxy_sp["return"] <= 0 and not proxy.bounds_v2:
        raise HumanDataError(
            f"{task.id}: the human proxy never scores in self-play, so it has no upper bound"
        )
    bounds: dict[str, Any] = {
        "lower": 0.0,
        "upper": proxy_sp["return"],
        "upper_set_by": "human_proxy self-play",
        "self_play_return_per_seating": proxy_sp["return_per_seating"],
    }
    if not proxy.bounds_v2:
        return bounds, []
    from aht_bench.heldout.build.bounds import _fit_example_bounds, upper_bound

    t0 = time.perf_counter()
    sources, example_info, example_returns = upper_bound_sources(
        task, proxy_only, seatings, proxy_sp["return"], mixed["return"], cfg, log, proxy
    )
    bound = upper_bound(sources)
    if bound["upper"] <= 0:
        raise HumanDataError(
            f"{task.id}: no partner of the build scores with the human proxy (self-play, the "
            "BC partner, the heuristics, the example agents), so it has no upper bound; "
            "clone it from more or better episodes"
        )
    bounds = {
        "lower": 0.0,
        "upper": bound["upper"],
        "upper_set_by": bound["upper_set_by"],
        "upper_set_by_kind": bound["kind"],
        "self_play_return": proxy_sp["return"],
        "self_play_return_per_seating": proxy_sp["return_per_seating"],
        "raised_by": bound["upper"] - proxy_sp["return"],
        "upper_candidates": sources,
    }
    if proxy.example_upper_ci and example_returns:
        (fitted,) = _fit_example_bounds(np.array([bound["upper"]]), example_returns, cfg.eval_seed)
        if fitted != bound["upper"]:
            bounds["rounding_raise"] = float(fitted) - bound["upper"]
            bounds["upper"] = float(fitted)
            bounds["raised_by"] = float(fitted) - proxy_sp["return"]
            log(f"  upper bound raised by {bounds['rounding_raise']:.3g} (rounding)")
    log(
        f"  Bounds v2: upper {bounds['upper']:.2f} set by {bound['upper_set_by']} "
        f"(self-play {proxy_sp['return']:.2f}) [{time.perf_counter() - t0:.0f}s]"
    )
    return bounds, example_info


def carroll_data(data_layout: str) -> Callable[[str], str]:
    """What a model's card says it was cloned from, given its record's `trained_on`."""
    return lambda trained_on: (
        f"Carroll et al. 2019 human-human trials, {trained_on}, layout {data_layout} "
        f"(overcooked-ai {OVERCOOKED_AI_VERSION})"
    )


@dataclasses.dataclass(frozen=True)
class Cloned:
    """The two BC models of a human-proxy build, what they return together and the proxy's
    bounds (`clone_and_bound`)."""

    trained: dict[str, tuple[Any, dict[str, Any]]]  # name -> (params, training record)
    proxy_sp: dict[str, Any]  # the proxy's self-play returns (`_summary`)
    partner_sp: dict[str, Any]  # the BC partner's self-play returns
    mixed: dict[str, Any]  # the proxy with the BC partner
    bounds: dict[str, Any]  # the proxy's BRProx bounds and their provenance
    example_info: list[dict[str, Any]]  # the example agents' build info (Bounds v2)


def clone_and_bound(
    task: str | Task,
    proxy: ProxyVersion,
    network: Any,
    replays: dict[str, Replay],
    splits: dict[str, dict[str, Any]],
    seatings: tuple[tuple[int, ...], ...],
    seed: int,
    cfg: BCConfig,
    log: Log,
) -> Cloned:
    """The recipe shared by every human-proxy build: `human_proxy` cloned from the test split
    (seed `seed`), `bc_partner` from the train split (`seed + 1`), each scored on the other
    split; both played (`_play_models`) and the proxy's bounds set (`_proxy_bounds`)."""
    from aht_bench import envs

    task = envs.task(task)
    trained = {
        name: _clone(name, split, other, net_seed, network, replays, splits, cfg, log)
        for name, split, other, net_seed in (
            ("human_proxy", "test", "train", seed),
            ("bc_partner", "train", "test", seed + 1),
        )
    }
    proxy_only, proxy_sp, partner_sp, mixed = _play_models(
        task, network, trained, seatings, cfg, log
    )
    bounds, example_info = _proxy_bounds(
        task, proxy, proxy_only, seatings, proxy_sp, mixed, cfg, log
    )
    return Cloned(trained, proxy_sp, partner_sp, mixed, bounds, example_info)


def save_models(
    task_id: str,
    data: Callable[[str], str],
    network: Any,
    trained: dict[str, tuple[Any, dict[str, Any]]],
    work: Path,
) -> dict[str, dict[str, str]]:
    """Save both BC models into `work`; per model its file and sha256. `data(trained_on)`
    names the data a model was cloned from (its card's provenance)."""
    from aht_bench.policies.io import save_policy

    files = {}
    for name, (params, record) in trained.items():
        rel = f"{name}.safetensors"
        provenance = {
            "algorithm": "behaviour cloning (aht_bench.heldout.human.train_bc)",
            "data": data(record["trained_on"]),
            "seed": record["seed"],
            "best_epoch": record["best_epoch"],
        }
        save_policy(work / rel, network, params, {"task_id": task_id, "provenance": provenance})
        files[name] = {"file": rel, "sha256": sha256_file(work / rel)}
    return files


def _model_numbers(record: dict[str, Any], sp: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `results` entry of one BC model."""
    return {
        "trained_on": record["trained_on"],
        "held_out_split": record["held_out"]["split"],
        "held_out_action_accuracy": record["held_out"]["action_accuracy"],
        "held_out_cross_entropy": record["held_out"]["cross_entropy"],
        "held_out_majority_action_accuracy": record["held_out"]["majority_action_accuracy"],
        "held_out_transitions": record["held_out"]["transitions"],
        "validation_action_accuracy": record["validation"]["action_accuracy"],
        "self_play_return": sp["return"],
        "self_play_return_per_seating": sp["return_per_seating"],
    }


def results_record(
    trained: dict[str, tuple[Any, dict[str, Any]]],
    proxy_sp: dict[str, Any],
    partner_sp: dict[str, Any],
    mixed: dict[str, Any],
) -> dict[str, Any]:
    """The manifest's `results`: each model's numbers and the two playing together."""
    return {
        "human_proxy": _model_numbers(trained["human_proxy"][1], proxy_sp),
        "bc_partner": _model_numbers(trained["bc_partner"][1], partner_sp),
        "human_proxy_with_bc_partner": {
            "return": mixed["return"],
            "return_per_seating": mixed["return_per_seating"],
            "note": "seating s: the BC partner in seat s, the proxy in the other",
        },
    }


def bounds_v2_fields(bounds: dict[str, Any], example_info: list[dict]) -> dict[str, Any]:
    """What a Bounds v2 human-proxy manifest adds (its `status` replaces v1's)."""
    candidates = bounds["upper_candidates"]
    return {
        "status": (
            "PUBLISHED human-proxy set: a behaviour-cloned model of the Carroll et al. "
            "(2019) test-split humans, normalised by Bounds v2 (the highest return any "
            "partner measured in the build reached with it; human-proxy-v1: its self-play "
            "return); immutable"
        ),
        "partner_returns": {
            "rows": [c["set_by"] for c in candidates],
            "kinds": [c["kind"] for c in candidates],
            "cols": ["human_proxy"],
            "mean_return": [[round(c["value"], 6)] for c in candidates],
        },
        "example_agents": example_info,
        "bounds_procedure": BOUNDS_V2,
    }


def _source(data_layout: str, proxy: ProxyVersion, splits: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `source`: the data the proxies were cloned from."""
    return {
        "dataset": "Carroll et al. 2019 human-human Overcooked trials",
        "overcooked_ai_version": OVERCOOKED_AI_VERSION,
        "sdist": SDIST_FILENAME,
        "sdist_sha256": SDIST_SHA256,
        "pickles": {s: {"member": m, "sha256": d} for s, (m, d) in PICKLES.items()},
        "data_layout": data_layout,
        "splits": splits,
        "seats": proxy.seats,
        "observation_step": "max(0, 400 - steps left in the human trial)",
    }


def build_recipe(
    task_id: str,
    proxy: ProxyVersion,
    seed: int,
    cfg: BCConfig,
    network: Any,
    trained: dict[str, tuple[Any, dict[str, Any]]],
    seconds: float,
) -> dict[str, Any]:
    """The manifest's `recipe`: the command that rebuilds the set and what went into it."""
    return {
        # v1 and v2 recorded no version (then the only one per task version); from v3 on
        # the command names it, so it still builds this set once a newer one exists
        "command": 'python -c "from aht_bench.heldout.human import build; '
        + (
            f"build('{task_id}', seed={seed})\""
            if proxy.name in ("human-proxy-v1", "human-proxy-v2")
            else f"build('{task_id}', version='{proxy.name}', seed={seed})\""
        ),
        "bc": dataclasses.asdict(cfg) | {"hidden": list(cfg.hidden)},
        "network": network.config(),
        "seeds": {"human_proxy": seed, "bc_partner": seed + 1},
        "training": {
            name: {k: v for k, v in rec.items() if k not in ("held_out", "validation")}
            for name, (_, rec) in trained.items()
        },
        "evaluation": {
            "episodes_per_seating": cfg.episodes,
            "seed": cfg.eval_seed,
            "runner": "aht_bench.evaluation.evaluate.cross_play (jitted)",
        },
        "build_seconds": round(seconds, 1),
    }


def build(
    task: str | Task,
    out: str | os.PathLike[str] | None = None,
    *,
    version: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    config: BCConfig | None = None,
    log: Log = print,
) -> Path:
    """Build the human-proxy set `version` of `task` into `out` (default
    heldout/<task_id>/<version>/); fetches the data first if needed. Returns the folder.
    `version` None: the one built on the task's version (`resolve_task`).

    `seed` seeds the proxy's BC (`seed`) and the partner's (`seed + 1`): initialisation,
    validation trials and minibatch order. Refuses to overwrite an existing set.
    """
    from aht_bench.evaluation import sets
    from aht_bench.heldout.build import manifest_head
    from aht_bench.policies.networks import MLPActorCritic

    cfg = config or BCConfig()
    task, proxy = resolve_task(task, version)
    task_id = task.id
    data_layout = DATA_LAYOUTS[task_id]
    folder = Path(out) if out is not None else sets.heldout_root() / task_id / proxy.name
    if folder.exists() and any(folder.iterdir()):
        raise HumanDataError(
            f"{folder} already exists and is not empty: a published set is never overwritten; "
            "build into another folder with out=, or delete it first if it was never published"
        )
    start = time.perf_counter()
    cache = fetch(data_dir, log)
    env = task.env
    seatings = sets.default_seatings(task_id, env.num_agents)
    replays, splits = _replay_splits(env, data_layout, proxy, cache, log)

    network = MLPActorCritic(env.obs_dim, env.num_actions, 1, cfg.hidden)
    cloned = clone_and_bound(task, proxy, network, replays, splits, seatings, seed, cfg, log)
    trained = cloned.trained

    with sets.staged(folder) as work:
        files = save_models(task_id, carroll_data(data_layout), network, trained, work)

        status = (
            "PUBLISHED human-proxy set: a behaviour-cloned model of the Carroll et al. (2019) "
            "test-split humans, normalised by its own self-play return (paper App. 'Human Proxy "
            "Evaluations'); immutable"
        )
        manifest = manifest_head(task_id, proxy.name, status, seatings) | {
            "members": [
                {
                    "name": "human_proxy",
                    "kind": "human-proxy",
                    **files["human_proxy"],
                    "bounds": cloned.bounds,
                }
            ],
            "bc_partner": files["bc_partner"]
            | {
                "kind": "bc-partner",
                "note": "behaviour-cloned on the train split: a partner for training ego "
                "agents, not a member of the evaluation set",
            },
            "results": results_record(trained, cloned.proxy_sp, cloned.partner_sp, cloned.mixed),
            "source": _source(data_layout, proxy, splits),
            "recipe": build_recipe(
                task_id, proxy, seed, cfg, network, trained, time.perf_counter() - start
            ),
        }
        if proxy.changes:  # v1's manifest keeps exactly its published keys
            manifest["changes_from_human_proxy_v1"] = list(proxy.changes)
        if proxy.bounds_v2:
            manifest |= bounds_v2_fields(cloned.bounds, cloned.example_info)
        sets.write_manifest(work, manifest)
        sets.load_set(task, work)  # the set loads, verified, before it is published
    log(f"wrote {folder}/ in {time.perf_counter() - start:.0f}s")
    return folder
