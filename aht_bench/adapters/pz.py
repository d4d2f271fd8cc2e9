"""PettingZoo shell: every seat of a task as a `pettingzoo.ParallelEnv`.

    env = ParallelEnv("lbf-v1")
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)

Seats are named "agent_0".."agent_{n-1}"; these dicts exist only here, the JAX task keeps agents
on a leading axis. Seats given in `teammates` are played inside the shell by a fixed policy
(heuristic, network, any callable) and leave `agents`, so a learner sees only its own seats.
A teammate can be named as everywhere else (`EgoEnv(teammate=...)`, `aht-bench check-agent
--teammate`): "random", a heuristic of the task, or a heldout member "heldout:<version>:<member>",
resolved once by `aht_bench.evaluation.teammates`:

    env = ParallelEnv("lbf-4p-v1", teammates={"agent_2": lbf_heuristic("lexi", num_agents=4),
                                               "agent_3": (network, params)})
    env = ParallelEnv("cramped_room", teammates={"agent_1": "heldout:v2:ippo_mlp_0"})

The jitted reset/step are the ones `aht_bench.envs.compiled` caches per task id.

May import numpy, gymnasium, pettingzoo, aht_bench.envs and aht_bench.adapters.gym (which
resolves teammate names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pettingzoo
from gymnasium import logger, spaces
from gymnasium.utils import seeding

from aht_bench import envs
from aht_bench.adapters.gym import (
    RENDER_FPS,
    FoldedSeats,
    TaskShell,
    check_action,
    check_render_mode,
    check_reward_mode,
    observation_space_of,
    render_modes_of,
    render_state,
    resolve_teammate_name,
)
from aht_bench.envs.compiled import HostTimeStep, Task, host_action_mask, to_host
from aht_bench.envs.core import EnvState

AgentID = str


class ParallelEnv(TaskShell, pettingzoo.ParallelEnv[AgentID, np.ndarray, int]):
    """All seats of a task, acting simultaneously.

    Args:
        task: a registered id or alias, e.g. ``"lbf-4p-v1"``.
        reward: ``"base"`` (the reward evaluation scores) or ``"shaped"``
            (``base + shaped_coef * shaped bonus``), per agent.
        shaped_coef: weight of the shaped bonus when ``reward="shaped"``.
        render_mode: ``"rgb_array"`` or ``"ansi"``, whichever the task supports
            (``metadata["render_modes"]``), or None.
        teammates: seats played by the shell itself, ``{"agent_1": teammate, ...}``; a
            teammate is a name (``"random"``, a heuristic such as ``"lexi"``, a heldout member
            such as ``"heldout:v2:ippo_mlp_0"``), a policy of the protocol in
            ``aht_bench.policies`` (a heuristic, whose params are None), a ``(policy, params)``
            pair, or a callable
            ``obs (obs_dim,) float32 -> int action``. Those seats are not in
            ``possible_agents``; each protocol policy gets its own carry and PRNG stream, drawn
            from the ``reset`` seed.

    Each agent's info holds its ``base_reward``, ``shaped_reward``, ``episode_return`` (base
    return so far) and the step count ``time``, and on tasks with an action mask (LBF) its
    ``action_mask``, int8 (num_actions,), as in `aht_bench.adapters.gym.EgoEnv`. When the episode
    ends (every seat terminates or truncates together) ``agents`` becomes empty; call
    ``reset`` to start another.
    """

    metadata: dict[str, Any] = {
        "render_modes": ["rgb_array", "ansi"],
        "render_fps": RENDER_FPS,
        "name": "aht_bench",
        "is_parallelizable": True,
    }

    def __init__(
        self,
        task: str | Task,
        reward: str = "base",
        shaped_coef: float = 1.0,
        render_mode: str | None = None,
        teammates: Mapping[AgentID, Any] | None = None,
    ):
        if not isinstance(task, str | Task):
            raise TypeError(f"task must be a task id such as 'lbf-v1' or a Task, got {task!r}")
        self._task = envs.task(task).compiled
        env = self._task.env
        check_reward_mode(reward, shaped_coef)
        check_render_mode(env, render_mode)

        self.task_id = env.task_id
        self.reward_mode = reward
        self.shaped_coef = float(shaped_coef)
        self.render_mode = render_mode
        self.metadata = {
            **type(self).metadata,
            "render_modes": render_modes_of(env),
            "name": f"aht_bench/{env.task_id}",
        }
        seats = [f"agent_{i}" for i in range(env.num_agents)]
        self._folded = FoldedSeats(
            env.task_id, env.num_actions, _teammate_seats(env.task_id, seats, teammates or {})
        )
        if len(self._folded.seats) == env.num_agents:
            raise ValueError(
                f"teammates fill every seat of {env.task_id}; leave at least one of {seats} "
                "to be played through step()"
            )
        self._seat_of = {a: i for i, a in enumerate(seats) if i not in self._folded.seats}
        self.possible_agents: list[AgentID] = list(self._seat_of)
        self.agents: list[AgentID] = []
        # One space object per agent, returned as is on every call (PettingZoo's seeding needs it).
        self._observation_spaces = {a: observation_space_of(env) for a in self.possible_agents}
        self._action_spaces = {a: spaces.Discrete(env.num_actions) for a in self.possible_agents}
        self.np_random: np.random.Generator | None = None
        self._key = None
        self._state: EnvState | None = None
        self._obs: np.ndarray | None = None  # (num_agents, obs_dim): every seat's current obs

    def observation_space(self, agent: AgentID) -> spaces.Box:
        return self._observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: AgentID) -> spaces.Discrete:
        return self._action_spaces[self._check_agent(agent)]

    def _check_agent(self, agent: AgentID) -> AgentID:
        if agent not in self._action_spaces:
            raise KeyError(
                f"{self.task_id} has no agent {agent!r}; its agents are {self.possible_agents}"
            )
        return agent

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, np.ndarray], dict[AgentID, dict[str, Any]]]:
        if seed is not None or self.np_random is None:
            self.np_random, _ = seeding.np_random(seed)
        jax_seed = np.uint32(self.np_random.integers(2**32))
        self._key, self._state, timestep = self._task.reset(jax_seed)
        self._folded.reset(self.np_random)
        host = to_host(timestep)
        self._obs = host.obs
        self.agents = list(self.possible_agents)
        obs = {a: host.obs[i].copy() for a, i in self._seat_of.items()}
        infos = {
            a: {"episode_return": float(host.episode_return[i]), "time": host.time}
            for a, i in self._seat_of.items()
        }
        self._add_action_masks(infos)
        return obs, infos

    def step(
        self, actions: dict[AgentID, Any]
    ) -> tuple[
        dict[AgentID, np.ndarray],
        dict[AgentID, float],
        dict[AgentID, bool],
        dict[AgentID, bool],
        dict[AgentID, dict[str, Any]],
    ]:
        if not self.agents:
            why = "the episode has ended" if self._state is not None else "no episode started"
            raise RuntimeError(f"{self.task_id}: {why}; call reset() first")
        missing = [a for a in self.agents if a not in actions]
        unknown = [a for a in actions if a not in self.agents]
        if missing or unknown:
            raise ValueError(
                f"{self.task_id}: step() needs one action for each of {self.agents}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {unknown}" if unknown else "")
            )
        joint = np.empty(self.task.num_agents, np.int32)
        for a, i in self._seat_of.items():
            joint[i] = check_action(
                actions[a], self.task.num_actions, f"action of {a}", self.task_id
            )
        assert self._obs is not None and self.np_random is not None
        joint[self._folded.seats] = self._folded.actions(self._obs, self.np_random)
        self._key, self._state, timestep = self._task.step(self._key, self._state, joint)
        host = to_host(timestep)
        self._obs = host.obs
        observations, rewards, terminations, truncations, infos = self._per_agent(host)
        self._add_action_masks(infos)
        if host.terminated or host.truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _per_agent(self, host: HostTimeStep):
        """Split a host timestep into PettingZoo's per-agent dicts."""
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for a, i in self._seat_of.items():
            base_reward, shaped_reward = float(host.reward[i]), float(host.shaped_reward[i])
            observations[a] = host.obs[i].copy()
            rewards[a] = base_reward
            if self.reward_mode == "shaped":
                rewards[a] += self.shaped_coef * shaped_reward
            terminations[a] = host.terminated
            truncations[a] = host.truncated
            infos[a] = {
                "base_reward": base_reward,
                "shaped_reward": shaped_reward,
                "episode_return": float(host.episode_return[i]),
                "time": host.time,
            }
        return observations, rewards, terminations, truncations, infos

    def _add_action_masks(self, infos: dict[AgentID, dict[str, Any]]) -> None:
        assert self._state is not None
        mask = host_action_mask(self._task, self._state)
        if mask is not None:
            for a, i in self._seat_of.items():
                infos[a]["action_mask"] = mask[i]

    def render(self) -> np.ndarray | str | None:
        if self.render_mode is None:
            logger.warn(
                f"{self.task_id}: render() called without a render_mode; pass "
                f"render_mode= one of {self.metadata['render_modes']} to ParallelEnv"
            )
            return None
        if self._state is None:
            raise RuntimeError(f"{self.task_id}: call reset() before render()")
        return render_state(self.task, self._state, self.render_mode)

    def close(self) -> None:
        pass


