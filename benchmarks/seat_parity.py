"""Seat parity on a divided Overcooked layout: does a trained agent score on both seats and sides?

Issue 27: under protocol v1 seat 0 always starts on the left of asymm_advantages and
forced_coord, so learners trained one side only and scored 0 in the other seat. This script
plays trained policies with the suite's own episode runner (`aht_bench.evaluation.rollout.play`,
fixed seeds, `--episodes` per seating) and reports, per pairing, the agent's mean base return with
it in seat 0 and in seat 1, and (on a divided layout) with it starting on the left and on the
right side (the side is read from each episode's reset state, recomputed from the runner's reset
keys).

- `--ippo RUN`: an IPPO run folder (`aht-bench train ippo`); its agent 0 plays with its agent 1
  and agent 1 with agent 0.
- `--ego FILE --partners RUN,heuristic,...`: an ego policy file (e.g. a ROTATE run's
  `policies/final/seed0-ego.safetensors`) with each partner: an IPPO run's two agents and/or
  heuristics of the task.

    python benchmarks/seat_parity.py --task overcooked-forced_coord-v2 --ippo runs/ippo-fc \\
        --ego runs/rotate-fc/policies/final/seed0-ego.safetensors --partners runs/ippo-fc \\
        --out benchmarks/results/seat_parity_forced_coord_v2.json

The parity criterion of the issue: |seat 0 - seat 1| <= 0.2 x max(seat 0, seat 1), on the mean
over the pairings of one agent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

from aht_bench import envs
from aht_bench.evaluation.rollout import hashable_set, play
from aht_bench.policies import load_policy
from aht_bench.policies.heuristics import make_heuristic


def ippo_agents(run: Path) -> list[tuple[str, Any]]:
    """(name, (policy, params)) of an IPPO run's final agents, in seat order."""
    files = sorted((run / "policies" / "final").glob("*.safetensors"))
    if len(files) < 2:
        raise SystemExit(f"{run}: expected two policy files in policies/final, found {files}")
    return [(f"{run.name}/{f.stem}", load_policy(f)) for f in files[:2]]


def partner_list(task: envs.Task, spec: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for item in filter(None, spec.split(",")):
        if Path(item).is_dir():
            out += ippo_agents(Path(item))
        else:
            out.append((item, (make_heuristic(task, item), None)))
    return out


def start_sides(task: envs.Task, seed: int, episodes: int) -> np.ndarray:
    """bool (episodes, 2): seat i starts in the left region in episode e, from the runner's
    reset keys (`fold_in(fold_in(PRNGKey(seed), e), 0)`)."""
    env: Any = task.env
    base = jax.random.PRNGKey(seed)
    keys = jax.vmap(lambda e: jax.random.fold_in(jax.random.fold_in(base, e), 0))(
        np.arange(episodes)
    )
    states, _ = jax.jit(jax.vmap(env.reset))(keys)
    left = {tuple(int(v) for v in c) for c in env.spawn_cells[0]}
    pos = np.asarray(states.inner.agent_pos).astype(int)
    return np.array([[tuple(p[i]) in left for i in range(2)] for p in pos])


def pair_returns(
    task: envs.Task, agent: tuple[str, Any], partner: tuple[str, Any], episodes: int, seed: int
) -> np.ndarray:
    """float32 (2, episodes): the agent's return with it in seat 0 / seat 1."""
    agents = hashable_set([agent[0]], [agent[1]])
    mates = hashable_set([partner[0]], [partner[1]])
    return play(task, agents, 0, mates, 0, ((0,), (1,)), episodes, seed).returns


def summarise(returns: np.ndarray, sides: np.ndarray | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "seat0": float(returns[0].mean()),
        "seat1": float(returns[1].mean()),
    }
    if sides is not None:
        on_left = np.stack([sides[:, 0], sides[:, 1]])  # (seat, episode): agent starts left
        row["left"] = float(returns[on_left].mean())
        row["right"] = float(returns[~on_left].mean())
        row["episodes_left"] = int(on_left.sum())
    return row


def parity(seat0: float, seat1: float) -> dict[str, Any]:
    high = max(seat0, seat1)
    gap = abs(seat0 - seat1) / high if high > 0 else 0.0
    return {"seat0": seat0, "seat1": seat1, "relative_gap": gap, "within_20pct": gap <= 0.2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, help="e.g. overcooked-forced_coord-v2")
    parser.add_argument("--ippo", type=Path, help="IPPO run folder (team vs itself)")
    parser.add_argument("--ego", type=Path, help="ego policy file or heuristic name (random)")
    parser.add_argument("--partners", default="", help="IPPO run folders and/or heuristics")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    task = envs.task(args.task)
    env: Any = task.env
    sides = start_sides(task, args.seed, args.episodes) if env.divided else None
    result: dict[str, Any] = {"task_id": task.id, "episodes_per_seating": args.episodes}
    result["seed"] = args.seed
    if args.ippo:
        team = ippo_agents(args.ippo)
        rows = {}
        for k in (0, 1):
            rets = pair_returns(task, team[k], team[1 - k], args.episodes, args.seed)
            rows[f"{team[k][0]} with {team[1 - k][0]}"] = summarise(rets, sides)
        mean0 = float(np.mean([r["seat0"] for r in rows.values()]))
        mean1 = float(np.mean([r["seat1"] for r in rows.values()]))
        result["ippo"] = {"pairings": rows, "parity": parity(mean0, mean1)}
    if args.ego:
        if args.ego.is_file():
            ego = (args.ego.name, load_policy(args.ego))
        else:  # a heuristic's name, e.g. `random` for the floor
            ego = (str(args.ego), (make_heuristic(task, str(args.ego)), None))
        rows = {}
        for partner in partner_list(task, args.partners):
            rets = pair_returns(task, ego, partner, args.episodes, args.seed)
            rows[partner[0]] = summarise(rets, sides)
        mean0 = float(np.mean([r["seat0"] for r in rows.values()]))
        mean1 = float(np.mean([r["seat1"] for r in rows.values()]))
        result["ego"] = {"file": str(args.ego), "pairings": rows, "parity": parity(mean0, mean1)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
