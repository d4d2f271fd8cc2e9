"""Compile seconds and training env steps/s of ROTATE's two jitted phases, per task.

Each task runs a ROTATE preset (default `quick`): the seconds to initialise a run, to trace and
compile the teammate-generation phase and the ego-update phase (each one jitted call holding all
of a phase's PPO updates), and the env steps per second of one whole phase of each, measured on
a second call of the compiled phase. Teammate-phase steps count all four rollouts of every
update (SP, XP, SXP, XSP: `RotateConfig.teammate_batch_size`); the ego phase counts its one
rollout; "iteration" is both phases together. The machine may be shared: numbers are noisy.

    python benchmarks/rotate_throughput.py [--tasks lbf,cramped_room] [--preset quick]
        [--teammate-updates N] [--ego-updates N] [--seeds S] [--out results.txt]

`--teammate-updates`/`--ego-updates` shorten the phases (the compile time hardly depends on
them); by default the preset's own budgets run. The table goes to stdout and to `--out`.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from aht_bench import __version__
from aht_bench.algorithms import rotate
from aht_bench.training.rollout import init_params


def _fresh(net, num_seeds: int, seed: int):
    keys = jax.random.split(jax.random.PRNGKey(seed), num_seeds)
    return jax.tree.map(lambda *xs: jnp.stack(xs), *[init_params(net, k) for k in keys])


def measure(
    task: str, preset: str, seeds: int, teammate_updates: int | None, ego_updates: int | None
) -> dict:
    config = rotate.preset(preset, task)
    if teammate_updates is not None:
        config = dataclasses.replace(
            config, teammate_timesteps=teammate_updates * config.teammate_batch_size
        )
    if ego_updates is not None:
        config = dataclasses.replace(
            config, ego_timesteps=ego_updates * config.num_envs * config.rollout_length
        )
    start = time.perf_counter()
    state = rotate.init_seeds(jax.random.PRNGKey(0), config, seeds)
    nets = rotate.networks(config)
    teammate, best_response, ego = (
        _fresh(nets.teammate, seeds, 1),
        _fresh(nets.best_response, seeds, 2),
        _fresh(nets.ego, seeds, 3),
    )
    keys = jax.random.split(jax.random.PRNGKey(4), seeds)
    jax.block_until_ready((state, teammate, best_response, ego))
    init_s = time.perf_counter() - start

    start = time.perf_counter()
    setup = rotate.setup(config)
    teammate_phase = rotate.core._teammate_phase_seeds.lower(
        state, teammate, best_response, keys, setup
    ).compile()
    compile_teammate_s = time.perf_counter() - start
    start = time.perf_counter()
    ego_phase = rotate.core._ego_phase_seeds.lower(state, ego, keys, setup).compile()
    compile_ego_s = time.perf_counter() - start

    start = time.perf_counter()
    after, _ = teammate_phase(state, teammate, best_response, keys)
    jax.block_until_ready(after)
    teammate_s = time.perf_counter() - start
    start = time.perf_counter()
    final, _ = ego_phase(after, ego, keys)
    jax.block_until_ready(final)
    ego_s = time.perf_counter() - start

    teammate_steps = seeds * config.teammate_updates * config.teammate_batch_size
    ego_steps = seeds * config.ego_updates * config.num_envs * config.rollout_length
    return {
        "task": config.task_id,
        "preset": preset,
        "variant": config.variant,
        "seeds": seeds,
        "num_envs": config.num_envs,
        "rollout_length": config.rollout_length,
        "teammate_updates": config.teammate_updates,
        "ego_updates": config.ego_updates,
        "init_s": round(init_s, 1),
        "compile_teammate_s": round(compile_teammate_s, 1),
        "compile_ego_s": round(compile_ego_s, 1),
        "teammate_steps_per_s": round(teammate_steps / teammate_s),
        "ego_steps_per_s": round(ego_steps / ego_s),
        "iteration_steps_per_s": round((teammate_steps + ego_steps) / (teammate_s + ego_s)),
        "teammate_phase_s": round(teammate_s, 1),
        "ego_phase_s": round(ego_s, 1),
    }


def _table(rows: list[dict]) -> str:
    head = (
        f"{'task':<28} {'preset':<7} {'envs':>4} {'seeds':>5} {'tm upd':>6} {'ego upd':>7} "
        f"{'init s':>6} {'compile tm s':>12} {'compile ego s':>13} {'teammate steps/s':>16} "
        f"{'ego steps/s':>11} {'iteration steps/s':>17}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['task']:<28} {r['preset']:<7} {r['num_envs']:>4} {r['seeds']:>5} "
            f"{r['teammate_updates']:>6} {r['ego_updates']:>7} {r['init_s']:>6.1f} "
            f"{r['compile_teammate_s']:>12.1f} {r['compile_ego_s']:>13.1f} "
            f"{r['teammate_steps_per_s']:>16,} {r['ego_steps_per_s']:>11,} "
            f"{r['iteration_steps_per_s']:>17,}"
        )
    return "\n".join(lines)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", default="lbf-v1", help="comma-separated ids/aliases")
    parser.add_argument("--preset", default="quick", choices=sorted(rotate.PRESETS))
    parser.add_argument("--seeds", type=_positive, default=1, help="seeds vmapped in one call")
    parser.add_argument("--teammate-updates", type=_positive, help="default: the preset's")
    parser.add_argument("--ego-updates", type=_positive, help="default: the preset's")
    parser.add_argument("--out", type=Path, help="write the table and settings here")
    args = parser.parse_args(argv)
    rows = [
        measure(task.strip(), args.preset, args.seeds, args.teammate_updates, args.ego_updates)
        for task in args.tasks.split(",")
        if task.strip()
    ]
    table = _table(rows)
    print(table)
    if args.out is not None:
        about = (
            f"aht-bench {__version__}, jax {jax.__version__} ({jax.default_backend()}: "
            f"{', '.join(str(d) for d in jax.devices())}), python {sys.version.split()[0]}, "
            f"{platform.machine()}; command: python benchmarks/rotate_throughput.py "
            f"{' '.join(argv if argv is not None else sys.argv[1:])}"
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n\n" + about + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
