"""gymnax shell: the ego's view of any task as a gymnax `Environment`, teammates inside the step.

    from aht_bench.adapters import gymnax as aht_gymnax

    env, env_params = aht_gymnax.make("lbf", teammates="dev")   # LBF's development set
    obs, state = env.reset(key, env_params)                      # obs float32 (obs_dim,)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, env_params)

It is a gymnax 1.0 `Environment` (`reset_env`/`step_env` hooks under gymnax's `reset` and an
auto-resetting `step` that returns exactly what gymnax's own `Environment.step` would, with one
observation build fewer), so a training loop written for gymnax runs on it unchanged, under
`jit`, `vmap` and `lax.scan`, and so do gymnax's wrappers (`LogWrapper`,
`FlattenObservationWrapper` in `gymnax.wrappers.purerl`). The ego plays one seat; every other
seat is played inside the jitted step by a teammate drawn at each reset:

- `teammates`: a name, resolved once (`aht_bench.evaluation.teammates.resolve_teammates`): a
  whole set (``"dev"``, ``"heldout:v2"``, a set folder), one member (``"heldout:v2:ippo_mlp_0"``),
  a heuristic (``"lexi"``, ``"onion_agent_0.3"``), comma-separated names (``"lexi,col"``), or
  ``"random"``; or a `TeammateSet` (e.g. ``heldout.load(task)``), an `EvaluationSet`, a
  `Population` (stacked same-architecture params, one member gathered per episode), or one
  policy of the `aht_bench.policies` protocol with its ``teammate_params``; None: uniform random.
  The drawn member plays every non-ego seat, each seat with its own carry and key stream; its
  carry (a recurrent teammate's memory) lives in the state and restarts at every episode.
- `seats`: the seats the ego's seat is drawn from, uniformly, at each reset (default: the
  task's ego seats, `aht_bench.envs.tasks.ego_seatings`: both seats of a two-player task, seat 0
  of `matrix-regret-v1`, seats 0 and 1 of `lbf-4p-v1`, whose other three seats the teammate
  plays here). Sides of the divided Overcooked v2 layouts are drawn by the task itself.
- Start states are the task's own (`envs.P0Starts`: its p0, random object states of the v2
  Overcooked tasks included), or any `aht_bench.envs` reset source such as `StoredStates`.

`EgoParams` holds what may change without recompiling (gymnax's convention: numbers in the
params, shapes in the env): the time limit, the shaping coefficient (reward = base +
`shaped_coef` x shaped bonus; 0 with ``reward="base"``), the teammates' params and the start
states. `EgoState.time` is the task's own step count; `truncated` is the task's horizon or
`max_steps_in_episode`, and never set on a terminated step (the functional API's convention).

Keys, so a rollout can be replayed with the functional API (the tests do): gymnax's `step`
splits its key into (step, reset); `step_env` splits the step key into (task, teammates) and the
teammates' key into one per teammate seat, which each acts with; `reset_env` splits its key into
(start, teammate, seat): the start state is `starts.sample(start key)` (`env.reset` for p0), the
member `randint(teammate key, (), 0, members)`, the seat `seats[randint(seat key, (), 0,
len(seats))]`. `info` holds the ego's `base_reward`, `shaped_reward` and `episode_return` (base
return so far), the episode's `seat` and `teammate` (member index) and the `teammate_actions`
(one per teammate seat), besides gymnax's `terminated`, `truncated` and `final_observation`.

gymnax 1.0.1 imports `six` when it is imported (for its MNIST download helper) without declaring
it, so aht-bench depends on `six` (pyproject.toml).

May import numpy, jax, flax, gymnax, aht_bench.envs, aht_bench.policies and aht_bench.adapters
(teammate names are resolved through `aht_bench.adapters.gym`).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment as gymnax_environment
from gymnax.environments import spaces as gymnax_spaces

from aht_bench import envs
from aht_bench.adapters.gym import check_reward_mode, is_policy, resolve_teammate_names
from aht_bench.adapters.vector import UniformTeammate
from aht_bench.envs.compiled import Task
from aht_bench.envs.core import Environment, EnvState, TimeStep
from aht_bench.envs.tasks import ego_seatings
from aht_bench.policies.population import Population
from aht_bench.policies.teammate_set import TeammateSet


@struct.dataclass
class EgoParams(gymnax_environment.EnvParams):
    """What may change between calls without recompiling (a jit argument, vmappable)."""

    max_steps_in_episode: int = 1  # truncate after this many steps (default: the task's horizon)
    shaped_coef: float = 0.0  # reward = base + shaped_coef * shaped bonus (0: the base reward)
    teammates: Any = None  # TeammateSet | Population: the members drawn from, params as leaves
    starts: Any = None  # a reset source (envs.P0Starts, envs.StoredStates): where episodes start


@struct.dataclass
class EgoState(gymnax_environment.EnvState):
    """One episode of the ego's game (M teammate seats)."""

    time: jax.Array  # () int32: steps taken in the episode (the task's own count)
    env_state: EnvState  # the task's state
    obs: jax.Array  # (num_agents, obs_dim) float32: every seat's current observation
    seat: jax.Array  # () int32: the ego's seat this episode
    teammate: jax.Array  # () int32: the member drawn for this episode
    teammate_carry: Any  # leaves (M, ...): each teammate seat's carry (the member's memory)


