"""The step-by-step runner: a plain-Python agent against teammate-set members, one episode at a
time through the Gymnasium shell (`aht_bench.adapters.gym.EgoEnv`, the member folded in).

    returns = play_python(make_agent, eval_set, num_episodes=64, seed=0)
    # float64 (members, seatings, episodes)

`make_agent(seat)` builds the agent for a seat: a `LoadedAgent` (in this process) or an
`IsolatedAgent` (a child process with time limits); anything with `reset()` and `act(obs)`.
One agent is built per seating and closed (if it has `close`) before the next.

Episode `e` of every member and seating is `EgoEnv.reset(seed=episode_seed(seed, e))`, so the
start states are common to all members, seatings and agents with the same seed (the JAX runner
draws its start states differently: compare results of one runner only). Only seatings with one
agent seat are supported here (every two-player task); `lbf-4p-v1` needs the JAX path.

`play_agent_file` is `aht-bench check-agent`'s loop: a few episodes of one seat, printed.

May import numpy, the standard library, aht_bench.envs, aht_bench.policies, aht_bench.adapters
and aht_bench.evaluation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.evaluation.replay import ReplaySink
from aht_bench.evaluation.sets import EvaluationSet

Progress = Callable[[int, str], None]  # (steps done since the last call, label)


class UnsupportedSeatingError(ValueError):
    """The step-by-step runner cannot play this set's seatings (several agent seats)."""


def episode_seed(seed: int, episode: int) -> int:
    """The Gymnasium reset seed of episode `episode` of an evaluation with seed `seed`."""
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


def play_python(
    make_agent: Callable[[int], Any],
    eval_set: EvaluationSet,
    num_episodes: int,
    seed: int,
    progress: Progress | None = None,
    sink: ReplaySink | None = None,
) -> np.ndarray:
    """The agent's base return per (member, seating, episode), float64; see the module doc.
    `sink` (a `replay.ReplaySink`) receives the joint actions of its first episodes."""
    from aht_bench.adapters.gym import EgoEnv

    if any(len(seating) != 1 for seating in eval_set.seatings):
        raise UnsupportedSeatingError(
            f"{eval_set.task_id}: the step-by-step runner plays one agent seat per episode, "
            f"but this set's seatings are {eval_set.seatings}; give the agent file a JAX "
            "policy (jax_policy(task_id)) to use the jitted runner"
        )
    mates = eval_set.teammates
    returns = np.zeros((mates.size, len(eval_set.seatings), num_episodes))
    for s, (seat,) in enumerate(eval_set.seatings):
        agent = make_agent(seat)
        try:
            for m in range(mates.size):
                env = EgoEnv(
                    eval_set.task,
                    teammate=mates.policies[m],
                    teammate_params=mates.params[m],
                    seat=seat,
                )
                for e in range(num_episodes):
                    keep = sink is not None and e < sink.episodes
                    returns[m, s, e], steps, actions = _episode(
                        env, agent, episode_seed(seed, e), keep
                    )
                    if sink is not None and keep:
                        start = {"runner": "host", "jax_seed": env.jax_seed}
                        sink.add(m, s, e, start, actions, returns[m, s, e])
                    if progress is not None:
                        progress(steps, f"{mates.names[m]}, seat {seat}")
        finally:
            close = getattr(agent, "close", None)
            if close is not None:
                close()
    return returns


def _episode(
    env: Any, agent: Any, seed: int, keep: bool = False
) -> tuple[float, int, np.ndarray | None]:
    """(the ego's base return, steps, with `keep` the joint actions (steps, num_agents)) of
    one episode of `env` with `agent`."""
    obs, info = env.reset(seed=seed)
    agent.reset()
    steps, done, actions = 0, False, []
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        steps += 1
        done = terminated or truncated
        if keep:
            actions.append(env.last_actions)
    return float(info["episode_return"]), steps, np.asarray(actions) if keep else None


def play_agent_file(
    env: Any,
    path: Path,
    episodes: int,
    steps: int | None,
    seed: int,
    isolate: dict[str, Any] | None,
    echo: Callable[[str], None] = print,
) -> list[float]:
    """Load `path` (in a worker with the limits `isolate`, or in-process when None) and play
    `episodes` episodes (at most `steps` steps each) of the `EgoEnv` `env` with it, episode `e`
    from `reset(seed=seed + e)` (what `aht-bench check-agent` does); `echo`es the load, every
    episode's base return and the mean act time; returns the base returns."""
    from aht_bench.envs import Task
    from aht_bench.policies.agent_file import load_agent_file, task_spec
    from aht_bench.policies.isolated import IsolatedAgent

    obs, _ = env.reset(seed=seed)
    task = Task(env.task_id)  # the shell's id, already resolved
    spec = task_spec(task, env.seat, sample_obs=obs)
    start = time.perf_counter()
    if isolate is None:
        agent: Any = load_agent_file(path, task, env.seat, seed=seed, spec=spec)
        how, has_jax = "in this process", agent.jax is not None
    else:
        agent = IsolatedAgent(path, task, env.seat, seed=seed, spec=spec, **isolate)
        where = "sandboxed" if agent.sandboxed else "isolated"
        how, has_jax = f"{where} in process {agent.pid}", bool(agent.info.get("has_jax"))
    echo(
        f"loaded {path.name} ({agent.kind}{', with a JAX policy' if has_jax else ''}) "
        f"{how} in {time.perf_counter() - start:.1f}s"
    )
    returns, act_seconds, n_acts = [], 0.0, 0
    try:
        for episode in range(episodes):
            if episode:
                obs, _ = env.reset(seed=seed + episode)
            agent.reset()
            done, t, info, ended = False, 0, {"episode_return": 0.0}, "stopped by --steps"
            while not done and (steps is None or t < steps):
                tic = time.perf_counter()
                action = agent.act(obs)
                act_seconds += time.perf_counter() - tic
                n_acts += 1
                obs, _, terminated, truncated, info = env.step(action)
                t += 1
                done = terminated or truncated
                if done:
                    ended = "terminated" if terminated else "reached the horizon"
            returns.append(float(info["episode_return"]))
            echo(
                f"episode {episode + 1} (seed {seed + episode}): base return "
                f"{returns[-1]:g} in {t} steps ({ended})"
            )
    finally:
        if isinstance(agent, IsolatedAgent):
            agent.close()
    echo(f"mean act time {1e3 * act_seconds / max(n_acts, 1):.2f} ms")
    return returns
