"""The random-agent floor of every teammate set, shipped with the package
(aht_bench/evaluation/random_floor.json, read by `aht_bench.evaluation.floor`): an ego of uniform
random actions (`RandomHeuristic`, jitted) on every published set and development set of the
checkout's heldout/, under `aht-bench evaluate`'s protocol (64 episodes per member and seating,
seed 0, the bootstrap's 2000 resamples), each aggregate with its CI.

    python benchmarks/random_floor.py [--episodes 64] [--only lbf-v1/v2] \\
        [--out aht_bench/evaluation/random_floor.json]

Prints a line per set; where benchmarks/results/example_agents_v2-*-random_agent.json measured
agents/examples/random_agent.py (the same uniform play, step by step in the sandbox, 16
episodes) on a set, its member mean is printed beside this one's as a cross-check.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

OUT = REPO / "aht_bench" / "evaluation" / "random_floor.json"


def _sets() -> list[tuple[str, str]]:
    """(task_id, version) of every published and development set of the checkout."""
    from aht_bench.evaluation.pins import PINNED
    from aht_bench.evaluation.sets import available_sets, tasks_with_sets

    out = [tuple(key.split("/", 1)) for key in sorted(PINNED)]
    out += [(t, "dev") for t in tasks_with_sets() if "dev" in available_sets(t)]
    return sorted(out)  # type: ignore[return-value]


def _cross_check() -> dict[str, float]:
    """set id -> mean member score of agents/examples/random_agent.py, where measured."""
    out = {}
    results = REPO / "benchmarks" / "results"
    for path in sorted(results.glob("example_agents_v2-*random_agent.json")):
        for row in json.loads(path.read_text()).get("results", []):
            members = row.get("members")
            if members and "random_agent" in row.get("agent", ""):
                out[row["set"]] = sum(m["score"] for m in members) / len(members)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--only", action="append", default=None, help="a set id, task/version")
    parser.add_argument("--out", type=Path, default=OUT)
    a = parser.parse_args()
    from aht_bench.evaluation.evaluate import evaluate_policy
    from aht_bench.evaluation.sets import load_set
    from aht_bench.policies.heuristics.overcooked import RandomHeuristic

    checks = _cross_check()
    old = json.loads(a.out.read_text()) if a.out.is_file() else {}
    table = {
        "format": "aht-bench-random-floor",
        "measured_by": "benchmarks/random_floor.py",
        "policy": "uniform random actions over the task's 6 actions (RandomHeuristic, jitted)",
        "episodes": a.episodes,
        "seed": 0,
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sets": dict(old.get("sets", {})) if a.only else {},
    }
    for task_id, version in _sets():
        set_key = f"{task_id}/{version}"
        if a.only and set_key not in a.only:
            continue
        eval_set = load_set(task_id, version)
        if eval_set.task.env.num_actions != 6:
            print(f"{set_key}: skipped ({eval_set.task.env.num_actions} actions, not 6)")
            continue
        start = time.perf_counter()
        record = evaluate_policy(
            RandomHeuristic(), None, eval_set, name="uniform random", num_episodes=a.episodes
        )
        aggregates = record["payload"]["aggregates"]
        members = record["payload"]["members"]
        member_mean = sum(m["normalized"]["value"] for m in members) / len(members)
        table["sets"][eval_set.set_id] = {
            "manifest_sha256": eval_set.manifest_sha256,
            "members": len(members),
            **{k: {"value": v["value"], "ci": v["ci"]} for k, v in aggregates.items()},
        }
        mean = aggregates["mean"]
        check = checks.get(eval_set.set_id)
        also = f"; random_agent.py measured {check:.3f}" if check is not None else ""
        print(
            f"{eval_set.set_id:48s} mean {mean['value']:.3f} [{mean['ci'][0]:.3f}, "
            f"{mean['ci'][1]:.3f}], IQM {aggregates['iqm']['value']:.3f}, member mean "
            f"{member_mean:.3f}{also} ({time.perf_counter() - start:.0f}s)",
            flush=True,
        )
    table["sets"] = dict(sorted(table["sets"].items()))
    a.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {a.out} ({len(table['sets'])} sets)")


if __name__ == "__main__":
    main()
