"""Vectorised Gymnasium shell: `num_envs` copies of `EgoEnv` stepped in one jitted call.

    envs = gymnasium.make_vec("aht_bench/lbf-v1", num_envs=64, teammate="heldout:v2:ippo_mlp_0")
    obs, info = envs.reset(seed=0)                            # obs (64, obs_dim) float32
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

(`gymnasium.make_vec` uses this class for every ``aht_bench/<id>``: it is the ids'
``vector_entry_point``; ``EgoVectorEnv("lbf-v1", num_envs=64, ...)`` builds it directly.)

One `step` is one jitted call for all envs: the teammates act (a policy of the protocol in
`aht_bench.policies`, vmapped over envs and seats, each seat with its own carry and key
stream), the task steps, and the envs whose episode ended start a new one from p0. The ego's
actions go in and the batched results come out as NumPy at that boundary; nothing inside calls
back to the host, so the same code runs on a GPU.

Autoreset is Gymnasium's ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``): on the
step that ends env i's episode, ``obs[i]`` is already the first observation of its next
episode, while ``reward[i]``, ``terminated[i]`` and ``truncated[i]`` are those of the step that
ended it; ``info["final_obs"][i]`` and ``info["final_info"]`` (masked by ``"_final_info"``) hold
that episode's last observation and info. ``info`` has exactly the layout of Gymnasium's
``SyncVectorEnv(..., autoreset_mode=SAME_STEP)`` over `EgoEnv`s (each key with its ``_key``
mask; see `EgoEnv` for the keys, ``action_mask`` included on LBF).

Seeding follows SyncVectorEnv: ``reset(seed=s)`` seeds env i with ``s + i`` (or takes a list of
seeds), and with a protocol-policy teammate env i's first episode is the one
``EgoEnv(...).reset(seed=s + i)`` plays: the same start state, the same teammate key streams,
so the same actions give the same transitions. Later episodes start from keys split off inside
the jitted step (an `EgoEnv` draws them from its NumPy generator), so they are different
episodes from the same p0. A random teammate (None or ``"random"``) draws its actions from JAX
keys here and from NumPy in `EgoEnv`, so only its distribution is the same.

Teammates are given as to `EgoEnv`: a name (``"lexi"``, ``"heldout:v2:ippo_mlp_0"``,
``"random"``), a protocol policy with ``teammate_params``, or None. A Python callable cannot run
inside jit: use ``gymnasium.make_vec(id, ..., vectorization_mode="sync")`` for those.

May import numpy, jax, gymnasium, aht_bench.envs, aht_bench.policies and
aht_bench.adapters.gym; a protocol-policy teammate brings `aht_bench.policies.core` (lazily,
for `reset_carry_where`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from aht_bench import envs
from aht_bench.adapters.gym import (
    RENDER_FPS,
    can_render,
    check_render_mode,
    check_reward_mode,
    check_seat,
    is_policy,
    observation_space_of,
    render_modes_of,
    render_state,
    resolve_teammate_name,
)
from aht_bench.envs.compiled import Task
from aht_bench.envs.core import Environment, EnvState


class UniformTeammate:
    """The random teammate inside jit: uniform actions from the key it is given, no memory."""

    def __init__(self, num_actions: int):
        self.num_actions = num_actions

    def init_carry(self, batch_shape: tuple[int, ...]) -> tuple[()]:
        return ()

    def act(self, params: Any, carry: Any, obs: jax.Array, key: jax.Array):
        del params, obs
        return jax.random.randint(key, (), 0, self.num_actions, jnp.int32), carry, {}


class VectorCarry(NamedTuple):
    """What the jitted step carries from one call to the next (N envs, M teammate seats)."""

    key: jax.Array  # (N, 2) uint32: each env's episode key (an EgoEnv's `_key`)
    state: EnvState  # leaves (N, ...): each env's current state
    obs: jax.Array  # (N, num_agents, obs_dim) float32: every seat's current observation
    mate_carry: Any  # leaves (N, M, ...): each teammate seat's policy carry
    mate_key: jax.Array  # (N, M, 2) uint32: each teammate seat's key stream (a PolicyRunner's)


class VectorView(NamedTuple):
    """The ego seat's view of every env's current state (after any auto-reset)."""

    obs: jax.Array  # (N, obs_dim) float32
    episode_return: jax.Array  # (N,) float32: base return of the current episode so far
    time: jax.Array  # (N,) int32: steps taken in the current episode
    action_mask: jax.Array | None  # (N, num_actions) bool, or None for tasks without a mask


class VectorStep(NamedTuple):
    """One step's results for the ego seat; `final_*` describe the state the step reached,
    before any auto-reset (the ended episode's last state where `terminated | truncated`)."""

    now: VectorView
    reward: jax.Array  # (N,) float32: base reward
    shaped_reward: jax.Array  # (N,) float32: shaping bonus alone
    terminated: jax.Array  # (N,) bool
    truncated: jax.Array  # (N,) bool: the task's horizon or `max_episode_steps`
    final: VectorView


def _where(cond: jax.Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


def build_vector_functions(
    env: Environment,
    seat: int,
    teammate: Any,
    max_episode_steps: int | None,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The jitted ``reset(seeds, mate_seeds) -> (carry, view)`` and
    ``step(params, carry, ego_actions) -> (carry, VectorStep)`` of `EgoVectorEnv`.

    `seeds` (N,) uint32 and `mate_seeds` (N, M) uint32 are what an `EgoEnv` draws from its
    NumPy generator at reset; `ego_actions` is int32 (N,). `teammate` plays every seat but
    `seat`, with `params` (a jit argument, so new params never recompile).
    """
    from aht_bench.policies.core import reset_carry_where

    mate_seats = jnp.asarray([i for i in range(env.num_agents) if i != seat], jnp.int32)
    num_mates = env.num_agents - 1
    mask_fn: Callable[[EnvState], jax.Array] | None = getattr(env, "action_mask", None)

    def _view(state: EnvState) -> VectorView:
        now = env.observe(state)
        mask = mask_fn(state)[seat] if mask_fn is not None else None
        return VectorView(now.obs[seat], now.episode_return[seat], now.time, mask)

    def _reset_env(seed: jax.Array, mate_seed: jax.Array):
        # `compiled_task`'s reset and a PolicyRunner's key, so env i's first episode is EgoEnv's
        key, reset_key = jax.random.split(jax.random.PRNGKey(seed))
        state, timestep = env.reset(reset_key)
        mate_key = jax.vmap(jax.random.PRNGKey)(mate_seed)
        return key, state, timestep.obs, mate_key

    def _reset(seeds: jax.Array, mate_seeds: jax.Array):
        key, state, obs, mate_key = jax.vmap(_reset_env)(seeds, mate_seeds)
        mate_carry = teammate.init_carry((seeds.shape[0], num_mates))
        carry = VectorCarry(key, state, obs, mate_carry, mate_key)
        return carry, jax.vmap(_view)(state)

    def _env_step(params: Any, carry: VectorCarry, ego_action: jax.Array):
        # One env; the order of the key splits is EgoEnv's (PolicyRunner.act, compiled_task).
        split = jax.vmap(jax.random.split)(carry.mate_key)  # (M, 2, 2)
        mate_key, act_key = split[:, 0], split[:, 1]
        mate_action, mate_carry, _ = jax.vmap(teammate.act, (None, 0, 0, 0))(
            params, carry.mate_carry, carry.obs[mate_seats], act_key
        )
        actions = jnp.zeros((env.num_agents,), jnp.int32)
        actions = actions.at[seat].set(ego_action).at[mate_seats].set(mate_action)
        key, step_key = jax.random.split(carry.key)
        next_state, timestep = env.step(step_key, carry.state, actions)
        truncated = timestep.truncated
        if max_episode_steps is not None:  # gymnasium.make's TimeLimit, inside the jit
            truncated = truncated | (timestep.time >= max_episode_steps)
        done = timestep.terminated | truncated
        # A new episode's key chain and start, as compiled_task's reset makes them from a seed.
        new_key, reset_key = jax.random.split(key)
        start, _ = env.reset(reset_key)
        state = _where(done, start, next_state)
        mate_carry = reset_carry_where(teammate, jnp.broadcast_to(done, (num_mates,)), mate_carry)
        out_carry = VectorCarry(
            key=jnp.where(done, new_key, key),
            state=state,
            obs=env.observe(state).obs,
            mate_carry=mate_carry,
            mate_key=mate_key,
        )
        step = VectorStep(
            now=_view(state),
            reward=timestep.reward[seat],
            shaped_reward=timestep.shaped_reward[seat],
            terminated=timestep.terminated,
            truncated=truncated,
            final=_view(next_state),
        )
        return out_carry, step

    def _step(params: Any, carry: VectorCarry, ego_actions: jax.Array):
        return jax.vmap(_env_step, (None, 0, 0))(params, carry, ego_actions)

    return jax.jit(_reset), jax.jit(_step)


class EgoVectorEnv(gymnasium.vector.VectorEnv):
    """`num_envs` copies of ``EgoEnv(task, teammate, seat, ...)`` stepped in one jitted call.

    Args:
        task, teammate, seat, reward, shaped_coef, render_mode, teammate_params: as `EgoEnv`'s
            (a teammate that is a plain Python callable is refused: see the module docstring).
        num_envs: how many envs to step at once.
        max_episode_steps: truncate every episode after this many steps, as the `TimeLimit`
            wrapper `gymnasium.make` adds (`gymnasium.make_vec` passes the spec's, the task's
            horizon); None: only the task's own horizon.

    Observations are float32 (num_envs, obs_dim), rewards float64 (num_envs,) (base, or
    ``base + shaped_coef * shaped`` with ``reward="shaped"``), terminations and truncations
    bool (num_envs,); see the module docstring for auto-reset, seeding and ``info``.
    ``reset`` ignores ``options`` (every env is reset; a ``reset_mask`` is refused).
    """

    metadata: dict[str, Any] = {
        "render_modes": ["rgb_array", "ansi"],
        "render_fps": RENDER_FPS,
        "autoreset_mode": AutoresetMode.SAME_STEP,
    }

    def __init__(
        self,
        task: str | Task,
        num_envs: int = 1,
        teammate: Any = None,
        seat: int = 0,
        reward: str = "base",
        shaped_coef: float = 1.0,
        render_mode: str | None = None,
        teammate_params: Any = None,
        max_episode_steps: int | None = None,
    ):
        if not isinstance(task, str | Task):
            raise TypeError(f"task must be a task id such as 'lbf-v1' or a Task, got {task!r}")
        task = envs.task(task)
        self._task = task.compiled
        env = self._task.env
        if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral):
            raise TypeError(f"num_envs must be a positive int, got {num_envs!r}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, numbers.Integral)
            or max_episode_steps < 1
        ):
            raise ValueError(
                f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}"
            )
        check_seat(env, seat)
        self.teammate_name = teammate if isinstance(teammate, str) else None
        teammate, teammate_params = resolve_teammate_name(task, teammate, teammate_params)
        if teammate is not None and not is_policy(teammate):
            raise TypeError(
                "EgoVectorEnv runs the teammate inside a jitted step, so it must be a name "
                "(e.g. 'random', 'lexi', 'heldout:v2:ippo_mlp_0'), a policy (init_carry + act, "
                f"see aht_bench.policies) or None for uniform random; got {teammate!r}. For a "
                "Python callable use gymnasium.make_vec(..., vectorization_mode='sync')"
            )
        check_reward_mode(reward, shaped_coef)
        check_render_mode(env, render_mode)

        self.task_id = env.task_id
        self.num_envs = int(num_envs)
        self.seat = int(seat)
        self.teammate = teammate
        self.teammate_params = teammate_params
        self.reward_mode = reward
        self.shaped_coef = float(shaped_coef)
        self.render_mode = render_mode
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.metadata = {**type(self).metadata, "render_modes": render_modes_of(env)}
        self.single_observation_space = observation_space_of(env)
        self.single_action_space = spaces.Discrete(env.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        self._draws_mate_seeds = teammate is not None  # as EgoEnv's FoldedSeats.reset
        policy = teammate if teammate is not None else UniformTeammate(env.num_actions)
        self._reset_fn, self._step_fn = build_vector_functions(
            env, self.seat, policy, self.max_episode_steps
        )
        self._rngs: list[np.random.Generator] | None = None
        self._carry: VectorCarry | None = None

    @property
    def task(self) -> Environment:
        """The functional JAX task behind this shell (shared with every shell of the same id)."""
        return self._task.env

    @property
    def env_state(self) -> EnvState | None:
        """The current JAX `EnvState` of every env, leaves (num_envs, ...) (None before reset)."""
        return None if self._carry is None else self._carry.state

    def reset(
        self,
        *,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if options is not None and "reset_mask" in options:
            raise ValueError(
                "EgoVectorEnv resets every env on reset(); it auto-resets ended episodes in "
                "the same step (AutoresetMode.SAME_STEP), so no reset_mask is needed: drop "
                "options['reset_mask']"
            )
        seeds = self._env_seeds(seed)
        if self._rngs is None or any(s is not None for s in seeds):
            old = self._rngs
            self._rngs = [
                seeding.np_random(s)[0] if s is not None or old is None else old[i]
                for i, s in enumerate(seeds)
            ]
        if seed is not None:  # the VectorEnv's own generator, as the base class keeps it
            self._np_random, self._np_random_seed = seeding.np_random(
                seed if isinstance(seed, int) else None
            )
        num_mates = self.task.num_agents - 1
        jax_seeds = np.empty(self.num_envs, np.uint32)
        mate_seeds = np.zeros((self.num_envs, num_mates), np.uint32)
        for i, rng in enumerate(self._rngs):  # EgoEnv.reset's draws, in its order
            jax_seeds[i] = rng.integers(2**32)
            if self._draws_mate_seeds:
                mate_seeds[i] = rng.integers(2**31, size=num_mates)
        self._carry, view = self._reset_fn(jax_seeds, mate_seeds)
        view = jax.device_get(view)
        info = self._view_info(view, np.ones(self.num_envs, bool))
        return np.asarray(view.obs), info

    def _env_seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        """Each env's reset seed, as SyncVectorEnv spreads `seed` over its envs."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, list | tuple) and len(seed) == self.num_envs:
            return list(seed)
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        raise ValueError(
            f"reset(seed=...) takes an int, None or a list of {self.num_envs} seeds (one per "
            f"env); got {seed!r}"
        )

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._carry is None:
            raise gymnasium.error.ResetNeeded(f"{self.task_id}: call reset() before step()")
        ego_actions = self._check_actions(actions)
        self._carry, out = self._step_fn(self.teammate_params, self._carry, ego_actions)
        out = jax.device_get(out)
        done = np.logical_or(out.terminated, out.truncated)
        base = np.asarray(out.reward, np.float64)
        shaped = np.asarray(out.shaped_reward, np.float64)
        reward = base + self.shaped_coef * shaped if self.reward_mode == "shaped" else base
        info = self._view_info(out.now, np.ones(self.num_envs, bool))
        live = ~done
        if live.any():  # what SyncVectorEnv has: step infos of the envs that did not reset
            info.update(_masked("base_reward", base, live))
            info.update(_masked("shaped_reward", shaped, live))
        if done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = np.asarray(out.final.obs[i])
            final_info = self._view_info(out.final, done)
            final_info.update(_masked("base_reward", base, done))
            final_info.update(_masked("shaped_reward", shaped, done))
            info.update({"final_obs": final_obs, "_final_obs": done.copy()})
            info.update({"final_info": final_info, "_final_info": done.copy()})
        return (
            np.asarray(out.now.obs),
            reward,
            np.asarray(out.terminated, bool),
            np.asarray(out.truncated, bool),
            info,
        )

    def _check_actions(self, actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        n, k = self.num_envs, self.task.num_actions
        if (
            a.shape != (n,)
            or a.dtype.kind not in "iu"
            or (a.size and (a.min() < 0 or a.max() >= k))
        ):
            raise ValueError(
                f"actions must be {n} ints in [0, {k}) (one per env, shape ({n},)), got "
                f"{a.dtype} of shape {a.shape}"
                + (f" with values in [{a.min()}, {a.max()}]" if a.size and a.ndim else "")
            )
        return a.astype(np.int32)

    def _view_info(self, view: VectorView, where: np.ndarray) -> dict[str, Any]:
        """The `EgoEnv` info keys of `view` for the envs in `where`, as SyncVectorEnv batches
        them (float64 and int64 arrays, zero elsewhere, each with its `_key` mask)."""
        info = {
            **_masked("episode_return", np.asarray(view.episode_return, np.float64), where),
            **_masked("time", np.asarray(view.time, np.int64), where),
        }
        if view.action_mask is not None:
            info.update(_masked("action_mask", np.asarray(view.action_mask, np.int8), where))
        return info

    def render(self) -> tuple[np.ndarray | str, ...] | None:
        """One frame (or text) per env, in env order."""
        if not can_render(self, self._carry is not None):
            return None
        assert self._carry is not None and self.render_mode is not None  # can_render checked
        states = jax.device_get(self._carry.state)
        return tuple(
            render_state(self.task, jax.tree.map(lambda x, i=i: x[i], states), self.render_mode)
            for i in range(self.num_envs)
        )


def _masked(key: str, values: np.ndarray, where: np.ndarray) -> dict[str, np.ndarray]:
    """``{key: values (zero where not `where`), "_" + key: where}``, SyncVectorEnv's layout."""
    shape = (-1,) + (1,) * (values.ndim - 1)
    kept = np.where(where.reshape(shape), values, np.zeros_like(values))
    return {key: kept, f"_{key}": where.copy()}
