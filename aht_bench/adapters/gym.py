"""Gymnasium shell: one seat of a task as a `gymnasium.Env`, with the other seats' policy folded in.

    env = EgoEnv("overcooked-forced_coord-v1", teammate=my_teammate, seat=0, reward="shaped")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

or, after `import aht_bench.adapters.gym`,
`gymnasium.make("aht_bench/overcooked-forced_coord-v1")`. A teammate can be named:
`teammate="lexi"` (a heuristic), `"heldout:v2:ippo_mlp_0"` (a member of a heldout set) or
`"random"`, resolved once by `aht_bench.evaluation.teammates`. Every id is registered, and so
is every alias (`gymnasium.make("aht_bench/forced_coord")`: the task the alias names today; `lbf`
and `sabotage` Gymnasium resolves itself to `lbf-v1` and `sabotage-v1`), with
`max_episode_steps` = the task's horizon and with `aht_bench.adapters.vector`'s jitted
`EgoVectorEnv` as its `vector_entry_point` (`gymnasium.make_vec`).

The JAX `reset`/`step` of a task are jitted once per task id and cached at module level
(`aht_bench.envs.Task.compiled`), so building many shells (vector envs, the
PettingZoo shell in `pz`) never recompiles. Every random draw, the JAX keys included, comes
from the seed given to `reset`.

May import numpy, jax, gymnasium, aht_bench.envs and aht_bench.policies; resolving a
teammate's name imports `aht_bench.evaluation.teammates` lazily, when a name is given (the
names of heldout members live above the shells: the one upward import `tests/test_layers.py`
lists).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import gymnasium
import jax
import numpy as np
from gymnasium import spaces

from aht_bench import envs
from aht_bench.envs.compiled import CompiledTask, Task, host_action_mask, to_host
from aht_bench.envs.core import Environment, EnvState
from aht_bench.envs.registry import registered_horizon, registered_ids

REWARD_MODES = ("base", "shaped")
GYMNASIUM_NAMESPACE = "aht_bench"
RENDER_FPS = 8

Teammate = Callable[[np.ndarray], Any]  # obs (obs_dim,) float32 -> action in [0, num_actions)


def is_policy(teammate: Any) -> bool:
    """Whether `teammate` follows the policy protocol (init_carry + act), not a bare callable."""
    return callable(getattr(teammate, "init_carry", None)) and callable(
        getattr(teammate, "act", None)
    )


def resolve_teammate_name(task: Task, teammate: Any, teammate_params: Any) -> tuple[Any, Any]:
    """`(teammate, params)` with a teammate given by name (a str) resolved into its policy and
    params (`aht_bench.evaluation.teammates`); anything else passes through unchanged."""
    if not isinstance(teammate, str):
        return teammate, teammate_params
    if teammate_params is not None:
        raise ValueError(
            f"teammate={teammate!r} is a name, which brings its own params; leave "
            "teammate_params=None (pass teammate_params only with a policy object)"
        )
    from aht_bench.evaluation.teammates import resolve_teammate  # names live above the shells

    return resolve_teammate(task, teammate)


def resolve_teammate_names(task: Task, teammates: str) -> list[tuple[str, Any, Any]]:
    """``(member name, policy, params)`` of every teammate the name `teammates` means: one
    teammate, a whole set (``"dev"``, ``"heldout:v2"``, a set folder) or comma-separated names
    (`aht_bench.evaluation.teammates.resolve_teammates`; ``random`` has policy None). The
    gymnax shell draws one of them per episode."""
    from aht_bench.evaluation.teammates import resolve_teammates  # names live above the shells

    return resolve_teammates(task, teammates)


def render_modes_of(env: Environment) -> list[str]:
    """Render modes a task supports: "rgb_array" (has render_rgb), "ansi" (has render_text)."""
    modes = []
    if callable(getattr(env, "render_rgb", None)):
        modes.append("rgb_array")
    if callable(getattr(env, "render_text", None)):
        modes.append("ansi")
    return modes


def render_state(env: Environment, state: EnvState, mode: str) -> np.ndarray | str:
    """Render `state` in `mode` (one of `render_modes_of(env)`)."""
    if mode == "rgb_array":
        return np.asarray(env.render_rgb(state), dtype=np.uint8)  # type: ignore[attr-defined]
    return env.render_text(state)  # type: ignore[attr-defined]


def check_render_mode(env: Environment, render_mode: str | None) -> None:
    """Raise a ValueError naming the supported modes if `env` cannot render in `render_mode`."""
    supported = render_modes_of(env)
    if render_mode is not None and render_mode not in supported:
        raise ValueError(
            f"render_mode={render_mode!r} is not supported by {env.task_id}; "
            f"use one of {supported + [None]}"
        )


def check_reward_mode(reward: str, shaped_coef: float) -> None:
    """Raise a ValueError naming the fix for a bad reward mode or shaping coefficient."""
    if reward not in REWARD_MODES:
        raise ValueError(
            f"reward={reward!r} is not a reward mode; use 'base' (the evaluation reward) or "
            "'shaped' (base + shaped_coef * shaped bonus)"
        )
    if (
        isinstance(shaped_coef, bool)
        or not isinstance(shaped_coef, numbers.Real)
        or not math.isfinite(shaped_coef)
    ):
        raise ValueError(f"shaped_coef must be a finite number, got {shaped_coef!r}")


def check_seat(env: Environment, seat: Any) -> None:
    """Raise a TypeError or ValueError naming the valid seats if `seat` is not one of `env`'s."""
    if isinstance(seat, bool) or not isinstance(seat, numbers.Integral):
        raise TypeError(f"seat must be an int in [0, {env.num_agents}), got {seat!r}")
    if not 0 <= int(seat) < env.num_agents:
        raise ValueError(
            f"seat {seat} is out of range: {env.task_id} has {env.num_agents} seats, "
            f"pass seat in [0, {env.num_agents})"
        )


