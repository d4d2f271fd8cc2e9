"""The jitted episode runner: an agent (or any set of policies) against members of a teammate
set, vmapped over seatings and episodes, scanned over time.

    returns = play(eval_set.task, agent, 0, eval_set.teammates, member, seatings, episodes, seed)
    # float32 (num_seatings, num_episodes): the agent's base return per episode

Both sides are `TeammateSet`s and the member on each side is a traced, unbatched index, so one
compiled function serves every member of a set (and every row of a cross-play matrix): inside,
`lax.switch` runs only the chosen member's `act` (an unbatched index stays a switch under
vmap). The seating is traced too, so every seat assignment shares the compile.

Fixed seeds, common random numbers: episode `e` starts from `env.reset(fold_in(fold_in(key,
e), 0))` for every member, seating and agent, so two agents evaluated with the same seed meet
the same start states; the policies' keys come from `fold_in(fold_in(key, e), 1 + seating)`.
No auto-reset: each episode runs once for the task's horizon; after it ends the state is frozen
and the return is the base return at the end (the ego's first seat; every seat of every task
gets the same team reward).

`play` also reports the first out-of-range action the agent side returned (or -1): the actions
that reach the environment are clipped into range, and the caller turns a report into an error.

May import jax, numpy, aht_bench.envs and aht_bench.policies only.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.envs import Task
from aht_bench.envs.core import Environment
from aht_bench.policies.teammate_set import TeammateSet


class PlayOutput(NamedTuple):
    """What one `play` call returns (host NumPy arrays)."""

    returns: np.ndarray  # float32 (num_seatings, num_episodes): agent's base return
    bad_action: (
        np.ndarray
    )  # int32 (num_seatings, num_episodes): first out-of-range agent action, -1 if none
    actions: np.ndarray | None = None
    """With `record`: int32 (num_seatings, num_episodes, horizon, num_agents), the joint action
    the env was stepped with at every step (steps after the end: what was computed, unused)."""


def episode_keys(
    key: jax.Array, episode: jax.Array, seating: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(reset key, play key) of episode `episode` in seating (index) `seating`: the reset key is
    common to every seating, member and agent (common random numbers)."""
    episode_key = jax.random.fold_in(key, episode)
    return jax.random.fold_in(episode_key, 0), jax.random.fold_in(episode_key, 1 + seating)


def _split_step(step_key: jax.Array) -> jax.Array:
    """A step's (agent side's, member side's, env's) keys."""
    return jax.random.split(step_key, 3)


def env_step_keys(play_key: jax.Array, horizon: int) -> jax.Array:
    """(horizon,) the env's key at every step of an episode played with `play_key`: what a
    replay steps the env with (`aht_bench.evaluation.replay`)."""
    return jax.vmap(lambda k: _split_step(k)[2])(jax.random.split(play_key, horizon))


class _Identity:
    """A hashable stand-in for a policy object that cannot be hashed (jit needs hashable aux)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def init_carry(self, batch_shape: tuple[int, ...]) -> Any:
        return self.policy.init_carry(batch_shape)

    def act(self, params: Any, carry: Any, obs: jax.Array, key: jax.Array) -> Any:
        return self.policy.act(params, carry, obs, key)

    def __repr__(self) -> str:
        return repr(self.policy)


def hashable_set(names: tuple[str, ...] | list[str], members: list[tuple[Any, Any]]) -> TeammateSet:
    """A `TeammateSet` whose policies can serve as jit's static data (unhashable ones wrapped)."""
    fixed = []
    for policy, params in members:
        try:
            hash(policy)
        except TypeError:
            policy = _Identity(policy)
        fixed.append((policy, params))
    return TeammateSet(list(names), fixed)


def seat_tables(
    seatings: tuple[tuple[int, ...], ...], num_agents: int
) -> tuple[np.ndarray, np.ndarray]:
    """(agent seats int32 (S, k), member seats int32 (S, num_agents - k)) of `seatings`."""
    agent = np.asarray(seatings, np.int32)
    members = np.asarray(
        [[s for s in range(num_agents) if s not in seating] for seating in seatings], np.int32
    )
    return agent, members


def _act_seats(
    side: TeammateSet, index: jax.Array, carry: Any, obs: jax.Array, key: jax.Array
) -> tuple[jax.Array, Any]:
    """Member `index` of `side` acts in each of its seats (obs (seats, obs_dim))."""
    keys = jax.random.split(key, obs.shape[0])
    action, carry, _ = jax.vmap(side.act, in_axes=(None, 0, 0, 0))(index, carry, obs, keys)
    return jnp.asarray(action, jnp.int32), carry


