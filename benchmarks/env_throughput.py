"""Env steps/s of each aht-bench task against its raw backend, measured in the same run.

Both sides do the same work: `--num-envs` envs vmapped, uniform-random actions drawn inside a
jitted `lax.scan` of `--steps` steps, every observation consumed (summed, as a policy would read
it; otherwise XLA drops the observation work on both sides), auto-reset included (aht-bench:
`AutoReset(env)` with p0 starts; JaxMARL: `Overcooked.step`, which auto-resets itself; Jumanji:
its `AutoResetWrapper`).
Runs of the two sides alternate and the median of `--repeats` runs is kept, so the ratio is
robust to the noise of a shared machine. The matrix games are native (no backend): steps/s only.

    python benchmarks/env_throughput.py [--tasks lbf-v1,forced_coord] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from aht_bench import __version__, envs


def _aht_runner(task_id: str, num_envs: int, steps: int) -> Callable[[jax.Array], jax.Array]:
    env = envs.AutoReset(envs.make(task_id))

    @jax.jit
    def run(key):
        state, _ = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def _env_step(state, step_key):
            k_act, k_env = jax.random.split(step_key)
            actions = jax.random.randint(
                k_act, (num_envs, env.num_agents), 0, env.num_actions, jnp.int32
            )
            state, ts = jax.vmap(env.step)(jax.random.split(k_env, num_envs), state, actions)
            return state, ts.reward.sum() + ts.obs.sum()

        _, rewards = jax.lax.scan(_env_step, state, jax.random.split(key, steps))
        return rewards.sum()

    return run


def _jaxmarl_runner(layout: str, num_envs: int, steps: int) -> Callable[[jax.Array], jax.Array]:
    from flax.core.frozen_dict import FrozenDict
    from jaxmarl.environments.overcooked import Overcooked, overcooked_layouts

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # JaxMARL's note about OvercookedV2
        env = Overcooked(layout=FrozenDict(overcooked_layouts[layout]), max_steps=400)

    @jax.jit
    def run(key):
        _, state = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def _env_step(state, step_key):
            k_act, k_env = jax.random.split(step_key)
            a = jax.random.randint(k_act, (num_envs, 2), 0, 6, jnp.int32)
            actions = {"agent_0": a[:, 0], "agent_1": a[:, 1]}
            obs, state, rewards, _, _ = jax.vmap(env.step)(
                jax.random.split(k_env, num_envs), state, actions
            )
            seen = sum(o.sum(dtype=jnp.float32) for o in obs.values())
            return state, rewards["agent_0"].sum() + seen

        _, rewards = jax.lax.scan(_env_step, state, jax.random.split(key, steps))
        return rewards.sum()

    return run


def _jumanji_runner(task_id: str, num_envs: int, steps: int) -> Callable[[jax.Array], jax.Array]:
    from jumanji.environments import LevelBasedForaging
    from jumanji.environments.routing.lbf.generator import RandomGenerator
    from jumanji.wrappers import AutoResetWrapper

    ours = envs.make(task_id)
    fov = {"lbf-po-v1": 2}.get(task_id, 7)
    generator = RandomGenerator(
        grid_size=7,
        fov=fov,
        num_agents=ours.num_agents,
        num_food=3,
        max_agent_level=2,
        force_coop=True,
    )
    env = AutoResetWrapper(LevelBasedForaging(generator=generator, time_limit=100))
    n_agents = ours.num_agents

    @jax.jit
    def run(key):
        state, _ = jax.vmap(env.reset)(jax.random.split(key, num_envs))

        def _env_step(state, step_key):
            actions = jax.random.randint(step_key, (num_envs, n_agents), 0, 6, jnp.int32)
            state, ts = jax.vmap(env.step)(state, actions)
            view = ts.observation.agents_view.sum(dtype=jnp.float32)
            return state, ts.reward.sum() + view + ts.observation.step_count.sum()

        _, rewards = jax.lax.scan(_env_step, state, jax.random.split(key, steps))
        return rewards.sum()

    return run


def _raw_runner(task_id: str, num_envs: int, steps: int):
    if task_id.startswith("overcooked-"):
        layout = task_id.removeprefix("overcooked-").rsplit("-v", 1)[0]
        return "jaxmarl", _jaxmarl_runner(layout, num_envs, steps)
    if task_id.startswith("lbf"):
        return "jumanji", _jumanji_runner(task_id, num_envs, steps)
    return None, None


def _time_once(run: Callable[[jax.Array], jax.Array], seed: int) -> float:
    start = time.perf_counter()
    run(jax.random.PRNGKey(seed)).block_until_ready()
    return time.perf_counter() - start


def measure(task_id: str, num_envs: int, steps: int, repeats: int) -> dict:
    ours = _aht_runner(task_id, num_envs, steps)
    backend, raw = _raw_runner(task_id, num_envs, steps)
    _time_once(ours, 0)  # compile
    if raw is not None:
        _time_once(raw, 0)
    ours_t, raw_t = [], []
    for r in range(repeats):  # alternate the two sides so machine noise hits both
        ours_t.append(_time_once(ours, r + 1))
        if raw is not None:
            raw_t.append(_time_once(raw, r + 1))
    n = num_envs * steps
    row = {
        "task": task_id,
        "backend": backend or "native",
        "aht_steps_per_s": n / statistics.median(ours_t),
    }
    if raw is not None:
        row["raw_steps_per_s"] = n / statistics.median(raw_t)
        row["ratio"] = row["aht_steps_per_s"] / row["raw_steps_per_s"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="all", help="comma-separated ids/aliases, or 'all'")
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=256, help="steps per timed scan")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, help="write the rows and settings as JSON here")
    args = parser.parse_args(argv)
    if args.num_envs < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--num-envs, --steps and --repeats must be positive")
    task_ids = (
        envs.registered_ids()
        if args.tasks == "all"
        else [envs.resolve(t.strip()) for t in args.tasks.split(",")]
    )
    print(f"{'task':32s} {'backend':8s} {'aht-bench/s':>12s} {'raw/s':>12s} {'ratio':>6s}")
    rows = []
    for task_id in task_ids:
        row = measure(task_id, args.num_envs, args.steps, args.repeats)
        rows.append(row)
        raw = f"{row['raw_steps_per_s']:12,.0f}" if "ratio" in row else f"{'-':>12s}"
        ratio = f"{row['ratio']:6.2f}" if "ratio" in row else f"{'-':>6s}"
        print(f"{task_id:32s} {row['backend']:8s} {row['aht_steps_per_s']:12,.0f} {raw} {ratio}")
        sys.stdout.flush()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        settings = {k: v for k, v in vars(args).items() if k != "out"}
        meta = {
            "command": "python benchmarks/env_throughput.py " + " ".join(argv or sys.argv[1:]),
            "settings": settings,
            "aht_bench": __version__,
            "jax": jax.__version__,
            "device": str(jax.devices()[0]),
            "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