def observation_space_of(env: Environment) -> spaces.Box:
    """Box over one agent's flat observation, from the task's `observation_bounds()`."""
    low, high = env.observation_bounds()
    return spaces.Box(
        low=np.asarray(low, np.float32),
        high=np.asarray(high, np.float32),
        shape=(env.obs_dim,),
        dtype=np.float32,
    )


def check_action(action: Any, num_actions: int, who: str, task_id: str) -> int:
    """`action` as a Python int, or a ValueError saying which actions are valid."""
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action.item()
    if isinstance(action, numbers.Integral) and not isinstance(action, bool):
        if 0 <= int(action) < num_actions:
            return int(action)
    raise ValueError(
        f"{who} {action!r} is outside the action space of {task_id}: "
        f"pass an int in [0, {num_actions})"
    )


class FoldedSeats:
    """The seats a shell plays itself, each by a teammate: the one place teammates are called.

    `teammates` maps a seat index to a policy of the protocol in ``aht_bench.policies`` with its
    params (run with its own carry and PRNG stream, a fresh `PolicyRunner` per episode), a
    callable ``obs (obs_dim,) float32 -> int action``, or None for uniform random actions. Every
    random draw comes from the shell's ``np_random``, so ``reset(seed=...)`` fixes the episode.
    """

    def __init__(self, task_id: str, num_actions: int, teammates: dict[int, tuple[Any, Any]]):
        for seat, (teammate, _) in teammates.items():
            if teammate is not None and not callable(teammate) and not is_policy(teammate):
                raise TypeError(
                    f"the teammate of seat {seat} must be a policy (init_carry + act, see "
                    "aht_bench.policies), a callable obs -> action, or None for uniform random; "
                    f"got {teammate!r}"
                )
        self.task_id = task_id
        self.num_actions = num_actions
        self.teammates = dict(sorted(teammates.items()))
        self.seats = list(self.teammates)
        self._runners: dict[int, Any] = {}

    def reset(self, np_random: np.random.Generator) -> None:
        """Fresh carries and PRNG streams for the protocol-policy teammates (call at each reset)."""
        policy_seats = [s for s, (t, _) in self.teammates.items() if is_policy(t)]
        if not policy_seats:
            return
        from aht_bench.policies.runner import (
            PolicyRunner,  # lazily: only a policy teammate needs it
        )

        seeds = np_random.integers(2**31, size=len(policy_seats))
        self._runners = {
            s: PolicyRunner(self.teammates[s][0], self.teammates[s][1], seed=int(seed))
            for s, seed in zip(policy_seats, seeds, strict=True)
        }

    def actions(self, obs: np.ndarray, np_random: np.random.Generator) -> list[int]:
        """Actions of the folded seats, in seat order, given every seat's observation `obs`."""
        random_seats = [s for s, (t, _) in self.teammates.items() if t is None]
        drawn = iter(np_random.integers(self.num_actions, size=len(random_seats)).tolist())
        out = []
        for seat, (teammate, _) in self.teammates.items():
            if teammate is None:
                out.append(int(next(drawn)))
            elif seat in self._runners:
                who = f"teammate (seat {seat}) chose"
                out.append(
                    check_action(
                        self._runners[seat].act(obs[seat]), self.num_actions, who, self.task_id
                    )
                )
            else:
                who = f"teammate (seat {seat}) returned"
                out.append(
                    check_action(teammate(obs[seat].copy()), self.num_actions, who, self.task_id)
                )
        return out


