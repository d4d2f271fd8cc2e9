"""Rollouts for any seat pairing: learners and fixed policies in any seats, any reset source.

A `Pairing` names one policy per *role* (e.g. IPPO: agent 0, agent 1; ego training: ego,
teammate), the seat each role plays, and which roles are learners. `rollout` scans `num_steps`
joint steps of a batch of `AutoReset` envs (whatever the reset source: fresh p0 starts, or
`StoredStates` for the paper's SXP/XSP rollouts) and records, for each learner role, what PPO
needs: observations, actions, log-probs, values, the value of the episode's last observation
where the horizon cut it, and the learner's training reward (`base + shaped_reward_coef *
shaped` of its seat).

Carries are reset at episode starts (`aht_bench.policies.reset_carry_where`) before a policy
acts; the learner's carry before the first step is kept so that a recurrent learner can be
re-run over the same sequence in the PPO update.

May import jax, flax, aht_bench.envs and aht_bench.policies only.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.envs.core import EnvState
from aht_bench.envs.registry import make
from aht_bench.envs.wrappers import AutoReset, P0Starts
from aht_bench.policies.core import Carry, Params, Policy, reset_carry_where
from aht_bench.policies.networks import GRUCarry


@functools.lru_cache(maxsize=64)
def make_env(task_id: str, shaping: tuple[tuple[str, float], ...] = ()) -> AutoReset:
    """`AutoReset(envs.make(task_id))` with p0 starts; `shaping` ((name, value) pairs, Overcooked
    only) replaces shaped-reward coefficients (`aht_bench.envs.overcooked.with_shaping`).

    One env object per (task, shaping) in a process: an env is a static argument of jitted
    functions (`init_rollout`) and compares by identity, so this is what lets two runs of one
    task share their compiled programs; a method's setup (`aht_bench.training.setup`) holds it.
    Safe to call while tracing a jitted function: backends that compute with jnp at
    construction (Jumanji's specs) are evaluated eagerly.
    """
    with jax.ensure_compile_time_eval():
        env = make(task_id)
        if shaping:
            from aht_bench.envs.overcooked import with_shaping

            env = with_shaping(env, **dict(shaping))  # type: ignore[arg-type]
        return AutoReset(env)


@dataclasses.dataclass(frozen=True)
class Pairing:
    """Who plays a rollout: one policy per role, and which roles learn.

    A learner policy must have `evaluate(params, carry, obs) -> (logits, values, carry)` whose
    `act` samples a categorical over those logits (both `aht_bench.policies` networks); the
    rollout samples learners' actions from `evaluate` directly (see `_learner_act`).
    """

    policies: tuple[Policy, ...]
    """One policy per role."""
    learners: tuple[int, ...]
    """The roles whose transitions are recorded, in the order of `Trajectory.learners`."""
    seats: tuple[int, ...] = ()
    """The seat of each role (a permutation of the env's seats); () means role r in seat r."""
    shaped_reward_coef: float = 1.0
    """A learner's training reward is `base + shaped_reward_coef * shaped` of its seat."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "policies", tuple(self.policies))
        object.__setattr__(self, "learners", tuple(int(r) for r in self.learners))
        seats = self.seats or tuple(range(len(self.policies)))
        object.__setattr__(self, "seats", tuple(int(x) for x in seats))
        if sorted(self.seats) != list(range(len(self.policies))):
            raise ValueError(
                f"seats={self.seats} must give each of the {len(self.policies)} roles its own "
                f"seat (a permutation of 0..{len(self.policies) - 1})"
            )
        for r in self.learners:
            if not 0 <= r < len(self.policies):
                raise ValueError(
                    f"learner role {r} does not exist; roles are 0..{len(self.policies) - 1}"
                )
            if not hasattr(self.policies[r], "evaluate"):
                raise ValueError(
                    f"learner role {r} ({type(self.policies[r]).__name__}) has no "
                    "evaluate(params, carry, obs); learners must be networks such as "
                    "aht_bench.policies.MLPActorCritic or RecurrentEgo"
                )

    @property
    def num_roles(self) -> int:
        return len(self.policies)

    @property
    def role_of_seat(self) -> tuple[int, ...]:
        """The role sitting in each seat."""
        return tuple(self.seats.index(seat) for seat in range(len(self.seats)))


class LearnerSetup(NamedTuple):
    """What a single-phase trainer (`aht_bench.algorithms.ippo`, `.fixed_partner`) derives from
    its config: the env, the pairing it plays and its learners' optimiser."""

    env: AutoReset
    pairing: Pairing
    optimizer: Any  # optax.GradientTransformation (`ppo.make_optimizer`)


class RolloutState(NamedTuple):
    """Where a batch of `E` envs stands between two rollouts (part of every train state)."""

    env_state: EnvState[Any]  # leaves (E, ...): the states the next step acts in
    obs: jax.Array  # (E, num_agents, obs_dim) float32: observations of those states
    starts: jax.Array  # (E,) bool: the next step is the first of an episode (reset carries)
    carries: tuple[Carry, ...]  # one per role, leaves (E, ...)


class LearnerData(NamedTuple):
    """One learner role's view of a rollout of `T` steps in `E` envs, time-major."""

    obs: jax.Array  # (T, E, obs_dim) float32: observation o_t the learner acted on
    actions: jax.Array  # (T, E) int32: a_t
    log_probs: jax.Array  # (T, E) float32: log pi_old(a_t | o_t) at collection
    values: jax.Array  # (T, E, K) float32: V_old(o_t), every value head
    final_values: jax.Array  # (T, E, K) float32: V_old(final_obs_t), 0 where terminated at t
    last_values: jax.Array  # (E, K) float32: V_old of the observation after the last step
    rewards: jax.Array  # (T, E) float32: training reward r_t of the learner's seat
    initial_carry: Carry  # leaves (E, ...): carry before step 0 (before its episode-start reset)


class Trajectory(NamedTuple):
    """A rollout: per-learner data plus what all roles share."""

    learners: tuple[LearnerData, ...]  # in `Pairing.learners` order
    starts: jax.Array  # (T, E) bool: step t is the first of an episode (carries were reset)
    terminated: jax.Array  # (T, E) bool: the episode ended inside the task at step t
    truncated: jax.Array  # (T, E) bool: the horizon cut the episode at step t
    episode_return: jax.Array  # (T, E, num_agents) float32: base return including step t
    time: jax.Array  # (T, E) int32: steps taken in the episode including step t (t + 1 from p0)
    states: EnvState[Any] | None  # leaves (T, E, ...): the state step t acted in (keep_states)

    @property
    def done(self) -> jax.Array:
        """(T, E) bool: an episode ended at step t."""
        return jnp.logical_or(self.terminated, self.truncated)


@functools.partial(jax.jit, static_argnames=("env", "pairing", "num_envs"))
def init_rollout(env: AutoReset, pairing: Pairing, key: jax.Array, num_envs: int) -> RolloutState:
    """Reset `num_envs` envs from the env's reset source; fresh carries for every role.

    Jitted on its own (env and pairing static), so initialising many seeds compiles it once;
    `reset_rollout` is the same inside other traced code (e.g. with a reset source that holds
    traced states).
    """
    return reset_rollout(env, pairing, key, num_envs)


def reset_rollout(env: AutoReset, pairing: Pairing, key: jax.Array, num_envs: int) -> RolloutState:
    """`init_rollout`, not jitted: traceable with any env, including one whose reset source holds
    traced states (the paper's SXP/XSP starts)."""
    if env.num_agents != pairing.num_roles:
        raise ValueError(
            f"{env.task_id} has {env.num_agents} seats but the pairing has "
            f"{pairing.num_roles} roles; give one policy per seat"
        )
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(key, num_envs))
    return RolloutState(
        env_state=env_state,
        obs=timestep.obs,
        starts=jnp.ones((num_envs,), bool),
        carries=tuple(p.init_carry((num_envs,)) for p in pairing.policies),
    )


def record_action(carry: Carry, action: jax.Array) -> Carry:
    """A learner's carry after it took `action` (what `act` does after `evaluate`).

    `RecurrentEgo.evaluate` leaves the previous action in its `GRUCarry` unchanged and `act`
    writes the sampled one in; feed-forward carries are `()`.
    """
    if isinstance(carry, GRUCarry):
        return carry._replace(prev_action=action)
    return carry


def _learner_act(
    policy: Any, params: Params, carry: Carry, obs: jax.Array, gumbel: jax.Array
) -> tuple[jax.Array, Carry, jax.Array]:
    """`act` of a learner for a batch of envs: (actions (E,), carries, log-probs (E,)).

    The same distribution as `policy.act` (a categorical over `evaluate`'s logits), sampled as
    `argmax(logits + gumbel)` with Gumbel noise (E, A) drawn before the scan. The values
    `evaluate` computes are unused here (XLA drops them) and are computed after the scan.
    """
    logits, _, carry = jax.vmap(policy.evaluate, in_axes=(None, 0, 0))(params, carry, obs)
    actions = jnp.argmax(logits + gumbel, axis=-1).astype(jnp.int32)
    log_probs = jnp.take_along_axis(jax.nn.log_softmax(logits), actions[:, None], -1)[:, 0]
    return actions, record_action(carry, actions), log_probs


@functools.partial(jax.jit, static_argnums=0)
def init_params(network: Any, key: jax.Array) -> Params:
    """`network.init(key)`, compiled once per network and reused for every agent and seed.

    Call it once per set of params rather than vmapping it: on CPU (jaxlib 0.10.2) a vmapped
    `MLPActorCritic.init` (batched orthogonal initialisers) never returns, and compiling the
    orthogonal initialisers is most of the cost of initialising a run.
    """
    return network.init(key)


def _values(policy: Any, params: Params, carry: Carry, obs: jax.Array) -> jax.Array:
    """Values (..., K) of a learner for a batch of observations (..., obs_dim) and carries.

    Leading axes are flattened into one batch first: one 2-D matmul per layer runs several
    times faster on CPU than the same work as a batched (nested-vmap) matmul.
    """
    lead = obs.shape[:-1]
    flat_obs = obs.reshape((-1, obs.shape[-1]))
    flat_carry = jax.tree.map(
        lambda c: c.reshape((flat_obs.shape[0],) + c.shape[len(lead) :]), carry
    )
    _, values, _ = jax.vmap(policy.evaluate, in_axes=(None, 0, 0))(params, flat_carry, flat_obs)
    return values.reshape(lead + values.shape[-1:])


@dataclasses.dataclass(frozen=True)
class _StartPool:
    """Start states for the episodes that begin during a rollout, drawn before its scan.

    Auto-reset draws a start state for every env at every step and keeps it only where an
    episode ended; on CPU that draw was most of the cost of an LBF step. Here a pool of
    `size` states is drawn in one batch, and the n-th episode to end in the rollout (in step,
    then env order) restarts from state n of the pool. Each pool state is an independent draw
    from the reset source, used at most once, and which one an episode gets does not depend
    on its value, so every new episode still starts from an independent draw (p0, or uniform
    over stored states). Should more episodes end than the pool holds, the envs past its end
    draw a start state with their own step key, as `AutoReset.step` does, in a loop that runs
    only at the steps that need it.
    """

    states: EnvState[Any]  # leaves (size, ...)
    enough: bool  # the pool holds a state for every step of every env: no draws past its end

    @staticmethod
    def draw(env: AutoReset, key: jax.Array, num_steps: int, num_envs: int) -> _StartPool:
        size = _pool_size(env.horizon, num_steps, num_envs)
        states = env.sample_starts(jax.random.split(key, size))
        return _StartPool(states, enough=size == num_steps * num_envs)

    @property
    def size(self) -> int:
        return int(self.states.episode_return.shape[0])

    def take(
        self, env: AutoReset, done: jax.Array, used: jax.Array, keys: jax.Array
    ) -> tuple[EnvState[Any], jax.Array]:
        """Start states (leaves (E, ...)) for the envs where `done` (E,), and the pool states
        used so far; `used` () int32 counts those before this step, `keys` (E,) are the step's
        reset keys (for envs past the end of the pool)."""
        slot = used + jnp.cumsum(done) - 1
        starts = jax.tree.map(lambda x: x[jnp.clip(slot, 0, self.size - 1)], self.states)
        past_end = done & (slot >= self.size)
        if not self.enough:

            def _draw(carry):
                _, states = carry
                fresh = env.sample_starts(keys)
                return jnp.zeros((), bool), _where_envs(past_end, fresh, states)

            # a while loop, not lax.cond: under vmap (seeds) a cond computes both branches
            _, starts = jax.lax.while_loop(lambda c: c[0], _draw, (jnp.any(past_end), starts))
        return starts, used + jnp.sum(done, dtype=jnp.int32)


def _pool_size(horizon: int, num_steps: int, num_envs: int) -> int:
    """Start states drawn per rollout: room for an episode end every `min(horizon, 8)` steps
    in every env, more than end in LBF and Overcooked (horizons of 100 and 400 steps; a
    shorter horizon, as in the matrix games, sizes it by the horizon). Past that,
    `_StartPool.take` draws the rest."""
    return min(num_steps, -(-num_steps // min(horizon, 8))) * num_envs


def _where_envs(cond: jax.Array, a: Any, b: Any) -> Any:
    """`a` where `cond` (E,) else `b`, leaf by leaf (leaves (E, ...))."""
    return jax.tree.map(
        lambda x, y: jnp.where(cond.reshape(cond.shape + (1,) * (x.ndim - 1)), x, y), a, b
    )


def _max_truncations(env: AutoReset, num_steps: int) -> int | None:
    """A bound on the truncations of one env in `num_steps` steps, or None where there is none
    short of `num_steps`.

    With p0 restarts every episode after the first starts at time 0 and is cut at the horizon,
    so an env is truncated at most `ceil(num_steps / horizon)` times. Stored start states may
    be cut after any number of steps.
    """
    if not isinstance(env.source, P0Starts):
        return None
    bound = -(-num_steps // env.horizon)
    return bound if bound < num_steps else None


def _truncated_values(
    policy: Any,
    params: Params,
    carry: Carry,
    final_obs: jax.Array,
    truncated: jax.Array,
    max_truncations: int,
) -> jax.Array:
    """(T, E, K) values of `final_obs` (T, E, obs_dim) where `truncated` (T, E); 0 elsewhere.

    Each env has at most `max_truncations` truncated steps: those are gathered (with filler
    steps where an env has fewer), evaluated as one batch and scattered back.
    """
    steps, envs = truncated.shape
    # the truncated steps of each env first (stable: the rest keep their order)
    order = jnp.argsort(jnp.logical_not(truncated), axis=0, stable=True)[:max_truncations]
    env_index = jnp.arange(envs)[None, :]
    picked = jax.tree.map(lambda x: x[order, env_index], (carry, final_obs))
    values = _values(policy, params, *picked)  # (max_truncations, E, K)
    scattered = jnp.zeros((steps, envs, values.shape[-1]), values.dtype)
    scattered = scattered.at[order, env_index].set(values)
    return jnp.where(truncated[..., None], scattered, 0.0)


class _Draws(NamedTuple):
    """The randomness of one rollout, drawn before its scan (`rollout`)."""

    noise: tuple[jax.Array, ...]  # per role: Gumbel noise (T, E, A) of a learner's samples, or
    #   one key per step and env (T, E) for a fixed policy's `act`
    pool: _StartPool  # start states of the episodes that begin during the rollout
    env_keys: jax.Array  # (T, E) keys of `env.step`
    reset_keys: jax.Array  # (T, E) keys for start states past the end of the pool, (T, 0) if
    #   it holds enough


def _draw(
    env: AutoReset, pairing: Pairing, key: jax.Array, num_steps: int, num_envs: int
) -> _Draws:
    keys = jax.random.split(key, pairing.num_roles + 1)
    noise = []
    for r in range(pairing.num_roles):
        if r in pairing.learners:  # Gumbel noise (T, E, A) for argmax sampling
            num_actions = env.num_actions
            noise.append(jax.random.gumbel(keys[r], (num_steps, num_envs, num_actions)))
        else:  # one key per step and env for `act`
            noise.append(jax.random.split(keys[r], (num_steps, num_envs)))
    key_pool, key_steps, key_resets = jax.random.split(keys[-1], 3)
    pool = _StartPool.draw(env, key_pool, num_steps, num_envs)
    env_keys = jax.random.split(key_steps, (num_steps, num_envs))
    reset_keys = jax.random.split(key_resets, (num_steps, 0 if pool.enough else num_envs))
    return _Draws(tuple(noise), pool, env_keys, reset_keys)


def _act(
    pairing: Pairing,
    params: tuple[Params, ...],
    carry: RolloutState,
    role_noise: tuple[jax.Array, ...],
) -> tuple[list[jax.Array], list[Carry], list[Carry], list[jax.Array | None]]:
    """Every role's actions at one step of every env: (actions, carries before and after,
    log-probs of the learners' actions (None for a fixed policy)), one entry per role."""
    actions, before, after, log_probs = [], [], [], []
    for r, policy in enumerate(pairing.policies):
        role_carry = reset_carry_where(policy, carry.starts, carry.carries[r])
        obs = carry.obs[:, pairing.seats[r]]
        if r in pairing.learners:
            a, next_carry, log_prob = _learner_act(
                policy, params[r], role_carry, obs, role_noise[r]
            )
        else:
            act = jax.vmap(policy.act, in_axes=(None, 0, 0, 0))
            a, next_carry, _ = act(params[r], role_carry, obs, role_noise[r])
            log_prob = None
        actions.append(a)
        before.append(role_carry)
        after.append(next_carry)
        log_probs.append(log_prob)
    return actions, before, after, log_probs


def _learner_data(
    policy: Any,
    params: Params,
    record: tuple[Any, ...],
    last: tuple[Carry, jax.Array],
    ended: tuple[jax.Array, jax.Array],
    max_truncations: int | None,
    initial_carry: Carry,
) -> LearnerData:
    """A learner's `LearnerData` from what the scan recorded of it (obs, actions, log-probs,
    rewards, final obs, carries before and after, time-major), `last` (its carry and obs
    after the rollout) and `ended` (terminated, truncated (T, E)): values computed in batches."""
    obs, actions, log_probs, rewards, final_obs, before, after = record
    terminated, truncated = ended
    values = _values(policy, params, before, obs)
    last_values = _values(policy, params, *last)
    if max_truncations is None:
        final_values = _values(policy, params, after, final_obs)
    else:
        # Where no episode ended, final_obs_t is o_{t+1} (and the carry the same), so only
        # the truncated steps need a network call of their own.
        following = jnp.concatenate([values[1:], last_values[None]])
        truncated_values = _truncated_values(
            policy, params, after, final_obs, truncated, max_truncations
        )
        final_values = jnp.where(truncated[..., None], truncated_values, following)
    return LearnerData(
        obs=obs,
        actions=actions,
        log_probs=log_probs,
        values=values,
        final_values=jnp.where(terminated[..., None], 0.0, final_values),
        last_values=last_values,
        rewards=rewards,
        initial_carry=initial_carry,
    )


def rollout(
    env: AutoReset,
    pairing: Pairing,
    params: tuple[Params, ...],
    state: RolloutState,
    key: jax.Array,
    num_steps: int,
    keep_states: bool = False,
    shaped_reward_coef: jax.Array | None = None,
) -> tuple[RolloutState, Trajectory]:
    """Scan `num_steps` joint steps of every env in `state`; `params[r]` drives role r.

    `shaped_reward_coef` (a traced scalar, e.g. an annealed one) replaces the pairing's.

    Returns the state to continue from and the `Trajectory` (time-major, `T = num_steps`).
    Jittable (call it inside a jitted update); `pairing`, `num_steps` and `keep_states` are
    static.

    Three things keep the scan body small, which is what sets the speed on CPU: all randomness
    (env keys, fixed policies' keys, Gumbel noise for the learners' samples) is drawn before
    the scan in a few large calls (`_draw`), since every PRNG call inside it costs a loop of
    its own; the start states of the episodes that begin during the rollout are drawn before
    it too (`_StartPool`), instead of one per env and step as `AutoReset.step` draws them; and
    learners only act inside it, their values being computed after it as batches of `T * E`
    (the value of a step's final observation is the next step's value unless the episode
    ended, so only truncated steps need one of their own: `_learner_data`).
    """
    num_envs = state.obs.shape[0]
    seats = pairing.seats
    if len(params) != pairing.num_roles:
        raise ValueError(f"got {len(params)} params for {pairing.num_roles} roles")
    learner_carries = tuple(state.carries[r] for r in pairing.learners)
    draws = _draw(env, pairing, key, num_steps, num_envs)
    coef = pairing.shaped_reward_coef if shaped_reward_coef is None else shaped_reward_coef

    def _env_step(loop: tuple[RolloutState, jax.Array], step_inputs: tuple[Any, ...]):
        carry, used = loop  # used: () int32, pool states used so far
        *role_noise, step_env_keys, step_reset_keys = step_inputs
        actions, before, after, log_probs = _act(pairing, params, carry, tuple(role_noise))
        joint = jnp.stack([actions[r] for r in pairing.role_of_seat], axis=1)
        # env.step, with the start states of the episodes that end drawn from the pool
        env_state, ts = jax.vmap(env.env.step)(step_env_keys, carry.env_state, joint)
        starts, used = draws.pool.take(env, ts.done, used, step_reset_keys)
        env_state, ts = jax.vmap(env.restart_where_done)(env_state, ts, starts)
        reward = ts.reward + coef * ts.shaped_reward
        records = tuple(
            (
                carry.obs[:, seats[r]],
                actions[r],
                log_probs[r],
                reward[:, seats[r]],
                ts.final_obs[:, seats[r]],
                before[r],
                after[r],
            )
            for r in pairing.learners
        )
        shared = (carry.starts, ts.terminated, ts.truncated, ts.episode_return, ts.time)
        seen = carry.env_state if keep_states else None
        next_state = RolloutState(env_state, ts.obs, ts.done, tuple(after))
        return (next_state, used), (records, shared, seen)

    used = jnp.zeros((), jnp.int32)
    (state, _), (records, shared, states) = jax.lax.scan(
        _env_step, (state, used), (*draws.noise, draws.env_keys, draws.reset_keys)
    )
    starts, terminated, truncated, episode_return, time = shared
    max_truncations = _max_truncations(env, num_steps)
    learners = []
    for i, r in enumerate(pairing.learners):
        policy = pairing.policies[r]
        last = (reset_carry_where(policy, state.starts, state.carries[r]), state.obs[:, seats[r]])
        ended = (terminated, truncated)
        data = _learner_data(
            policy, params[r], records[i], last, ended, max_truncations, learner_carries[i]
        )
        learners.append(data)
    return state, Trajectory(
        learners=tuple(learners),
        starts=starts,
        terminated=terminated,
        truncated=truncated,
        episode_return=episode_return,
        time=time,
        states=states,
    )


def episode_stats(trajectory: Trajectory, seat: int = 0) -> dict[str, jax.Array]:
    """Base return of `seat` in the episodes that ended in `trajectory`.

    {"episode_return": mean base return (NaN if no episode ended), "episodes": how many ended}.
    """
    returns = trajectory.episode_return[..., seat]
    done = trajectory.done.astype(jnp.float32)
    count = jnp.sum(done)
    mean = jnp.where(count > 0, jnp.sum(returns * done) / jnp.maximum(count, 1.0), jnp.nan)
    return {"episode_return": mean, "episodes": count}