class _Draw(NamedTuple):
    """What a reset draws: the start state and the episode's seat, member and fresh carry."""

    env_state: EnvState
    seat: jax.Array  # () int32
    teammate: jax.Array  # () int32
    teammate_carry: Any  # leaves (M, ...)


class _Transition(NamedTuple):
    """One step of the task with the teammates' actions in, before any reset."""

    env_state: EnvState
    timestep: TimeStep  # the task's, for the state it stepped to
    teammate_carry: Any
    reward: jax.Array  # () float32: base + shaped_coef * shaped, the ego's
    info: dict[str, Any]


def _where(cond: jax.Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


def teammate_pool(task: Task, teammates: Any, teammate_params: Any = None) -> Any:
    """`teammates` (see the module docstring) as a `TeammateSet` or `Population` whose members
    are drawn per episode; random seats become `UniformTeammate`s."""
    num_actions = task.env.num_actions
    if isinstance(teammates, str):
        if teammate_params is not None:
            raise ValueError(
                f"teammates={teammates!r} is a name, which brings its own params; leave "
                "teammate_params=None (pass teammate_params only with a policy object)"
            )
        named = resolve_teammate_names(task, teammates)
        return TeammateSet(
            [name for name, _, _ in named],
            [(p if p is not None else UniformTeammate(num_actions), q) for _, p, q in named],
        )
    if teammates is None:
        return TeammateSet(["random"], [(UniformTeammate(num_actions), None)])
    if isinstance(getattr(teammates, "teammates", None), TeammateSet):  # an EvaluationSet
        teammates = teammates.teammates
    if isinstance(teammates, TeammateSet | Population):
        if teammate_params is not None:
            raise ValueError(
                f"a {type(teammates).__name__} carries its members' params; leave "
                "teammate_params=None"
            )
        return teammates
    if is_policy(teammates):
        return TeammateSet(["teammate"], [(teammates, teammate_params)])
    raise TypeError(
        "teammates must be a name (e.g. 'dev', 'heldout:v2', 'heldout:v2:ippo_mlp_0', 'lexi', "
        "'lexi,col', 'random'), a TeammateSet (heldout.load(task)), an EvaluationSet, a "
        "Population, a policy (init_carry + act, see aht_bench.policies) with teammate_params, "
        f"or None for uniform random; got {teammates!r}"
    )


def pool_size(pool: Any) -> int:
    """How many members `pool` (a TeammateSet or Population) draws from."""
    return int(pool.size)


def _check_seats(env: Environment, seats: Any) -> tuple[int, ...]:
    """`seats` as a tuple of distinct valid seats, or an error naming the valid ones."""
    if isinstance(seats, numbers.Integral):
        seats = (seats,)
    if not isinstance(seats, Sequence) or not seats:
        raise ValueError(f"seats must be a non-empty tuple of ints, got {seats!r}")
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) for s in seats):
        raise TypeError(f"seats must be ints in [0, {env.num_agents}), got {seats!r}")
    out = tuple(int(s) for s in seats)
    if len(set(out)) != len(out) or not all(0 <= s < env.num_agents for s in out):
        raise ValueError(
            f"seats {out}: {env.task_id} has {env.num_agents} seats; pass distinct seats in "
            f"[0, {env.num_agents})"
        )
    return out


