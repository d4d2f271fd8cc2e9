"""How much an entry's score moves with the evaluation seed alone, against the 95% CI its record
prints: the same agent files (a bundle's seeds), the same heldout set and protocol (64 episodes
per member and seating), evaluated at several `--seed`s.

    python benchmarks/eval_seed_spread.py --task overcooked-forced_coord-v2 --set v3 \\
        --seeds 0-7 agents/fcp/forced_coord/v2/seed*-ego.safetensors \\
        --out benchmarks/results/eval_seed_spread_fcp_forced_coord_v3.json

Why: an evaluation seed fixes every episode's start state for every member, seating and seed
file (common random numbers, aht_bench/evaluation/rollout.py), so a seed whose start states
are easy lifts every member at once. A record's CI resamples training seeds (and members'
episodes within a one-file record), each evaluated on the same start states: it does not
include that shared draw. The verifier re-runs an entry at a seed of its own, so the ranked
number and the claim differ by this spread. Prints one line per seed, then the spread of the
seed means next to the records' mean CI width, and writes both to `--out` (JSON).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def parse_seeds(text: str) -> list[int]:
    """ "0-7" or "0,3,9" -> the seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            seeds += range(int(lo), int(hi) + 1)
        else:
            seeds.append(int(part))
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise SystemExit(f"--seeds {text!r}: give at least two distinct seeds, e.g. 0-7")
    return seeds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="the agent's files, one per training seed")
    parser.add_argument("--task", required=True)
    parser.add_argument("--set", default="v3", help="heldout version (or dev)")
    parser.add_argument("--seeds", default="0-7")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:
        raise SystemExit(f"no such agent file: {', '.join(missing)}")

    from aht_bench import hostinfo
    from aht_bench.evaluation.evaluate import evaluate_agent_files
    from aht_bench.evaluation.sets import load_set

    eval_set = load_set(args.task, args.set)
    rows = []
    print(f"{len(args.files)} file(s) on {args.task}/{args.set}, {args.episodes} episodes per "
          f"member and seating, evaluation seeds {seeds}")  # fmt: skip
    for seed in seeds:
        start = time.time()
        record = evaluate_agent_files(args.files, eval_set, num_episodes=args.episodes, seed=seed)
        payload = record["payload"]
        mean = payload["aggregates"]["mean"]
        returns = {m["name"]: m["mean_return"] for m in payload["members"]}
        rows.append({"seed": seed, "mean": mean["value"], "ci": mean["ci"],
                     "member_mean_return": returns})  # fmt: skip
        print(f"seed {seed:>3}: mean {mean['value']:.3f} [{mean['ci'][0]:.3f}, "
              f"{mean['ci'][1]:.3f}]  ({time.time() - start:.0f}s)")  # fmt: skip

    means = [r["mean"] for r in rows]
    widths = [r["ci"][1] - r["ci"][0] for r in rows]
    names = list(rows[0]["member_mean_return"])
    # a shift common to the members: how often a member moves with the set's mean across seeds
    same_direction = []
    for a, b in zip(rows[:-1], rows[1:], strict=True):
        step = b["mean"] - a["mean"]
        moves = [b["member_mean_return"][n] - a["member_mean_return"][n] for n in names]
        same_direction.append(sum((d > 0) == (step > 0) for d in moves if d != 0) / len(names))
    summary = {
        "seed_means_min": min(means),
        "seed_means_max": max(means),
        "seed_means_sd": statistics.stdev(means),
        "range": max(means) - min(means),
        "mean_ci_width": statistics.mean(widths),
        "range_over_ci_width": (max(means) - min(means)) / statistics.mean(widths),
        "members_moving_with_the_mean": statistics.mean(same_direction),
    }
    print(
        f"seed means: {min(means):.3f} .. {max(means):.3f} (range {summary['range']:.3f}, sd "
        f"{summary['seed_means_sd']:.3f}); a record's 95% CI is {summary['mean_ci_width']:.3f} "
        f"wide on average: the range is {summary['range_over_ci_width']:.1f}x the CI width; "
        f"from one seed to the next, {summary['members_moving_with_the_mean']:.0%} of the "
        "members move in the mean's direction"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        out = {
            "command": "python " + " ".join(sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "host": hostinfo.describe(),
            "task": args.task, "set": args.set, "episodes": args.episodes,
            "files": args.files, "rows": rows, "summary": summary,
        }  # fmt: skip
        args.out.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
