"""How often `aht-bench leaderboard verify`'s retired rule (before issue 52) called an honest
committed entry irreproducible. Since issue 52 the ranked number is the verifier's own re-run
and the claim check is exact for the JAX runner (`aht_bench.leaderboard.rerun`); this script
keeps the retired rule's functions (`expected_range`, `intervals_overlap`, `within`) to
reproduce its committed measurement.

`verify` re-runs an entry's first `--episodes` episodes per member and seating and says the
entry agrees when the re-run's 95% CI of the mean overlaps the record's. Under honest play the
re-run's episodes are a subset of the record's, so this script draws random subsets of the
record's own episodes (without replacement; the size `verify` uses) and counts how often each
of three rules calls the subset irreproducible, for each seed file of every committed entry:

- independent: the 95% CIs of the subset's and the record's means do not overlap, each CI a
  bootstrap that resamples each member's episodes on its own (the evaluator's per-episode CIs;
  `verify`'s former rule);
- clustered: the same with CIs that resample whole episodes, all members' scores in one
  together (every runner starts episode `e` of every member from the same state, so the
  members' scores in one episode are correlated);
- range: the subset's mean is outside `aht_bench.leaderboard.rerun.expected_range`, the
  range of 99% of the means of as many whole episodes drawn from the record's (`verify`'s rule).

It also measures how often the range rule catches a forged record: the record's episodes
outside the re-run's subset raised by `--shifts` (BRProx), the re-run's subset honest.

    python benchmarks/verify_false_alarms.py --out benchmarks/results/verify_false_alarms.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from aht_bench.evaluation.record import episode_score_matrices
from aht_bench.leaderboard.entries import entry_paths, read_json

REPO = Path(__file__).resolve().parents[1]
LEVEL = 0.99


def intervals_overlap(a: dict, b: dict, tol: float = 1e-9) -> bool:
    """Whether the CIs of two estimates ({"value", "ci": [lo, hi]}) overlap."""
    (a_lo, a_hi), (b_lo, b_hi) = a["ci"], b["ci"]
    return a_lo <= b_hi + tol and b_lo <= a_hi + tol


def expected_range(
    matrix: np.ndarray, episodes: int, reps: int, seed: int, level: float = LEVEL
) -> tuple[float, float]:
    """The retired rule: the central `level` quantiles of `reps` means of `episodes` whole
    episodes drawn with replacement from an (episodes, members) score matrix."""
    per_episode = np.asarray(matrix, np.float64).mean(axis=1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(per_episode), size=(reps, episodes))
    means = per_episode[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(lo), float(hi)


def within(value: float, expected: tuple[float, float], tol: float = 1e-9) -> bool:
    return expected[0] - tol <= value <= expected[1] + tol


def independent_mean(matrix: np.ndarray, reps: int, seed: int, confidence: float) -> dict:
    """Mean of an (episodes, members) matrix, percentile CI of a bootstrap that resamples each
    member's episodes independently (stratified by member)."""
    episodes, members = matrix.shape
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, episodes, size=(reps, episodes, members))
    means = np.take_along_axis(matrix[None], picks, axis=1).mean(axis=(1, 2))
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return {"value": float(matrix.mean()), "ci": [float(lo), float(hi)]}


def clustered_mean(matrix: np.ndarray, reps: int, seed: int, confidence: float) -> dict:
    """Mean of an (episodes, members) matrix, percentile CI of a bootstrap over whole episodes."""
    per_episode = matrix.mean(axis=1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(per_episode), size=(reps, len(per_episode)))
    means = per_episode[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return {"value": float(per_episode.mean()), "ci": [float(lo), float(hi)]}


RULES = ("independent", "clustered", "range")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=8, help="re-run size (verify's default)")
    parser.add_argument("--trials", type=int, default=200, help="random subsets per seed file")
    parser.add_argument("--reps", type=int, default=1000, help="bootstrap resamples per CI")
    parser.add_argument(
        "--shifts", type=float, nargs="*", default=[0.05, 0.1, 0.2], help="forgeries to catch"
    )
    parser.add_argument("--out", type=Path, default=None, help="write the table as JSON here")
    args = parser.parse_args()
    rows = []
    rng = np.random.default_rng(0)
    for path in entry_paths(REPO / "leaderboard"):
        entry = read_json(path)
        for f, matrix in enumerate(episode_score_matrices(entry)):  # (episodes, members)
            if matrix.shape[0] <= args.episodes:
                continue
            alarms = dict.fromkeys(RULES, 0)
            caught = dict.fromkeys(args.shifts, 0)
            for trial in range(args.trials):
                chosen = rng.choice(matrix.shape[0], args.episodes, replace=False)
                subset = matrix[chosen]
                for shift in args.shifts:
                    forged = matrix + shift
                    forged[chosen] = subset
                    forged_range = expected_range(forged, args.episodes, args.reps, trial)
                    caught[shift] += not within(float(subset.mean()), forged_range)
                for name, ci in (("independent", independent_mean), ("clustered", clustered_mean)):
                    full, part = (ci(m, args.reps, trial, 0.95) for m in (matrix, subset))
                    alarms[name] += not intervals_overlap(full, part)
                expected = expected_range(matrix, args.episodes, args.reps, trial)
                alarms["range"] += not within(float(subset.mean()), expected)
            rows.append(
                {
                    "entry": path.stem,
                    "file": f,
                    "episodes_in_record": int(matrix.shape[0]),
                    **{k: v / args.trials for k, v in alarms.items()},
                    "caught": {str(k): v / args.trials for k, v in caught.items()},
                }
            )
            rates = ", ".join(f"{k} {rows[-1][k]:.3f}" for k in RULES)
            forged = ", ".join(f"+{k}: {v:.2f}" for k, v in rows[-1]["caught"].items())
            print(f"{path.stem:52s} {f}: false alarms {rates}; caught {forged}", flush=True)
    for name in RULES:
        rates = [r[name] for r in rows]
        print(f"{name}: mean false-alarm rate {np.mean(rates):.3f}, worst {np.max(rates):.3f}")
    for shift in args.shifts:
        rates = [r["caught"][str(shift)] for r in rows]
        print(
            f"range rule, record raised by {shift}: caught {np.mean(rates):.3f} on average, "
            f"{np.min(rates):.3f} at least"
        )
    if args.out is not None:
        summary = {
            k: {"mean": float(np.mean([r[k] for r in rows])), "worst": max(r[k] for r in rows)}
            for k in RULES
        }
        summary["range_caught"] = {
            str(k): {
                "mean": float(np.mean([r["caught"][str(k)] for r in rows])),
                "least": min(r["caught"][str(k)] for r in rows),
            }
            for k in args.shifts
        }
        command = "python benchmarks/verify_false_alarms.py " + " ".join(
            f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items()
            if k != "out"
        )
        args.out.write_text(
            json.dumps({"command": command, "summary": summary, "rows": rows}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