def default_seats(task: Task) -> tuple[int, ...]:
    """The seats the ego is drawn into by default: those of the task's ego seatings."""
    env = task.env
    return tuple(sorted({s for seating in ego_seatings(task.id, env.num_agents) for s in seating}))


def _check_pool_acts(env: Environment, pool: Any, num_mates: int) -> None:
    """Trace one teammate step abstractly: a teammate that cannot act on this task's
    observations fails here with its task named, not deep inside a training loop."""
    obs = jax.ShapeDtypeStruct((env.obs_dim,), jnp.float32)
    key = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    carry = jax.eval_shape(lambda: pool.init_carry((num_mates,)))
    carry_one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), carry)
    try:
        action, _, _ = jax.eval_shape(lambda c, o, k: pool.act(0, c, o, k), carry_one, obs, key)
    except Exception as e:  # noqa: BLE001  (any tracing error means the same to the user)
        raise ValueError(
            f"the teammates cannot act on {env.task_id}'s observations (float32 "
            f"({env.obs_dim},)): {type(e).__name__}: {e}; pass teammates built for {env.task_id}"
        ) from None
    if action.shape != () or not jnp.issubdtype(action.dtype, jnp.integer):
        raise ValueError(
            f"a teammate's act must return one int action, got {action.dtype} {action.shape}"
        )


