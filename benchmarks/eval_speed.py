"""How fast the evaluator is: the jitted path (compile included) and the step-by-step path.

Jitted path: a JAX agent (a seeded, untrained `MLPActorCritic`) against 13 members on an
Overcooked layout (the layout's paper heuristics plus seeded `MLPActorCritic` teammates
standing in for IPPO/BRDiv networks, 13 in all, as in the largest paper sets), `--episodes`
episodes per seating of `--horizon`-step episodes. Timed from a fresh process: the whole
`evaluate_policy` call (compilation, every member, every seating, the bootstrap). Target (issue
6): under 60 s for 13 members x 64 episodes x 400 steps; the default protocol plays both
seatings, twice that work, and is what is timed (and the one-seating time is reported too).

Step-by-step path: a plain NumPy agent (uniform random, in this process) against a heuristic
member through the Gymnasium shell, `--python-episodes` episodes; reports env steps per second
(agent + member + env per step), and the same with the agent isolated in a child process.

    python benchmarks/eval_speed.py [--layout cramped_room] \\
        [--out benchmarks/results/eval_speed.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

from aht_bench import __version__, envs
from aht_bench.evaluation import EvaluationSet, default_seatings, evaluate_policy
from aht_bench.evaluation.gym_runner import play_python
from aht_bench.policies.heuristics import PAPER_HEURISTICS, make_heuristic
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.policies.teammate_set import TeammateSet

RANDOM_AGENT = Path(__file__).resolve().parents[1] / "agents" / "examples" / "random_agent.py"


def _members(task_id: str, size: int) -> TeammateSet:
    env = envs.make(task_id)
    names = list(PAPER_HEURISTICS[task_id])[:size]
    members = [(make_heuristic(task_id, n), None) for n in names]
    net = MLPActorCritic(env.obs_dim, env.num_actions)
    for i in range(size - len(names)):
        names.append(f"mlp_{i}")
        members.append((net, net.init(jax.random.PRNGKey(100 + i))))
    return TeammateSet(names, members)


def _eval_set(task_id: str, mates: TeammateSet, seatings) -> EvaluationSet:
    return EvaluationSet(
        "bench",
        envs.Task(task_id),
        mates,
        np.zeros(mates.size),
        np.full(mates.size, 100.0),
        seatings,
    )


class _UniformAgent:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self) -> None:
        pass

    def act(self, obs: np.ndarray) -> int:
        return int(self.rng.integers(6))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", default="cramped_room")
    parser.add_argument("--members", type=int, default=13)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--python-episodes", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None, help="Also write the report here.")
    args = parser.parse_args(argv)
    if args.members < 1 or args.episodes < 1 or args.python_episodes < 1:
        parser.error("--members, --episodes and --python-episodes must be >= 1")

    task_id = envs.resolve(args.layout)
    env = envs.make(task_id)
    mates = _members(task_id, args.members)
    agent = MLPActorCritic(env.obs_dim, env.num_actions)
    params = agent.init(jax.random.PRNGKey(0))
    lines = [
        f"# aht-bench {__version__} eval speed, {platform.node()} ({platform.processor() or 'cpu'}"
        f", {jax.devices()[0].platform}, jax {jax.__version__})",
        "# produced by: python benchmarks/eval_speed.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        f"# {task_id}, members: {', '.join(mates.names)}",
        f"# load average before the run (2 cores shared with other jobs): "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}",
    ]

    both = default_seatings(task_id, env.num_agents)
    for label, seatings in (("both seatings", both), ("one seating (seat 0)", ((0,),))):
        start = time.perf_counter()
        record = evaluate_policy(
            agent, params, _eval_set(task_id, mates, seatings), num_episodes=args.episodes
        )
        seconds = time.perf_counter() - start
        steps = mates.size * len(seatings) * args.episodes * env.horizon
        lines.append(
            f"jitted, {label}: {mates.size} members x {len(seatings)} seating(s) x "
            f"{args.episodes} episodes x {env.horizon} steps = {steps:,} steps in "
            f"{seconds:.1f}s (compile included; {steps / seconds:,.0f} steps/s; mean score "
            f"{record['payload']['aggregates']['mean']['value']:.3f})"
        )
        print(lines[-1], flush=True)

    heuristic = TeammateSet(["h"], [(make_heuristic(task_id, PAPER_HEURISTICS[task_id][0]), None)])
    small = _eval_set(task_id, heuristic, ((0,),))
    play_python(lambda seat: _UniformAgent(seat), small, 1, 99)  # compile the step functions
    for label, make in (
        ("in process", lambda seat: _UniformAgent(seat)),
        ("isolated", lambda seat: _isolated(task_id, seat)),
    ):
        start = time.perf_counter()
        play_python(make, small, args.python_episodes, 0)
        seconds = time.perf_counter() - start
        steps = args.python_episodes * env.horizon
        lines.append(
            f"step by step, {label}: {steps:,} steps (uniform agent vs "
            f"{PAPER_HEURISTICS[task_id][0]}) in {seconds:.1f}s = {steps / seconds:,.0f} "
            "steps/s" + (" (worker start included)" if label == "isolated" else "")
        )
        print(lines[-1], flush=True)

    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
    return 0


def _isolated(task_id: str, seat: int):
    from aht_bench.policies.isolated import IsolatedAgent

    return IsolatedAgent(RANDOM_AGENT, task_id, seat)


if __name__ == "__main__":
    sys.exit(main())
