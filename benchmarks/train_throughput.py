"""Env steps/s and compile seconds of IPPO training, per task.

Each task runs the `quick` IPPO preset (its network and PPO settings) with `--num-envs` parallel
envs (default 64) and `--seeds` seeds vmapped in one call (default 1). Measured: the seconds to
initialise the run, to compile one update, and the env steps per second of whole updates (rollout
+ GAE + PPO epochs), the median of `--repeats` timings of `--updates` updates each. With more
than one seed, steps/s counts every seed's env steps. For reference each row also gives the
env-only rate (uniform-random actions, same envs, auto-reset) measured in the same process.

    python benchmarks/train_throughput.py [--tasks lbf-v1,cramped_room] [--out results.json]

The JSON goes to `--out`; a text table goes next to it (`.txt`) and to stdout.

`--breakdown` also times the parts of one update on their own (each jitted separately, one
seed): the rollout (env steps, the agents' actions and values), GAE (the agents' streams), and
the PPO epochs of both agents, in seconds per update.

No peer is measured here: JaxAHT's rate, with the same settings, in the same run, is
`benchmarks/peer_throughput.py`'s (the "vs peer" column this script once printed divided by
hard-coded numbers measured on another day).

`--cpus N` pins the process to N of the CPUs it may use before JAX starts; XLA sizes its CPU
thread pool from them. No XLA flags are set. On a machine shared with other busy jobs,
`--cpus 1` avoids handing work to a thread whose core is taken and measured faster here.
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

from aht_bench import __version__
from aht_bench.algorithms import ippo
from aht_bench.training import init_seeds, presets, update_seeds
from aht_bench.training.config import IPPOConfig
from aht_bench.training.ppo import make_optimizer, make_stream, ppo_update
from aht_bench.training.rollout import Pairing, make_env, rollout

DEFAULT_TASKS = ("lbf-v1", "overcooked-cramped_room-v1")


def _env_only_rate(task_id: str, num_envs: int, steps: int, repeats: int) -> float:
    env = make_env(task_id)

    @jax.jit
    def run(key):
        state, _ = jax.vmap(env.reset)(jax.random.split(key, num_envs))
        keys = jax.random.split(key, (steps, num_envs))
        actions = jax.random.randint(key, (steps, num_envs, env.num_agents), 0, env.num_actions)

        def _env_step(state, inputs):
            step_keys, a = inputs
            state, ts = jax.vmap(env.step)(step_keys, state, a)
            return state, ts.reward.sum() + ts.obs.sum()

        return jax.lax.scan(_env_step, state, (keys, actions))[1].sum()

    jax.block_until_ready(run(jax.random.PRNGKey(0)))
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(i)))
        times.append(time.perf_counter() - start)
    return num_envs * steps / statistics.median(times)


def _median_seconds(fn, args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _breakdown(config: IPPOConfig, repeats: int) -> dict:
    """Seconds per update of the rollout, GAE and PPO parts of `ippo.update`, timed apart."""
    env = make_env(config.task_id)
    network = ippo.network(config)
    agents = env.num_agents
    pairing = Pairing(
        policies=(network,) * agents,
        learners=tuple(range(agents)),
        shaped_reward_coef=config.shaped_reward_coef,
    )
    optimizer = make_optimizer(config.ppo, config.num_updates)
    state = ippo.init(jax.random.PRNGKey(0), config)
    params = tuple(jax.tree.map(lambda x, i=i: x[i], state.learners.params) for i in range(agents))

    @jax.jit
    def _rollout(rollout_state, key):
        return rollout(env, pairing, params, rollout_state, key, config.rollout_length)[1]

    @jax.jit
    def _gae(trajectory):
        streams = [make_stream(trajectory, i, config.ppo) for i in range(agents)]
        return jax.tree.map(lambda *xs: jax.numpy.stack(xs), *streams)

    @jax.jit
    def _ppo(learners, stacked, key):
        def _agent(learner, stream, agent_key):
            return ppo_update(network, learner, (stream,), agent_key, config.ppo, optimizer)

        return jax.vmap(_agent)(learners, stacked, jax.random.split(key, agents))

    trajectory = _rollout(state.rollout, state.key)
    stacked = _gae(trajectory)
    return {
        "rollout": round(_median_seconds(_rollout, (state.rollout, state.key), repeats), 4),
        "gae": round(_median_seconds(_gae, (trajectory,), repeats), 4),
        "ppo": round(_median_seconds(_ppo, (state.learners, stacked, state.key), repeats), 4),
    }


def measure(
    task: str, num_envs: int, seeds: int, updates: int, repeats: int, breakdown: bool = False
) -> dict:
    base = presets.get("ippo", "quick", task)
    rollout_length = base.rollout_length
    config = presets.get(
        "ippo",
        "quick",
        task,
        num_envs=num_envs,
        total_timesteps=num_envs * rollout_length * max(updates * (repeats + 1), 1),
    )
    assert isinstance(config, IPPOConfig)
    start = time.perf_counter()
    state = init_seeds(jax.random.split(jax.random.PRNGKey(0), seeds), ippo.init, config)
    jax.block_until_ready(state)
    init_s = time.perf_counter() - start
    start = time.perf_counter()
    compiled = update_seeds.lower(state, ippo.update, config).compile()
    compile_s = time.perf_counter() - start
    state, _ = compiled(state)  # warm-up
    jax.block_until_ready(state)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(updates):
            state, _ = compiled(state)
        jax.block_until_ready(state)
        times.append(time.perf_counter() - start)
    steps = seeds * updates * config.batch_size
    rate = steps / statistics.median(times)
    row = {
        "task": config.task_id,
        "num_envs": num_envs,
        "seeds": seeds,
        "rollout_length": rollout_length,
        "hidden": list(config.hidden),
        "epochs": config.ppo.num_epochs,
        "minibatches": config.ppo.num_minibatches,
        "init_s": round(init_s, 2),
        "compile_s": round(compile_s, 2),
        "steps_per_s": round(rate),
        "env_only_steps_per_s": round(
            _env_only_rate(config.task_id, num_envs * seeds, rollout_length, repeats)
        ),
    }
    if breakdown:
        row["breakdown_s"] = _breakdown(config, max(repeats * updates, 3))
    return row


def _table(rows: list[dict]) -> str:
    head = (
        f"{'task':<30} {'envs':>4} {'seeds':>5} {'ep x mb':>7} {'compile s':>9} {'init s':>6} "
        f"{'train steps/s':>13} {'env-only/s':>10}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['task']:<30} {r['num_envs']:>4} {r['seeds']:>5} "
            f"{str(r['epochs']) + 'x' + str(r['minibatches']):>7} {r['compile_s']:>9.1f} "
            f"{r['init_s']:>6.1f} {r['steps_per_s']:>13,} {r['env_only_steps_per_s']:>10,}"
        )
    parts = [r for r in rows if "breakdown_s" in r]
    if parts:
        lines += ["", f"{'seconds per update':<30} {'rollout':>8} {'gae':>8} {'ppo':>8} {'sum':>8}"]
        for r in parts:
            b = r["breakdown_s"]
            total = b["rollout"] + b["gae"] + b["ppo"]
            lines.append(
                f"{r['task']:<30} {b['rollout']:>8.3f} {b['gae']:>8.3f} {b['ppo']:>8.3f} "
                f"{total:>8.3f}"
            )
    return "\n".join(lines)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--tasks",
        default=",".join(DEFAULT_TASKS),
        help="comma-separated ids/aliases with a quick IPPO preset",
    )
    parser.add_argument("--num-envs", type=_positive, default=64)
    parser.add_argument("--seeds", type=_positive, default=1, help="seeds vmapped in one call")
    parser.add_argument("--updates", type=_positive, default=5, help="updates per timing")
    parser.add_argument("--repeats", type=_positive, default=3)
    parser.add_argument("--out", type=Path, help="write the rows as JSON here (and a .txt)")
    parser.add_argument(
        "--breakdown", action="store_true", help="also time rollout, GAE and PPO apart"
    )
    parser.add_argument(
        "--cpus", type=_positive, help="pin the process to this many CPUs (default: all)"
    )
    args = parser.parse_args(argv)
    if args.cpus is not None:
        allowed = sorted(os.sched_getaffinity(0))
        if args.cpus > len(allowed):
            parser.error(f"--cpus {args.cpus}: only {len(allowed)} CPUs are available")
        os.sched_setaffinity(0, allowed[: args.cpus])
    rows = [
        measure(task.strip(), args.num_envs, args.seeds, args.updates, args.repeats, args.breakdown)
        for task in args.tasks.split(",")
        if task.strip()
    ]
    table = _table(rows)
    print(table)
    if args.out is not None:
        record = {
            "rows": rows,
            "settings": {
                "num_envs": args.num_envs,
                "seeds": args.seeds,
                "updates": args.updates,
                "repeats": args.repeats,
                "preset": "ippo quick",
                "cpus": len(os.sched_getaffinity(0)),
            },
            "aht_bench": __version__,
            "jax": jax.__version__,
            "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()],
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "processor": platform.processor(),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")
        args.out.with_suffix(".txt").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