def _teammate_seats(
    task_id: str, seats: list[AgentID], teammates: Mapping[AgentID, Any]
) -> dict[int, tuple[Any, Any]]:
    """`teammates` keyed by seat index, each as a (teammate, params) pair."""
    if not isinstance(teammates, Mapping):
        raise TypeError(
            f"teammates must be a dict such as {{'agent_1': policy}}, got {teammates!r}"
        )
    out = {}
    for agent, teammate in teammates.items():
        if agent not in seats:
            raise KeyError(
                f"{task_id} has no seat {agent!r} to give a teammate; its seats are {seats}"
            )
        if teammate is None:
            raise TypeError(
                f"the teammate of {agent} is None; pass a name (e.g. 'random', 'lexi', "
                "'heldout:v2:ippo_mlp_0'), a policy, a (policy, params) pair or a callable "
                "obs -> action (leave the seat out to play it through step())"
            )
        if isinstance(teammate, str):  # a name, as EgoEnv and the CLI take it
            try:
                pair = resolve_teammate_name(envs.task(task_id), teammate, None)
            except ValueError as e:
                raise ValueError(f"teammates[{agent!r}]: {e}") from None
        else:
            pair = (
                teammate if isinstance(teammate, tuple) and len(teammate) == 2 else (teammate, None)
            )
        out[seats.index(agent)] = pair
    return out
