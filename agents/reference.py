"""Train, bundle and score the reference agents: every method on every task (issue 9).

    python agents/reference.py train  --runs RUNS [--methods rotate,fcp] [--tasks lbf]
    python agents/reference.py bundle --runs RUNS [--methods ...] [--tasks ...]
    python agents/reference.py score  [--methods ...] [--tasks ...] [--episodes 64]
    python agents/reference.py status --runs RUNS
    python agents/reference.py all    --runs RUNS      # train, bundle and score, pair by pair

`train` runs `aht-bench train METHOD --task T --preset quick --seeds 3 --seed 0 --out
RUNS/METHOD-T` for every pair (the three seeds vmapped in one call: keys
`jax.random.split(jax.random.PRNGKey(0), 3)`), resuming a run that a kill left unfinished and
skipping finished ones, so it can be stopped and started again at any time.

`bundle` copies each finished run's ego agents into `agents/<method>/<task>/`:
`seed{0,1,2}-ego.safetensors` with their JSON cards (sha256-verified on load), the run's
`curve.png` and `metrics.jsonl` (the training curves) and `card.json` (method, preset, budget
in env steps per seed, seeds, wall time, package and JAX versions, the command and the resolved
config). ROTATE's generated populations stay in the run folder.

`score` evaluates each bundled agent's three seeds together against the task's heldout v1 set
(`aht-bench evaluate seed0-ego.safetensors seed1-... seed2-... --task T`: CIs over the seeds)
and submits the record to the leaderboard as "<Method> (quick)" (`--replace`), then
re-renders the leaderboard (`aht-bench leaderboard render`).

`all` goes through the pairs in the same order and, after each finished run, bundles and scores
it before training the next: left running, it fills `agents/` and the leaderboard one pair at a
time (commit them as they come).

Every step shells out to the `aht-bench` next to this Python (the project's `.venv`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

AGENTS = Path(__file__).resolve().parent
REPO = AGENTS.parent
METHODS = {
    "rotate": "ROTATE",
    "fcp": "FCP",
    "brdiv": "BRDiv",
    "comedi": "CoMeDi",
    "paired": "PAIRED",
    "minimax": "Minimax Return",
    "cole": "COLE",
}
TASKS = {
    "lbf": "lbf-v1",
    "cramped_room": "overcooked-cramped_room-v1",
    "asymm_advantages": "overcooked-asymm_advantages-v1",
    "coord_ring": "overcooked-coord_ring-v1",
    "forced_coord": "overcooked-forced_coord-v1",
    "counter_circuit": "overcooked-counter_circuit-v1",
}
PRESET = "quick"
NUM_SEEDS = 3
BASE_SEED = 0
CARD_FORMAT = "aht-bench-reference-agent"


def _cli() -> str:
    found = Path(sys.executable).with_name("aht-bench")
    if not found.is_file():
        sys.exit(
            f"no aht-bench next to {sys.executable}; run `make install` and use .venv/bin/python"
        )
    return str(found)


def _pick(value: str | None, known: dict[str, str], what: str) -> list[str]:
    if value is None:
        return list(known)
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def train_command(method: str, task: str, out: Path) -> list[str]:
    """The `aht-bench train` command of one reference run (what the cards record)."""
    return [
        "aht-bench", "train", method, "--task", task, "--preset", PRESET,
        "--seeds", str(NUM_SEEDS), "--seed", str(BASE_SEED), "--out", str(out),
    ]  # fmt: skip


def finished(run: Path) -> bool:
    final = run / "policies" / "final"
    return all((final / f"seed{s}-ego.safetensors").is_file() for s in range(NUM_SEEDS))


def train(runs: Path, methods: list[str], tasks: list[str], then_score: bool = False) -> int:
    runs.mkdir(parents=True, exist_ok=True)
    failed = 0
    for task in tasks:
        for method in methods:
            out = runs / f"{method}-{task}"
            if finished(out):
                if then_score and not (AGENTS / method / task / "result-v1.json").is_file():
                    rc = bundle(runs, [method], [task]) or score([method], [task], 64)
                    if rc:
                        return rc
                continue
            if (out / "run.json").is_file():
                command = [_cli(), "train", method, "--out", str(out), "--resume"]
            else:
                command = [_cli(), *train_command(method, task, out)[1:]]
            print(f"{time.strftime('%H:%M:%S')} {' '.join(command[1:])}", flush=True)
            rc = subprocess.call([*command, "--no-progress"])
            if rc in (130, 143):  # Ctrl-C or SIGTERM: the run saved; stop here
                return rc
            if rc:  # e.g. diverged: say so and go on with the other pairs
                print(f"{method} on {task} stopped with exit code {rc}", file=sys.stderr)
                failed = failed or rc
                continue
            if then_score:
                rc = bundle(runs, [method], [task]) or score([method], [task], 64)
                if rc:
                    return rc
    return failed


def _last_metrics(run: Path) -> dict:
    last = {}
    with (run / "metrics.jsonl").open() as f:
        for line in f:
            try:
                last = json.loads(line)
            except json.JSONDecodeError:  # a torn last line from a kill
                continue
    return last


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bundle(runs: Path, methods: list[str], tasks: list[str]) -> int:
    for task in tasks:
        for method in methods:
            run = runs / f"{method}-{task}"
            if not finished(run):
                print(f"skip {method} on {task}: {run} has not finished")
                continue
            spec = json.loads((run / "run.json").read_text())
            last = _last_metrics(run)
            dest = AGENTS / method / task
            tmp = dest.with_name(f".{task}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            files = {}
            for s in range(NUM_SEEDS):
                for name in (f"seed{s}-ego.safetensors", f"seed{s}-ego.safetensors.json"):
                    shutil.copy2(run / "policies" / "final" / name, tmp / name)
                    files[name] = _sha256(tmp / name)
            for name in ("curve.png", "metrics.jsonl"):
                shutil.copy2(run / name, tmp / name)
                files[name] = _sha256(tmp / name)
            card = {
                "format": CARD_FORMAT,
                "format_version": 1,
                "method": METHODS[method],
                "algorithm": method,
                "task_id": TASKS[task],
                "preset": spec["spec"]["preset"],
                "env_steps_per_seed": last.get("env_steps"),
                "num_seeds": spec["spec"]["num_seeds"],
                "base_seed": spec["spec"]["seed"],
                "seed_keys": f"jax.random.split(jax.random.PRNGKey({spec['spec']['seed']}), "
                f"{spec['spec']['num_seeds']})",
                "wall_seconds": last.get("time_s"),
                "wall_seconds_note": "training calls of all seeds together (vmapped), compile "
                "included, init excluded; from the run's last metrics line",
                "machine": f"{os.cpu_count()} CPUs ({platform.machine()}), no GPU",
                "package_version": spec["package_version"],
                "jax_version": spec["jax_version"],
                "command": " ".join(train_command(method, task, Path(f"runs/{method}-{task}"))),
                "config": spec["config"],
                "files": files,
            }
            (tmp / "card.json").write_text(json.dumps(card, indent=1) + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
            print(f"bundled {method} on {task} -> {dest.relative_to(REPO)}")
    return 0


def score(methods: list[str], tasks: list[str], episodes: int) -> int:
    cli = _cli()
    for task in tasks:
        for method in methods:
            folder = AGENTS / method / task
            if not (folder / "card.json").is_file():
                print(f"skip {method} on {task}: not bundled")
                continue
            card = json.loads((folder / "card.json").read_text())
            seeds = [folder / f"seed{s}-ego.safetensors" for s in range(card["num_seeds"])]
            result = folder / "result-v1.json"
            rc = subprocess.call(
                [cli, "evaluate", *map(str, seeds), "--task", TASKS[task], "--episodes",
                 str(episodes), "--out", str(result), "--no-progress", "--force"]
            )  # fmt: skip
            if rc:
                return rc
            description = (
                f"{card['method']} reference agent, preset {card['preset']}, "
                f"{card['env_steps_per_seed']:,} env steps per seed, seeds "
                f"{card['seed_keys']}; agents/{method}/{task}/"
            )
            rc = subprocess.call(
                [cli, "leaderboard", "submit", str(result), "--name",
                 f"{card['method']} ({card['preset']})", "--description", description, "--replace"]
            )  # fmt: skip
            if rc:
                return rc
    return subprocess.call([cli, "leaderboard", "render"])


def status(runs: Path, methods: list[str], tasks: list[str]) -> int:
    for task in tasks:
        for method in methods:
            run = runs / f"{method}-{task}"
            bundled = (AGENTS / method / task / "card.json").is_file()
            if finished(run):
                state = "finished"
            elif (run / "metrics.jsonl").is_file():
                last = _last_metrics(run)
                state = f"running/stopped at {last.get('env_steps', 0):,} env steps"
            else:
                state = "not started"
            print(f"{method:8} {task:17} {state:40} {'bundled' if bundled else ''}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("train", "bundle", "score", "status", "all"))
    parser.add_argument("--runs", type=Path, help="folder of the training runs")
    parser.add_argument("--methods", help=f"comma-separated, of {', '.join(METHODS)}")
    parser.add_argument("--tasks", help=f"comma-separated, of {', '.join(TASKS)}")
    parser.add_argument("--episodes", type=int, default=64, help="score: episodes per seating")
    args = parser.parse_args(argv)
    methods = _pick(args.methods, METHODS, "method")
    tasks = _pick(args.tasks, TASKS, "task")
    if args.command != "score" and args.runs is None:
        parser.error(f"{args.command} needs --runs FOLDER")
    if args.command in ("train", "all"):
        return train(args.runs, methods, tasks, then_score=args.command == "all")
    if args.command == "bundle":
        return bundle(args.runs, methods, tasks)
    if args.command == "status":
        return status(args.runs, methods, tasks)
    return score(methods, tasks, args.episodes)


if __name__ == "__main__":
    sys.exit(main())
