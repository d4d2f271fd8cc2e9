"""Steps/s of the jitted Gymnasium vector env against Gymnasium's SyncVectorEnv of `EgoEnv`s,
measured in the same run.

Both sides are built by `gymnasium.make_vec` from the same id, teammate and seed, and auto-reset
the same way (``AutoresetMode.SAME_STEP``): `"vector_entry_point"` (aht-bench's
`EgoVectorEnv`: the teammate acts, the task steps and ended episodes restart inside one jitted
call for all envs) and `"sync"` (one `EgoEnv` per env, stepped in a Python loop, each with its
teammate run by a `PolicyRunner`). Each timed run plays `--steps` steps of uniform-random ego
actions drawn beforehand, and reads every observation and reward at the NumPy boundary (what a
learner gets). Runs of the two sides alternate and the median of `--repeats` runs is kept, so the
ratio is robust to the noise of a shared machine.

    python benchmarks/gym_vector.py [--task overcooked-cramped_room-v2]
        [--teammate heldout:v2:ippo_mlp_0] [--num-envs 64] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import gymnasium
import jax
import numpy as np
from gymnasium.vector import AutoresetMode

import aht_bench.adapters.gym  # noqa: F401  (registers the aht_bench/<id> environments)
from aht_bench import __version__


def _make(task: str, teammate: str, num_envs: int, mode: str) -> gymnasium.vector.VectorEnv:
    kwargs = {} if mode == "vector_entry_point" else {"autoreset_mode": AutoresetMode.SAME_STEP}
    return gymnasium.make_vec(
        f"aht_bench/{task}",
        num_envs=num_envs,
        vectorization_mode=mode,
        vector_kwargs=kwargs,
        teammate=teammate,
    )


def _time_once(envs: gymnasium.vector.VectorEnv, actions: np.ndarray) -> float:
    start = time.perf_counter()
    seen = 0.0
    for a in actions:
        obs, reward, _, _, _ = envs.step(a)
        seen += float(obs[:, 0].sum() + reward.sum())  # the learner reads what comes back
    del seen
    return time.perf_counter() - start


def measure(task: str, teammate: str, num_envs: int, steps: int, repeats: int, seed: int) -> dict:
    sides = {m: _make(task, teammate, num_envs, m) for m in ("vector_entry_point", "sync")}
    rng = np.random.default_rng(seed)
    num_actions = sides["sync"].single_action_space.n  # type: ignore[attr-defined]
    for envs in sides.values():  # compile and warm up
        envs.reset(seed=seed)
        _time_once(envs, rng.integers(num_actions, size=(3, num_envs)))
    times: dict[str, list[float]] = {m: [] for m in sides}
    for _ in range(repeats):  # alternate the two sides so machine noise hits both
        actions = rng.integers(num_actions, size=(steps, num_envs))
        for mode, envs in sides.items():
            times[mode].append(_time_once(envs, actions))
    n = num_envs * steps
    vector = n / statistics.median(times["vector_entry_point"])
    sync = n / statistics.median(times["sync"])
    for envs in sides.values():
        envs.close()
    return {
        "task": task,
        "teammate": teammate,
        "num_envs": num_envs,
        "vector_steps_per_s": vector,
        "sync_steps_per_s": sync,
        "ratio": vector / sync,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", default="overcooked-cramped_room-v2")
    parser.add_argument("--teammate", default="heldout:v2:ippo_mlp_0")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100, help="steps per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the row and settings as JSON here")
    args = parser.parse_args(argv)
    if args.num_envs < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--num-envs, --steps and --repeats must be positive")
    row = measure(args.task, args.teammate, args.num_envs, args.steps, args.repeats, args.seed)
    print(f"{'task':28s} {'teammate':24s} {'envs':>5s} {'vector/s':>10s} {'sync/s':>9s} ratio")
    print(
        f"{row['task']:28s} {row['teammate']:24s} {row['num_envs']:5d} "
        f"{row['vector_steps_per_s']:10,.0f} {row['sync_steps_per_s']:9,.0f} "
        f"{row['ratio']:5.1f}x"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        settings = {k: v for k, v in vars(args).items() if k != "out"}
        meta = {
            "command": "python benchmarks/gym_vector.py " + " ".join(argv or sys.argv[1:]),
            "settings": settings,
            "aht_bench": __version__,
            "jax": jax.__version__,
            "gymnasium": gymnasium.__version__,
            "device": str(jax.devices()[0]),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        args.out.write_text(json.dumps({"meta": meta, "rows": [row]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
