"""Steps/s of the gymnax shell in a jitted, vmapped rollout against the Gymnasium vector env
(`EgoVectorEnv`) on the same task and teammate, measured in the same run.

Three sides, each playing `--steps` steps of `--num-envs` envs with uniform-random ego actions
drawn beforehand, the teammate (a network by default: heldout v2's ippo_mlp_0) acting inside the
step and ended episodes restarting from the task's p0:

- `gymnax`: `aht_bench.adapters.gymnax.EgoGymnaxEnv` inside gymnax's `LogWrapper`, as a
  PureJaxRL-style loop runs it: `jit` of a `lax.scan` over `vmap(env.step)`;
- `vector`: `EgoVectorEnv.step` called once per step from Python, observations and rewards read
  at the NumPy boundary (what a Gymnasium learner gets);
- `vector_scan`: the same jitted per-step function `EgoVectorEnv.step` calls
  (`build_vector_functions`), under the same `jit(lax.scan)` as the gymnax side: the device work
  of the vector env without its host round trips, the like-for-like comparison.

Runs of the sides alternate and the median of `--repeats` runs is kept, so the ratios are robust
to the noise of a shared machine; compile time is excluded (one warm-up run each).

    python benchmarks/gymnax_throughput.py [--task overcooked-cramped_room-v2]
        [--teammate heldout:v2:ippo_mlp_0] [--num-envs 64] [--steps 400] [--out results.json]
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

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench import __version__
from aht_bench.adapters import gymnax as aht_gymnax
from aht_bench.adapters.vector import EgoVectorEnv, build_vector_functions


def _gymnax_side(task: str, teammate: str, num_envs: int):
    from gymnax.wrappers.purerl import LogWrapper  # after aht_bench.adapters.gymnax (six)

    env, params = aht_gymnax.make(task, teammate)
    wrapped = LogWrapper(env)

    @jax.jit
    def run(key, actions):
        key_reset, key_steps = jax.random.split(key)
        _, state = jax.vmap(wrapped.reset, (0, None))(jax.random.split(key_reset, num_envs), params)

        def _env_step(state, xs):
            key, action = xs
            obs, state, reward, _, _, _ = jax.vmap(wrapped.step, (0, 0, 0, None))(
                jax.random.split(key, num_envs), state, action, params
            )
            return state, obs[:, 0].sum() + reward.sum()  # what a learner reads

        keys = jax.random.split(key_steps, actions.shape[0])
        return jax.lax.scan(_env_step, state, (keys, actions))[1].sum()

    def once(seed: int, actions: np.ndarray) -> float:
        a = jnp.asarray(actions)
        start = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(seed), a))
        return time.perf_counter() - start

    return once


def _vector_side(task: str, teammate: str, num_envs: int):
    envs = EgoVectorEnv(task, num_envs=num_envs, teammate=teammate)

    def once(seed: int, actions: np.ndarray) -> float:
        envs.reset(seed=seed)
        start = time.perf_counter()
        seen = 0.0
        for a in actions:
            obs, reward, _, _, _ = envs.step(a)
            seen += float(obs[:, 0].sum() + reward.sum())
        return time.perf_counter() - start

    return once, envs


def _vector_scan_side(envs: EgoVectorEnv, num_envs: int):
    policy, params = envs.teammate, envs.teammate_params
    reset_fn, step_fn = build_vector_functions(envs.task, envs.seat, policy, None)
    num_mates = envs.task.num_agents - 1

    @jax.jit
    def run(seeds, mate_seeds, actions):
        carry, _ = reset_fn(seeds, mate_seeds)

        def _env_step(carry, action):
            carry, out = step_fn(params, carry, action)
            return carry, out.now.obs[:, 0].sum() + out.reward.sum()

        return jax.lax.scan(_env_step, carry, actions)[1].sum()

    def once(seed: int, actions: np.ndarray) -> float:
        rng = np.random.default_rng(seed)
        seeds = rng.integers(2**32, size=num_envs, dtype=np.uint32)
        mate_seeds = rng.integers(2**31, size=(num_envs, num_mates)).astype(np.uint32)
        a = jnp.asarray(actions, jnp.int32)
        start = time.perf_counter()
        jax.block_until_ready(run(seeds, mate_seeds, a))
        return time.perf_counter() - start

    return once


def measure(task: str, teammate: str, num_envs: int, steps: int, repeats: int, seed: int) -> dict:
    vector, envs = _vector_side(task, teammate, num_envs)
    sides = {
        "gymnax": _gymnax_side(task, teammate, num_envs),
        "vector": vector,
        "vector_scan": _vector_scan_side(envs, num_envs),
    }
    rng = np.random.default_rng(seed)
    num_actions = envs.single_action_space.n  # type: ignore[attr-defined]
    for once in sides.values():  # compile and warm up, with the timed shapes
        once(seed, rng.integers(num_actions, size=(steps, num_envs)))
    times: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(repeats):  # alternate the sides so machine noise hits all of them
        actions = rng.integers(num_actions, size=(steps, num_envs))
        for name, once in sides.items():
            times[name].append(once(seed + r, actions))
    n = num_envs * steps
    rate = {name: n / statistics.median(t) for name, t in times.items()}
    envs.close()
    return {
        "task": task,
        "teammate": teammate,
        "num_envs": num_envs,
        "steps": steps,
        "gymnax_steps_per_s": rate["gymnax"],
        "vector_steps_per_s": rate["vector"],
        "vector_scan_steps_per_s": rate["vector_scan"],
        "ratio_vs_vector": rate["gymnax"] / rate["vector"],
        "ratio_vs_vector_scan": rate["gymnax"] / rate["vector_scan"],
        "times_s": times,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", default="overcooked-cramped_room-v2")
    parser.add_argument("--teammate", default="heldout:v2:ippo_mlp_0")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=400, help="steps per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the row and settings as JSON here")
    args = parser.parse_args(argv)
    if args.num_envs < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--num-envs, --steps and --repeats must be positive")
    load = os.getloadavg()
    row = measure(args.task, args.teammate, args.num_envs, args.steps, args.repeats, args.seed)
    print(
        f"{'task':28s} {'teammate':24s} {'envs':>5s} {'gymnax/s':>10s} {'vector/s':>10s} "
        f"{'scan/s':>10s} {'vs vector':>9s} {'vs scan':>8s}"
    )
    print(
        f"{row['task']:28s} {row['teammate']:24s} {row['num_envs']:5d} "
        f"{row['gymnax_steps_per_s']:10,.0f} {row['vector_steps_per_s']:10,.0f} "
        f"{row['vector_scan_steps_per_s']:10,.0f} {row['ratio_vs_vector']:8.2f}x "
        f"{row['ratio_vs_vector_scan']:7.2f}x"
    )
    print(
        f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        settings = {k: v for k, v in vars(args).items() if k != "out"}
        meta = {
            "command": "python benchmarks/gymnax_throughput.py " + " ".join(argv or sys.argv[1:]),
            "settings": settings,
            "aht_bench": __version__,
            "jax": jax.__version__,
            "device": str(jax.devices()[0]),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average_before": load,
            "load_average_after": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        args.out.write_text(json.dumps({"meta": meta, "rows": [row]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