def can_render(env: Any, started: bool) -> bool:
    """Whether `env.render()` has a mode to draw in (else Gymnasium's warning, False); raises
    `ResetNeeded` before the first reset (`started` False). Shared by EgoEnv and the vector env."""
    if env.render_mode is None:
        gymnasium.logger.warn(
            f"{env.task_id}: render() called without a render_mode; pass render_mode= one of "
            f"{env.metadata['render_modes']} to {type(env).__name__}"
        )
        return False
    if not started:
        raise gymnasium.error.ResetNeeded(f"{env.task_id}: call reset() before render()")
    return True


class TaskShell:
    """What every shell of one task shows of its JAX side: `task` and `env_state`."""

    _task: CompiledTask
    _state: EnvState | None

    @property
    def task(self) -> Environment:
        """The functional JAX task behind this shell (shared by every shell of the same id)."""
        return self._task.env

    @property
    def env_state(self) -> EnvState | None:
        """The current JAX `EnvState` (None before the first reset)."""
        return self._state


class EgoEnv(TaskShell, gymnasium.Env):
    """One seat (`seat`) of a task; every other seat is played by `teammate`.

    Args:
        task: a registered id or alias, e.g. ``"lbf-v1"`` or ``"forced_coord"``.
        teammate: either a name (a str: ``"random"``, a heuristic of the task such as
            ``"lexi"`` or ``"onion_agent_0.1"``, or ``"heldout:<version>:<member>"``, e.g.
            ``"heldout:v2:ippo_mlp_0"``; see `aht_bench.evaluation.teammates`); or a policy of
            the protocol in ``aht_bench.policies`` (heuristic or network, with its
            ``teammate_params``), run for each non-ego seat with its own carry, reset and
            reseeded at every ``reset``; or any callable ``obs (obs_dim,) float32 -> int
            action``, called once per step for each non-ego seat with that seat's
            observation; None (or ``"random"``) plays uniform random actions drawn from
            ``self.np_random``. Either way ``reset(seed=...)`` fixes the whole episode.
        teammate_params: the params of a protocol-policy teammate (None for heuristics and
            for named teammates, whose params come with the name).
        seat: the ego agent's index in ``[0, num_agents)``.
        reward: ``"base"`` (the reward evaluation scores) or ``"shaped"``
            (``base + shaped_coef * shaped bonus``).
        shaped_coef: weight of the shaped bonus when ``reward="shaped"``.
        render_mode: ``"rgb_array"`` for tasks with ``render_rgb``, ``"ansi"`` for tasks with
            ``render_text`` (``metadata["render_modes"]`` lists the task's), or None.

    ``info`` holds the ego seat's ``base_reward``, ``shaped_reward`` and ``episode_return``
    (base return so far) and the step count ``time``; on tasks with an action mask (LBF) also
    ``action_mask``, int8 (num_actions,), 1 for the ego's legal actions in the new state (the
    Overcooked and matrix tasks have none: every action is always legal there). Episodes end by
    ``terminated`` (inside the task) or ``truncated`` (at the task's horizon); the shell never
    resets by itself. ``reset`` accepts ``options`` and ignores them. ``env_state`` is the
    current JAX `EnvState`; ``teammate_name`` the name the teammate was given by, if any.
    """

    # Every mode some task supports (what `gymnasium.make` sees); instances narrow it to theirs.
    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "ansi"], "render_fps": RENDER_FPS}

    def __init__(
        self,
        task: str | Task,
        teammate: Teammate | Any | None = None,
        seat: int = 0,
        reward: str = "base",
        shaped_coef: float = 1.0,
        render_mode: str | None = None,
        teammate_params: Any = None,
    ):
        if not isinstance(task, str | Task):
            raise TypeError(f"task must be a task id such as 'sabotage-v1' or a Task, got {task!r}")
        task = envs.task(task)
        self._task = task.compiled
        env = self._task.env
        check_seat(env, seat)
        self.teammate_name = teammate if isinstance(teammate, str) else None
        teammate, teammate_params = resolve_teammate_name(task, teammate, teammate_params)
        if teammate is not None and not callable(teammate) and not is_policy(teammate):
            raise TypeError(
                "teammate must be a policy (init_carry + act, see aht_bench.policies), a name "
                "(e.g. 'random', 'lexi', 'heldout:v2:ippo_mlp_0'), a callable obs -> action, "
                f"or None for uniform random; got {teammate!r}"
            )
        check_reward_mode(reward, shaped_coef)
        check_render_mode(env, render_mode)

        self.task_id = env.task_id
        self.seat = int(seat)
        self.teammate = teammate
        self.teammate_params = teammate_params
        self.reward_mode = reward
        self.shaped_coef = float(shaped_coef)
        self.render_mode = render_mode
        self.metadata = {"render_modes": render_modes_of(env), "render_fps": RENDER_FPS}
        self.observation_space = observation_space_of(env)
        self.action_space = spaces.Discrete(env.num_actions)
        self._teammate_seats = [i for i in range(env.num_agents) if i != self.seat]
        self._folded = FoldedSeats(
            env.task_id,
            env.num_actions,
            {i: (teammate, teammate_params) for i in self._teammate_seats},
        )
        self._key: jax.Array | None = None
        self._state: EnvState | None = None
        self._obs: np.ndarray | None = None  # (num_agents, obs_dim) float32: current obs
        self._done = True
        self.jax_seed: int | None = None
        """The seed the current episode's compiled task was reset with (its JAX key's
        source): with `last_actions`, what replays an episode exactly
        (`aht_bench.evaluation.replay`)."""
        self.last_actions: np.ndarray | None = None
        """int32 (num_agents,): the joint action of the last step (every seat's)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        jax_seed = np.uint32(self.np_random.integers(2**32))
        self.jax_seed, self.last_actions = int(jax_seed), None
        self._key, self._state, timestep = self._task.reset(jax_seed)
        self._folded.reset(self.np_random)
        host = to_host(timestep)
        self._obs = host.obs
        self._done = False
        info = {"episode_return": float(host.episode_return[self.seat]), "time": host.time}
        self._add_action_mask(info)
        return self._obs[self.seat].copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._obs is None or self._done:
            why = "the episode has ended" if self._obs is not None else "no episode started"
            raise gymnasium.error.ResetNeeded(f"{self.task_id}: {why}; call reset() first")
        actions = np.empty(self.task.num_agents, np.int32)
        actions[self.seat] = check_action(action, self.task.num_actions, "action", self.task_id)
        actions[self._teammate_seats] = self._folded.actions(self._obs, self.np_random)
        self.last_actions = actions.copy()
        self._key, self._state, timestep = self._task.step(self._key, self._state, actions)
        host = to_host(timestep)
        self._obs = host.obs
        self._done = host.terminated or host.truncated
        base_reward = float(host.reward[self.seat])
        shaped_reward = float(host.shaped_reward[self.seat])
        reward = base_reward
        if self.reward_mode == "shaped":
            reward += self.shaped_coef * shaped_reward
        info = {
            "base_reward": base_reward,
            "shaped_reward": shaped_reward,
            "episode_return": float(host.episode_return[self.seat]),
            "time": host.time,
        }
        self._add_action_mask(info)
        return self._obs[self.seat].copy(), reward, host.terminated, host.truncated, info

    def _add_action_mask(self, info: dict[str, Any]) -> None:
        assert self._state is not None
        mask = host_action_mask(self._task, self._state)
        if mask is not None:
            info["action_mask"] = mask[self.seat]

    def render(self) -> np.ndarray | str | None:
        if not can_render(self, self._state is not None):
            return None
        assert self._state is not None and self.render_mode is not None  # can_render checked
        return render_state(self.task, self._state, self.render_mode)


def register_gymnasium_envs() -> None:
    """Register every task id as ``aht_bench/<id>`` with Gymnasium (idempotent).

    ``max_episode_steps`` is the task's horizon (so `gymnasium.make` adds its `TimeLimit`
    at the step where the task truncates anyway), and ``vector_entry_point`` the jitted
    `aht_bench.adapters.vector.EgoVectorEnv`. Builds nothing: a task's backend is imported when
    `gymnasium.make` first builds it.
    """
    names = [(task_id, task_id) for task_id in registered_ids()]
    names += [(alias, task_id) for alias, task_id in gymnasium_aliases().items()]
    for name, task_id in names:
        env_id = f"{GYMNASIUM_NAMESPACE}/{name}"
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point="aht_bench.adapters.gym:EgoEnv",
            vector_entry_point="aht_bench.adapters.vector:EgoVectorEnv",
            kwargs={"task": task_id},
            max_episode_steps=registered_horizon(task_id),
            nondeterministic=False,
        )


def gymnasium_aliases() -> dict[str, str]:
    """The task aliases registered as Gymnasium ids of their own (``aht_bench/forced_coord``,
    the task the alias names today): every alias but those that are the name of a versioned id
    (``lbf`` of ``lbf-v1``), which Gymnasium itself resolves to the newest version of that name
    (with a warning) and will not let one register unversioned."""
    versioned = {task_id.rpartition("-v")[0] for task_id in registered_ids()}
    return {a: t for a, t in envs.aliases().items() if a not in versioned}


def gymnasium_id(name: str) -> str:
    """The Gymnasium id of a task id or alias (``aht_bench/<name>``)."""
    return f"{GYMNASIUM_NAMESPACE}/{name}"


register_gymnasium_envs()