class EgoGymnaxEnv(gymnax_environment.Environment[EgoState, EgoParams]):
    """The ego's seat of `task` as a gymnax environment; see the module docstring.

    Args:
        task: a registered id or alias (``"lbf-v1"``, ``"cramped_room"``) or a `Task`.
        teammates: who plays the other seats, drawn per episode (module docstring).
        teammate_params: the params of a single policy given as `teammates` (else None).
        seats: the ego's seats, one drawn per episode (default: `default_seats(task)`).
        reward: ``"base"`` (the reward evaluation scores) or ``"shaped"`` (base +
            ``shaped_coef`` x the task's shaping bonus); sets `default_params.shaped_coef`.
        shaped_coef: the shaping weight with ``reward="shaped"``.
        starts: where episodes start: None (the task's p0) or a reset source of
            `aht_bench.envs` (``StoredStates(batch_of_states)``); sets `default_params.starts`.
        max_steps_in_episode: a time limit below the task's horizon (default: the horizon).
    """

    def __init__(
        self,
        task: str | Task,
        teammates: Any = None,
        *,
        teammate_params: Any = None,
        seats: Any = None,
        reward: str = "base",
        shaped_coef: float = 1.0,
        starts: Any = None,
        max_steps_in_episode: int | None = None,
    ):
        super().__init__()
        if not isinstance(task, str | Task):
            raise TypeError(f"task must be a task id such as 'lbf-v1' or a Task, got {task!r}")
        self.task_spec = envs.task(task)
        env = self.task_spec.env
        self.task = env
        self.task_id = env.task_id
        self.seats = default_seats(self.task_spec) if seats is None else _check_seats(env, seats)
        self.num_teammate_seats = env.num_agents - 1
        check_reward_mode(reward, shaped_coef)
        if starts is not None and not callable(getattr(starts, "sample", None)):
            raise TypeError(
                f"starts must be a reset source with sample(key) (envs.P0Starts, "
                f"envs.StoredStates), got {starts!r}"
            )
        horizon = env.horizon
        if max_steps_in_episode is not None and (
            isinstance(max_steps_in_episode, bool)
            or not isinstance(max_steps_in_episode, numbers.Integral)
            or not 1 <= max_steps_in_episode <= horizon
        ):
            raise ValueError(
                f"max_steps_in_episode must be an int in [1, {horizon}] (the horizon of "
                f"{self.task_id}), got {max_steps_in_episode!r}"
            )
        pool = teammate_pool(self.task_spec, teammates, teammate_params)
        _check_pool_acts(env, pool, self.num_teammate_seats)
        self.teammate_names: tuple[str, ...] = tuple(
            getattr(pool, "names", [f"member_{i}" for i in range(pool_size(pool))])
        )
        # Seat tables, as NumPy so that they become constants of whatever jit traces them.
        self._seat_table = np.asarray(self.seats, np.int32)  # (S,)
        self._mate_table = np.asarray(  # (num_agents, M): the teammate seats for each ego seat
            [[s for s in range(env.num_agents) if s != seat] for seat in range(env.num_agents)],
            np.int32,
        )
        self._default_params = EgoParams(
            max_steps_in_episode=int(max_steps_in_episode or horizon),
            shaped_coef=float(shaped_coef) if reward == "shaped" else 0.0,
            teammates=pool,
            starts=starts if starts is not None else envs.P0Starts(env),
        )

    @property
    def default_params(self) -> EgoParams:
        return self._default_params

    # ------------------------------------------------------------------ gymnax hooks
    def reset_env(self, key: jax.Array, params: EgoParams) -> tuple[jax.Array, EgoState]:
        start = self._draw(key, params)
        timestep = self.task.observe(start.env_state)
        state = EgoState(time=timestep.time, obs=timestep.obs, **start._asdict())
        return self.get_obs(state), state

    def step_env(
        self, key: jax.Array, state: EgoState, action: int | float | jax.Array, params: EgoParams
    ) -> tuple[jax.Array, EgoState, jax.Array, jax.Array, dict[str, Any]]:
        transition = self._transition(key, state, action, params)
        next_state = dataclasses.replace(
            state,
            time=transition.timestep.time,
            env_state=transition.env_state,
            obs=transition.timestep.obs,
            teammate_carry=transition.teammate_carry,
        )
        terminated = transition.timestep.terminated
        return self.get_obs(next_state), next_state, transition.reward, terminated, transition.info

    @functools.partial(jax.jit, static_argnames=("self",))
    def step(
        self,
        key: jax.Array,
        state: EgoState,
        action: int | float | jax.Array,
        params: EgoParams | None = None,
    ) -> tuple[jax.Array, EgoState, jax.Array, jax.Array, jax.Array, dict[Any, Any]]:
        """gymnax's `step`: `step_env`, then a new episode from `reset_env` where this one
        ended, with the same keys and outputs as gymnax's own `Environment.step`.

        Written out rather than inherited so that the next state is chosen before it is
        observed (`envs.AutoReset.restart_where_done`): gymnax's `step` observes both the
        stepped and the new start state and selects, one Overcooked observation build more
        per step (about a fifth of a step with a network teammate on CPU). The observation
        before the reset (`info["final_observation"]`) costs nothing unless it is read.
        """
        if params is None:
            params = self.default_params
        key_step, key_reset = jax.random.split(key)
        transition = self._transition(key_step, state, action, params)
        stepped = dataclasses.replace(
            state, time=transition.timestep.time, env_state=transition.env_state
        )
        terminated = transition.timestep.terminated
        truncated = self.is_truncated(stepped, params)
        done = jnp.logical_or(terminated, truncated)
        start = self._draw(key_reset, params)
        env_state, timestep = envs.AutoReset(self.task, params.starts).restart_where_done(
            transition.env_state,
            dataclasses.replace(transition.timestep, truncated=truncated),
            start.env_state,
        )
        next_state = EgoState(
            time=self.task.observe(env_state).time,  # the timestep's is the ended episode's
            env_state=env_state,
            obs=timestep.obs,
            seat=jnp.where(done, start.seat, state.seat),
            teammate=jnp.where(done, start.teammate, state.teammate),
            teammate_carry=_where(done, start.teammate_carry, transition.teammate_carry),
        )
        info = {
            **transition.info,
            "terminated": terminated,
            "truncated": truncated,
            "final_observation": transition.timestep.obs[state.seat],
        }
        return self.get_obs(next_state), next_state, transition.reward, terminated, truncated, info

    def _draw(self, key: jax.Array, params: EgoParams) -> _Draw:
        """What `reset_env` draws from its key: start state, seat, member, fresh carry."""
        key_start, key_teammate, key_seat = jax.random.split(key, 3)
        teammate = jax.random.randint(key_teammate, (), 0, pool_size(params.teammates))
        pick = jax.random.randint(key_seat, (), 0, len(self.seats))
        return _Draw(
            env_state=params.starts.sample(key_start),
            seat=jnp.asarray(self._seat_table)[pick],
            teammate=teammate.astype(jnp.int32),
            teammate_carry=params.teammates.init_carry((self.num_teammate_seats,)),
        )

    def _transition(
        self, key: jax.Array, state: EgoState, action: Any, params: EgoParams
    ) -> _Transition:
        """The teammates act on their seats' observations, then the task steps (no reset)."""
        key_task, key_mates = jax.random.split(key)
        mate_keys = jax.random.split(key_mates, self.num_teammate_seats)
        mate_seats = jnp.asarray(self._mate_table)[state.seat]  # (M,)
        mate_actions, mate_carry, _ = jax.vmap(params.teammates.act, in_axes=(None, 0, 0, 0))(
            state.teammate, state.teammate_carry, state.obs[mate_seats], mate_keys
        )
        mate_actions = jnp.asarray(mate_actions, jnp.int32)
        actions = jnp.zeros((self.task.num_agents,), jnp.int32)
        actions = actions.at[mate_seats].set(mate_actions)
        actions = actions.at[state.seat].set(jnp.asarray(action, jnp.int32))
        env_state, timestep = self.task.step(key_task, state.env_state, actions)
        seat = state.seat
        base, shaped = timestep.reward[seat], timestep.shaped_reward[seat]
        info = {
            "base_reward": base,
            "shaped_reward": shaped,
            "episode_return": timestep.episode_return[seat],
            "seat": seat,
            "teammate": state.teammate,
            "teammate_actions": mate_actions,
            "discount": 1.0 - timestep.terminated.astype(jnp.float32),
        }
        reward = base + params.shaped_coef * shaped
        return _Transition(env_state, timestep, mate_carry, reward, info)

    def get_obs(self, state: EgoState, params: Any = None, key: Any = None) -> jax.Array:
        """The ego's observation, float32 (obs_dim,)."""
        return state.obs[state.seat]

    def is_terminated(self, state: EgoState, params: EgoParams) -> jax.Array:
        """Whether the task ended the episode (not the horizon), bool ()."""
        return self.task.observe(state.env_state).terminated

    def is_truncated(self, state: EgoState, params: EgoParams) -> jax.Array:
        """The time limit (the task's horizon or `max_steps_in_episode`) on a step that did
        not terminate, bool ()."""
        timestep = self.task.observe(state.env_state)
        limit = jnp.logical_or(state.time >= params.max_steps_in_episode, timestep.truncated)
        return jnp.logical_and(limit, jnp.logical_not(timestep.terminated))

    def action_mask(self, state: EgoState) -> jax.Array:
        """bool (num_actions,): the ego's legal actions (all True on tasks without a mask;
        LBF masks moves into walls and loads with no food next to the agent)."""
        mask_fn = getattr(self.task, "action_mask", None)
        if mask_fn is None:
            return jnp.ones((self.num_actions,), bool)
        return mask_fn(state.env_state)[state.seat]

    # ------------------------------------------------------------------ spaces
    @property
    def name(self) -> str:
        return self.task_id

    @property
    def num_actions(self) -> int:
        return self.task.num_actions

    def action_space(self, params: EgoParams | None = None) -> Any:
        """gymnax `Discrete(num_actions)`."""
        return gymnax_spaces.Discrete(self.task.num_actions)

    def observation_space(self, params: EgoParams | None = None) -> Any:
        """gymnax `Box` over one agent's flat observation (the task's `observation_bounds`)."""
        low, high = self.task.observation_bounds()
        return gymnax_spaces.Box(
            jnp.asarray(low, jnp.float32),
            jnp.asarray(high, jnp.float32),
            (self.task.obs_dim,),
            jnp.float32,
        )

    def __repr__(self) -> str:
        return (
            f"EgoGymnaxEnv({self.task_id!r}, teammates={len(self.teammate_names)}, "
            f"seats={self.seats})"
        )


def make(task: str | Task, teammates: Any = None, **kwargs: Any) -> tuple[EgoGymnaxEnv, EgoParams]:
    """``(env, env.default_params)``, as `gymnax.make` returns them; keyword arguments as
    `EgoGymnaxEnv`'s."""
    env = EgoGymnaxEnv(task, teammates, **kwargs)
    return env, env.default_params
