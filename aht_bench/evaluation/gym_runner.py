"""The step-by-step runner: a plain-Python agent against teammate-set members, one episode at a
time through the Gymnasium shell (`aht_bench.envs.gym.EgoEnv`, the member folded in).

    returns = play_python(make_agent, eval_set, num_episodes=64, seed=0)
    # float64 (members, seatings, episodes)

`make_agent(seat)` builds the agent for a seat: a `LoadedAgent` (in this process) or an
`IsolatedAgent` (a child process with time limits); anything with `reset()` and `act(obs)`.
One agent is built per seating and closed (if it has `close`) before the next.

Episode `e` of every member and seating is `EgoEnv.reset(seed=episode_seed(seed, e))`, so the
start states are common to all members, seatings and agents with the same seed (the JAX runner
draws its start states differently: compare results of one runner only). Only seatings with one
agent seat are supported here (every two-player task); `lbf-4p-v1` needs the JAX path.

May import numpy, aht_bench.envs, aht_bench.policies and aht_bench.evaluation.sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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
) -> np.ndarray:
    """The agent's base return per (member, seating, episode), float64; see the module doc."""
    from aht_bench.envs.gym import EgoEnv

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
                    eval_set.task_id,
                    teammate=mates.policies[m],
                    teammate_params=mates.params[m],
                    seat=seat,
                )
                for e in range(num_episodes):
                    returns[m, s, e], steps = _episode(env, agent, episode_seed(seed, e))
                    if progress is not None:
                        progress(steps, f"{mates.names[m]}, seat {seat}")
        finally:
            close = getattr(agent, "close", None)
            if close is not None:
                close()
    return returns


def _episode(env: Any, agent: Any, seed: int) -> tuple[float, int]:
    """(the ego's base return, steps) of one episode of `env` with `agent`."""
    obs, info = env.reset(seed=seed)
    agent.reset()
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        steps += 1
        done = terminated or truncated
    return float(info["episode_return"]), steps
