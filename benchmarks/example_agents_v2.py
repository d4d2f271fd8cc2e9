"""Every example agent of `agents/examples/` against every v2 heldout set, as a user would run
`aht-bench evaluate` (sandboxed, default protocol): each member's score and 95% CI, and whether
any upper CI is above 1 (issue 27: "no example agent scores above 1.0 (upper CI) against any v2
member"; docs/heldout.md, Bounds v2).

    python benchmarks/example_agents_v2.py [--set-version v2 | human-proxy-v2] [--only TASK] \\
        [--agent random_agent.py] [--episodes N] \\
        [--out benchmarks/results/example_agents_v2[-VERSION][-TASK][-AGENT].json]

Exits 1 when some example agent's upper CI is above 1 against some member; the table names them.
An agent whose `TASKS` leaves a task out is listed as skipped for it. `--only TASK` limits the
run to one task (full id or alias), `--agent NAME` (repeatable) to the example files of that
name, `--episodes N` plays N episodes per member and seating instead of the default 64 (fewer
episodes widen the CIs, so "no upper CI above 1" with fewer episodes is the stronger statement).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from aht_bench import envs
from aht_bench.evaluation import sets
from aht_bench.evaluation.evaluate import evaluate_agent_file
from aht_bench.policies.agent_file import AgentLoadError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = (
    "agents/examples/heuristic_agent.py",
    "agents/examples/scripted_agent.py",
    "agents/examples/jax_mlp_agent.py",
    "agents/examples/random_agent.py",
)


def _tasks_with(version: str) -> list[str]:
    """The tasks with a published (pinned) set `version` (v2, human-proxy-v2, ...)."""
    return [
        t
        for t in sets.tasks_with_sets()
        if version in sets.available_sets(t) and sets.load_set(t, version).pinned
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set-version", default="v2")
    parser.add_argument("--only", default=None, help="One task (id or alias).")
    parser.add_argument(
        "--agent", action="append", default=None, choices=[Path(e).name for e in EXAMPLES],
        help="Only this example file (repeatable). Default: every example.",
    )  # fmt: skip
    parser.add_argument(
        "--episodes", type=int, default=None,
        help="Episodes per member and seating (default: aht-bench evaluate's 64).",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, default=None,
        help="Default: benchmarks/results/example_agents_v2[-TASK].json.",
    )  # fmt: skip
    args = parser.parse_args()
    if args.out is None:
        suffix = "" if args.set_version == "v2" else f"-{args.set_version}"
        suffix += "" if args.only is None else f"-{envs.resolve(args.only)}"
        suffix += "".join(f"-{Path(a).stem}" for a in args.agent or ())
        args.out = ROOT / "benchmarks" / "results" / f"example_agents_v2{suffix}.json"
    tasks = _tasks_with(args.set_version)
    if args.only is not None:
        only = envs.resolve(args.only)
        if only not in tasks:
            parser.error(f"{only} has no published {args.set_version} set; with one: {tasks}")
        tasks = [only]
    if args.episodes is not None and args.episodes < 1:
        parser.error(f"--episodes must be at least 1, not {args.episodes}")
    examples = [e for e in EXAMPLES if args.agent is None or Path(e).name in args.agent]
    options = {} if args.episodes is None else {"num_episodes": args.episodes}
    rows: list[dict[str, object]] = []
    above: list[str] = []
    for task in tasks:
        eval_set = sets.load_set(task, args.set_version)
        for rel in examples:
            start = time.perf_counter()
            try:
                record = evaluate_agent_file(ROOT / rel, eval_set, **options)
            except AgentLoadError as e:
                if "(its TASKS)" not in str(e):
                    raise
                rows.append({"task": task, "agent": rel, "skipped": "its TASKS leave it out"})
                print(f"{task:34s} {Path(rel).name:20s} skipped (its TASKS)", flush=True)
                continue
            members = record["payload"]["members"]
            per_member = [
                {"member": m["name"], "score": m["normalized"]["value"],
                 "ci": m["normalized"]["ci"], "mean_return": m["mean_return"],
                 "upper_bound": m["upper"]}
                for m in members
            ]  # fmt: skip
            top = max(per_member, key=lambda m: m["ci"][1])
            over = [m["member"] for m in per_member if m["ci"][1] > 1.0]
            above += [f"{task} {rel} {name}" for name in over]
            rows.append(
                {"task": task, "agent": rel, "sha256": record["payload"]["agent"]["sha256"],
                 "set": record["payload"]["teammate_set"]["id"], "members": per_member,
                 "highest_upper_ci": top["ci"][1], "highest_upper_ci_member": top["member"],
                 "above_1": over, "seconds": round(time.perf_counter() - start, 1)}
            )  # fmt: skip
            print(
                f"{task:34s} {Path(rel).name:20s} highest upper CI {top['ci'][1]:.4f} "
                f"({top['member']}, score {top['score']:.3f})"
                + (f"  ABOVE 1: {', '.join(over)}" if over else ""),
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = {
        "command": "python benchmarks/example_agents_v2.py"
        + ("" if args.set_version == "v2" else f" --set-version {args.set_version}")
        + (f" --only {args.only}" if args.only else "")
        + "".join(f" --agent {a}" for a in args.agent or ())
        + (f" --episodes {args.episodes}" if args.episodes is not None else ""),
        "set_version": args.set_version,
        "protocol": f"aht-bench evaluate defaults ({args.episodes or 64} episodes per seating, "
        "seed 0, sandboxed)",
        "results": rows,
        "above_1": above,
    }  # fmt: skip
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    if above:
        print(f"{len(above)} example agent/member pair(s) with upper CI > 1", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
