"""The v2 budget study (issue 51): ROTATE and FCP at 1x, 2x and 4x the quick budget on LBF and
cramped_room (v2), three seeds each, scored iteration by iteration against a development set.

    .venv/bin/python benchmarks/budget_study.py train  --runs runs/budget_study   # resumable
    .venv/bin/python benchmarks/budget_study.py score  --runs runs/budget_study   # resumable
    .venv/bin/python benchmarks/budget_study.py report --runs runs/budget_study \
        --out benchmarks/results/budget_study_v2.md

What is trained (quick's per-step settings throughout: 64 envs x 128 steps, 4 epochs x 4
minibatches; the three seeds vmapped, keys `jax.random.split(jax.random.PRNGKey(0), 3)`):

- ROTATE: one run of 4 x quick's iterations (16; quick has 4), each iteration quick's teammate
  and ego steps, with every iteration's ego kept (`--keep-every 1`). Its iterations 4 and 8
  are the 1x and 2x budgets: up to there the run is the 1x/2x run but for the capacity of its
  teammate buffer (16 slots instead of 4 or 8; the slots not yet filled have draw weight 0).
  The teammate objective is Eq. 7 on both tasks (the paper's; quick's LBF preset keeps the
  pre-Eq. 7 objective of the v1 bundles).
- FCP: three runs, k = 1, 2, 4: k x quick's IPPO teams (quick's steps per team) and k x quick's
  ego steps in k x quick's ego iterations (the same ego chunk size), every iteration kept.

`score` evaluates every kept ego (the three seeds together) against the task's development
set, `heldout/lbf-v1/dev` and `heldout/overcooked-cramped_room-v2/dev`, never the heldout set,
with `--episodes` episodes per member and seating (`aht-bench experiment diagnose --dev`); each
record goes next to the policies (`policies/iteration-NNNNNN/dev.json`). `report` writes the
study: per run and iteration the generated teammates' self-play return (ROTATE: `sp_return` of
the iteration's new teammate; FCP: the IPPO teams' self-play return), the ego's mean normalised
return against the development set with its 95% CI over seeds, and the training wall time, as
tables and curves.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TASKS = {"lbf": "lbf-v1", "cramped_room": "overcooked-cramped_room-v2"}
DEV_SET = "dev"
SCALES = (1, 2, 4)
NUM_SEEDS = 3
# quick's budgets (aht_bench/algorithms/{rotate,fcp}/presets.py), read here only to scale them
ROTATE_QUICK_ITERATIONS = 4
FCP_QUICK = {  # task -> (IPPO teams, ego env steps, ego iterations)
    "lbf": (4, 3_000_000, 4),
    "cramped_room": (3, 1_600_000, 4),
}


def runs_of(tasks: list[str]) -> list[tuple[str, list[str]]]:
    """(run name, `aht-bench train` arguments) of every run of the study on `tasks`."""
    out = []
    for task in tasks:
        common = ["--task", task, "--preset", "quick", "--seeds", str(NUM_SEEDS), "--seed", "0"]
        iterations = ROTATE_QUICK_ITERATIONS * max(SCALES)
        rotate = ["rotate", *common, "--set", f"iterations={iterations}"]
        rotate += ["--set", "teammate_objective=eq7"]
        out.append((f"rotate-{task}-4x", rotate))
        teams, ego_steps, ego_iterations = FCP_QUICK[task]
        for k in SCALES:
            fcp = ["fcp", *common, "--set", f"num_ippo_seeds={teams * k}"]
            fcp += ["--set", f"ego_timesteps={ego_steps * k}"]
            fcp += ["--set", f"ego_iterations={ego_iterations * k}"]
            out.append((f"fcp-{task}-{k}x", fcp))
    return out


def _cli() -> str:
    found = Path(sys.executable).with_name("aht-bench")
    if not found.is_file():
        sys.exit(f"no aht-bench next to {sys.executable}; use the project's .venv/bin/python")
    return str(found)


def finished(run: Path) -> bool:
    return (run / "policies" / "final" / f"seed{NUM_SEEDS - 1}-ego.safetensors").is_file()


def train(runs: Path, tasks: list[str]) -> int:
    runs.mkdir(parents=True, exist_ok=True)
    for name, args in runs_of(tasks):
        out = runs / name
        if finished(out):
            continue
        if (out / "run.json").is_file():
            command = [_cli(), "train", args[0], "--out", str(out), "--resume"]
        else:
            command = [_cli(), "train", *args, "--out", str(out)]
        command += ["--keep-every", "1", "--no-progress"]
        print(f"{time.strftime('%H:%M:%S')} {' '.join(command[1:])}", flush=True)
        rc = subprocess.call(command)
        if rc:
            print(f"{name} stopped with exit code {rc}", file=sys.stderr)
            return rc
    return 0


def score(runs: Path, tasks: list[str], episodes: int) -> int:
    """Every kept ego of the study's runs against the task's development set, with the
    diagnostics of each run (`aht-bench experiment diagnose RUN --dev dev`: the ego's curve,
    the generated teammates' self-play return, `diagnostics.png` in the run folder)."""
    cli = _cli()
    for name, _ in runs_of(tasks):
        run = runs / name
        if not (run / "metrics.jsonl").is_file():
            continue
        print(f"{time.strftime('%H:%M:%S')} {name}", flush=True)
        command = [cli, "experiment", "diagnose", str(run), "--dev", DEV_SET]
        rc = subprocess.call([*command, "--episodes", str(episodes)])
        if rc:
            return rc
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["train", "score", "report"])
    parser.add_argument("--runs", type=Path, default=REPO / "runs" / "budget_study")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/budget_study_v2.md")
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        parser.error(f"unknown task {unknown[0]!r}; known: {', '.join(TASKS)}")
    if args.command == "train":
        return train(args.runs, tasks)
    if args.command == "score":
        return score(args.runs, tasks, args.episodes)
    from budget_study_report import write_report  # noqa: PLC0415 (matplotlib only here)

    return write_report(args.runs, runs_of(tasks), args.out)


if __name__ == "__main__":
    sys.exit(main())