def _episode(
    env: Environment,
    agent: TeammateSet,
    agent_index: jax.Array,
    mates: TeammateSet,
    mate_index: jax.Array,
    agent_seats: jax.Array,
    mate_seats: jax.Array,
    reset_key: jax.Array,
    play_key: jax.Array,
    record: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """One episode: (agent's base return float32 (), first bad agent action int32 () or -1,
    with `record` the joint actions int32 (horizon, num_agents), else None)."""
    state, timestep = env.reset(reset_key)
    agent_carry = agent.init_carry((agent_seats.shape[0],))
    mate_carry = mates.init_carry((mate_seats.shape[0],))

    def _env_step(carry, step_key):
        state, timestep, agent_carry, mate_carry, done, ret, bad = carry
        key_agent, key_mate, key_env = _split_step(step_key)
        agent_action, agent_carry = _act_seats(
            agent, agent_index, agent_carry, timestep.obs[agent_seats], key_agent
        )
        mate_action, mate_carry = _act_seats(
            mates, mate_index, mate_carry, timestep.obs[mate_seats], key_mate
        )
        out_of_range = (agent_action < 0) | (agent_action >= env.num_actions)
        first_bad = agent_action[jnp.argmax(out_of_range)]
        bad = jnp.where((bad < 0) & ~done & jnp.any(out_of_range), first_bad, bad)
        actions = jnp.zeros((env.num_agents,), jnp.int32)
        actions = actions.at[agent_seats].set(jnp.clip(agent_action, 0, env.num_actions - 1))
        actions = actions.at[mate_seats].set(jnp.clip(mate_action, 0, env.num_actions - 1))
        next_state, next_timestep = env.step(key_env, state, actions)
        # Frozen after the end: stepping a finished episode is undefined in the env contract.
        state = jax.tree.map(lambda old, new: jnp.where(done, old, new), state, next_state)
        timestep = jax.tree.map(lambda old, new: jnp.where(done, old, new), timestep, next_timestep)
        ret = jnp.where(done, ret, next_timestep.episode_return[agent_seats[0]])
        done = done | next_timestep.done
        return (state, timestep, agent_carry, mate_carry, done, ret, bad), (
            actions if record else None
        )

    init = (
        state,
        timestep,
        agent_carry,
        mate_carry,
        timestep.done,
        jnp.zeros((), jnp.float32),
        jnp.full((), -1, jnp.int32),
    )
    final, actions = jax.lax.scan(_env_step, init, jax.random.split(play_key, env.horizon))
    return final[5], final[6], actions


@functools.partial(jax.jit, static_argnames=("env", "num_episodes", "record"))
def _play(
    env: Environment,
    agent: TeammateSet,
    agent_index: jax.Array,
    mates: TeammateSet,
    mate_index: jax.Array,
    agent_table: jax.Array,
    mate_table: jax.Array,
    key: jax.Array,
    num_episodes: int,
    record: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    num_seatings = agent_table.shape[0]

    def one(seating: jax.Array, episode: jax.Array):
        reset_key, play_key = episode_keys(key, episode, seating)
        return _episode(
            env,
            agent,
            agent_index,
            mates,
            mate_index,
            agent_table[seating],
            mate_table[seating],
            reset_key,
            play_key,
            record,
        )

    seatings = jnp.repeat(jnp.arange(num_seatings), num_episodes)
    episodes = jnp.tile(jnp.arange(num_episodes), num_seatings)
    returns, bad, actions = jax.vmap(one)(seatings, episodes)
    shape = (num_seatings, num_episodes)
    if actions is not None:
        actions = actions.reshape(shape + actions.shape[1:])
    return returns.reshape(shape), bad.reshape(shape), actions


def play(
    task: Task,
    agent: TeammateSet,
    agent_index: int,
    mates: TeammateSet,
    mate_index: int,
    seatings: tuple[tuple[int, ...], ...],
    num_episodes: int,
    seed: int,
    record: bool = False,
) -> PlayOutput:
    """Member `agent_index` of `agent` in the seats of each seating, member `mate_index` of
    `mates` in the others, `num_episodes` episodes per seating; see the module docstring.
    `record`: also return every joint action (`PlayOutput.actions`), for replays; the returns
    are the same either way (tested). The env is `task.env`, the object every layer shares, so
    jit's cache (keyed on it) serves every call."""
    env = task.env
    agent_table, mate_table = seat_tables(seatings, env.num_agents)
    returns, bad, actions = _play(
        env,
        agent,
        jnp.asarray(agent_index, jnp.int32),
        mates,
        jnp.asarray(mate_index, jnp.int32),
        jnp.asarray(agent_table),
        jnp.asarray(mate_table),
        jax.random.PRNGKey(seed),
        num_episodes,
        record,
    )
    recorded = None if actions is None else np.asarray(actions)
    return PlayOutput(np.asarray(returns), np.asarray(bad), recorded)


def check_policy_traces(policy: Any, params: Any, obs_dim: int, batch: int = 2) -> None:
    """Trace `policy.act` as the runner will (vmapped over seats); raises what tracing raises."""
    carry = policy.init_carry((batch,))
    obs = jnp.zeros((batch, obs_dim), jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    out = jax.eval_shape(jax.vmap(lambda c, o, k: policy.act(params, c, o, k)), carry, obs, keys)
    action = out[0]
    if action.shape != (batch,) or not jnp.issubdtype(action.dtype, jnp.integer):
        raise ValueError(
            f"act returned actions of shape {action.shape[1:]} and dtype {action.dtype} per "
            "observation; it must return one integer action of shape ()"
        )
