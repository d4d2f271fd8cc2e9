"""The training of COLE (`aht_bench.algorithms.cole`, whose docstring describes it): networks,
state, phases and one iteration of every seed.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from aht_bench.algorithms.api import MethodSetup, buffer_population, fresh_params
from aht_bench.algorithms.cole.config import (
    MAX_POPULATION,
    ColeConfig,
)
from aht_bench.algorithms.common import params_shape, slot_structs, two_player_env
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.policies.population import Population
from aht_bench.training.driver import map_seeds
from aht_bench.training.partners import SampledTeammate, TeammatePool
from aht_bench.training.ppo import LearnerState, make_optimizer, ppo_update
from aht_bench.training.report import Curve, Report
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    reset_rollout,
    rollout,
)
from aht_bench.training.streams import LossTerm, loss_streams, phase_summary

# ------------------------------------------------------------------- incompatibility (host)


def coalition_values(payoffs: np.ndarray) -> np.ndarray:
    """(2^n,) float64 `v(C)` of every coalition of the cross-play game `payoffs` (n, n), indexed
    by bit mask (member i in C iff bit i is set): the mean of `payoffs[i, j]` over i, j in C,
    `v({}) = 0` (module docstring).

    Built by doubling: the coalitions holding member k are those of members 0..k-1 plus k, so
    their payoff sums add `M[k, k]` and `sum_{j in C} (M[k, j] + M[j, k])`.
    """
    m = np.asarray(payoffs, np.float64)
    n = m.shape[0]
    if m.shape != (n, n):
        raise ValueError(f"payoffs has shape {m.shape}, expected a square matrix")
    if n > MAX_POPULATION:
        raise ValueError(f"{n} members: exact Shapley values are enumerated for n <= 21")
    total = np.zeros(1)  # payoff sums of the coalitions of members 0..k-1
    size = np.zeros(1)
    for k in range(n):
        cross = m[k, :k] + m[:k, k]
        with_k = np.zeros(1)  # sum_{j in C} cross[j] for every C of members 0..k-1
        for j in range(k):
            with_k = np.concatenate([with_k, with_k + cross[j]])
        total = np.concatenate([total, total + m[k, k] + with_k])
        size = np.concatenate([size, size + 1])
    return np.where(size > 0, total / np.maximum(size, 1) ** 2, 0.0)


def shapley_values(payoffs: np.ndarray) -> np.ndarray:
    """(n,) float64 exact Shapley values of the members of the cross-play game `payoffs`
    (n, n): `phi_i = sum_{S not holding i} |S|! (n - |S| - 1)! / n! (v(S + {i}) - v(S))`."""
    values = coalition_values(payoffs)
    n = int(np.asarray(payoffs).shape[0])
    masks = np.arange(2**n)
    sizes = np.zeros(2**n, np.int64)
    for i in range(n):
        sizes += (masks >> i) & 1
    weight = np.array(
        [math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) for s in range(n)]
    )
    phi = np.zeros(n)
    for i in range(n):
        without = masks[((masks >> i) & 1) == 0]
        gain = values[without | (1 << i)] - values[without]
        phi[i] = np.sum(weight[sizes[without]] * gain)
    return phi


def partner_distribution(
    shapley: np.ndarray, counts: np.ndarray, alpha: float, c_uct: float
) -> np.ndarray:
    """(n,) float64 draw probabilities of the n members: the incompatibility softmax plus the
    UCB bonus, normalised (module docstring). `counts` (n,) are the members' `n_i`."""
    phi = np.asarray(shapley, np.float64)
    n_i = np.asarray(counts, np.float64)
    if phi.ndim != 1 or phi.shape != n_i.shape or phi.size == 0:
        raise ValueError(f"shapley {phi.shape} and counts {n_i.shape} must be the same (n,)")
    spread = phi.max() - phi.min()
    if spread > 1e-9 * max(1.0, float(np.abs(phi).max())):
        incompatibility = (phi.max() - phi) / spread
    else:
        incompatibility = np.ones_like(phi)
    priority = np.exp(alpha * (incompatibility - 1.0))  # the softmax, shifted for stability
    q = priority / priority.sum()
    bonus = c_uct * np.sqrt(np.log1p(n_i.sum()) / (1.0 + n_i))
    score = q + bonus
    return score / score.sum()


def mean_cross_play(cross_play: ArrayLike, count: ArrayLike) -> jax.Array:
    """(P,) each filled slot's mean cross-play return with the other `count - 1` members
    (`cross_play[i, i]` for a population of one); -inf for the empty slots. The ego is its
    argmax (the first on ties). `cross_play` (P, P); jittable."""
    m = jnp.asarray(cross_play, jnp.float32)
    slots = jnp.arange(m.shape[0])
    filled = slots < count
    others = filled[:, None] & filled[None, :] & (slots[:, None] != slots[None, :])
    mean_others = jnp.sum(jnp.where(others, m, 0.0), axis=1) / jnp.maximum(count - 1, 1)
    score = jnp.where(jnp.asarray(count) > 1, mean_others, jnp.diagonal(m))
    return jnp.where(filled, score, -jnp.inf)


# ---------------------------------------------------------------------------------------- setup


class Networks(NamedTuple):
    member: MLPActorCritic  # every population member; one value head
    ego: MLPActorCritic  # the ego is a member (the same architecture)


class Pairings(NamedTuple):
    seat0: Pairing  # roles (member, SampledTeammate), the learner in seat 0
    seat1: Pairing  # the same, the learner in seat 1
    cross: Pairing  # roles (member, member), no learners: cross-play evaluation


def setup(config: ColeConfig) -> MethodSetup:
    """What a COLE run of `config` derives from it: the env, `Networks`, `Pairings`, the params
    of a member (`param_shapes`) and a member's optimiser."""
    env = two_player_env(config, "COLE")
    net = MLPActorCritic(env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.hidden)
    shapes = params_shape(net)
    partner = SampledTeammate(Population(net, slot_structs(shapes, config.population_size)))
    coef = config.shaped_reward_coef
    pairings = Pairings(
        seat0=Pairing((net, partner), (0,), (0, 1), coef),
        seat1=Pairing((net, partner), (0,), (1, 0), coef),
        cross=Pairing((net, net), (), (0, 1), coef),
    )
    optimizer = make_optimizer(config.ppo, config.updates_per_iteration)
    return MethodSetup(config, env, Networks(member=net, ego=net), pairings, shapes, optimizer)


MEMBER_LOSS_TERMS = (
    LossTerm("seat0", 1.0, False, 1.0, 0),
    LossTerm("seat1", 1.0, False, 1.0, 0),
)
"""The new member's loss: the standard PPO loss on its transitions in each seat (unit weights,
sign +1, its one value head), entropy once over both."""


# ---------------------------------------------------------------------------------------- state


class ColeBuffer(NamedTuple):
    """The population: one slot per iteration, filled in order."""

    members: Params  # leaves (P, ...): member params; slot i from iteration i
    cross_play: jax.Array  # (P, P) float32: M[i, j] for filled slots (symmetric), 0 elsewhere
    partner_counts: jax.Array  # (P,) float32: n_i, the probability mass member i was drawn with
    count: jax.Array  # () int32: filled slots


class ColeState(NamedTuple):
    """Everything a COLE run needs to continue exactly, between two iterations (each member's
    learner state, envs and Adam state live only inside its iteration)."""

    ego: Params  # the member with the highest mean cross-play return (zeros before any)
    buffer: ColeBuffer  # the population and its cross-play matrix
    key: jax.Array  # PRNG key of the next iteration
    iteration: jax.Array  # () int32: iterations done


def init(key: jax.Array, setup: MethodSetup) -> ColeState:
    """A fresh run for one seed: an empty population."""
    shapes = setup.param_shapes
    size = setup.config.population_size
    return ColeState(
        ego=jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes),
        buffer=ColeBuffer(
            members=jax.tree.map(lambda x: jnp.zeros((size,) + x.shape, x.dtype), shapes),
            cross_play=jnp.zeros((size, size), jnp.float32),
            partner_counts=jnp.zeros((size,), jnp.float32),
            count=jnp.zeros((), jnp.int32),
        ),
        key=key,
        iteration=jnp.zeros((), jnp.int32),
    )


# ------------------------------------------------------------------------------ member training


class MemberPhaseState(NamedTuple):
    """The carry of a member's training scan (one seed)."""

    learner: LearnerState  # the new member's params and Adam state
    seat0: RolloutState  # envs with the learner in seat 0, persistent across updates
    seat1: RolloutState  # envs with the learner in seat 1
    key: jax.Array


def _member_update(
    carry: MemberPhaseState,
    slots: Params,
    weights: jax.Array,
    self_play: jax.Array,
    setup: MethodSetup,
) -> tuple[MemberPhaseState, dict[str, jax.Array]]:
    """One update: a rollout in each seat against partners drawn from the pool, one PPO update."""
    config, env, pairings = setup.config, setup.env, setup.pairings
    net = setup.networks.member
    key, k_seat0, k_seat1, k_ppo = jax.random.split(carry.key, 4)
    params = carry.learner.params
    # self-play: slot 0 is the learner as it is now (weights put all mass on it)
    members = jax.tree.map(lambda s, p: jnp.where(self_play, s.at[0].set(p), s), slots, params)
    pool = TeammatePool(Population(net, members), weights)
    steps = config.rollout_length
    seat0, t0 = rollout(env, pairings.seat0, (params, pool), carry.seat0, k_seat0, steps)
    seat1, t1 = rollout(env, pairings.seat1, (params, pool), carry.seat1, k_seat1, steps)
    data: dict[str, tuple[Trajectory, int]] = {"seat0": (t0, 0), "seat1": (t1, 0)}
    streams = loss_streams(MEMBER_LOSS_TERMS, data, config.ppo)
    learner, metrics = ppo_update(net, carry.learner, streams, k_ppo, config.ppo, setup.optimizer)
    a, b = episode_stats(t0, seat=0), episode_stats(t1, seat=1)
    episodes = a["episodes"] + b["episodes"]
    total = jnp.nan_to_num(a["episode_return"]) * a["episodes"]
    total += jnp.nan_to_num(b["episode_return"]) * b["episodes"]
    metrics["train_return"] = jnp.where(episodes > 0, total / jnp.maximum(episodes, 1.0), jnp.nan)
    metrics["train_episodes"] = episodes
    return MemberPhaseState(learner, seat0, seat1, key), metrics


def member_phase(
    slots: Params,
    member: Params,
    weights: jax.Array,
    self_play: jax.Array,
    key: jax.Array,
    setup: MethodSetup,
) -> tuple[Params, dict[str, jax.Array]]:
    """Train `member` (fresh params) for `config.updates_per_iteration` updates against
    partners drawn with `weights` (P,) from `slots` (leaves (P, ...)); in `self_play`, against
    itself. Returns its params and the per-update metrics (leaves (U,))."""
    config, env, pairings = setup.config, setup.env, setup.pairings
    optimizer = setup.optimizer
    key, k_seat0, k_seat1 = jax.random.split(key, 3)
    start = MemberPhaseState(
        learner=LearnerState(member, optimizer.init(member)),
        seat0=reset_rollout(env, pairings.seat0, k_seat0, config.num_envs),
        seat1=reset_rollout(env, pairings.seat1, k_seat1, config.num_envs),
        key=key,
    )
    final, metrics = jax.lax.scan(
        lambda c, _: _member_update(c, slots, weights, self_play, setup),
        start,
        None,
        length=config.updates_per_iteration,
    )
    return final.learner.params, metrics


# ----------------------------------------------------------------------------------- cross-play


def first_episode_returns(trajectory: Trajectory, seat: int = 0) -> jax.Array:
    """(E,) base return of `seat` in the first episode each env ended in `trajectory` (every
    env ends one in a rollout of `horizon` steps from p0)."""
    first = jnp.argmax(trajectory.done, axis=0)
    envs = jnp.arange(trajectory.done.shape[1])
    return trajectory.episode_return[first, envs, seat]


def pair_return(a: Params, b: Params, key: jax.Array, setup: MethodSetup) -> jax.Array:
    """() mean base return of `config.eval_envs` episodes from p0 of member `a` in seat 0 with
    member `b` in seat 1 (one seed)."""
    config, env, pairing = setup.config, setup.env, setup.pairings.cross
    key_reset, key_rollout = jax.random.split(key)
    start = reset_rollout(env, pairing, key_reset, config.eval_envs)
    _, trajectory = rollout(env, pairing, (a, b), start, key_rollout, config.eval_length)
    return jnp.mean(first_episode_returns(trajectory))


@functools.partial(jax.jit, static_argnames="setup")
def _pair_return_seeds(a: Params, b: Params, key: jax.Array, setup: MethodSetup) -> jax.Array:
    return map_seeds(lambda a, b, k: pair_return(a, b, k, setup), a, b, key)


def cross_play_row(members: Params, k: int, key: jax.Array, setup: MethodSetup) -> np.ndarray:
    """(num_seeds, P) float32 `M[k, j]` for j <= k (0 beyond): member k with member j, the mean
    over both seat orders, for every seed (`members` leaves (num_seeds, P, ...), `key`
    (num_seeds, 2)). A host loop over the pairs and orders calling one compiled rollout (cheaper
    to compile than one call holding them all)."""
    num_seeds = int(np.asarray(key).shape[0])
    row = np.zeros((num_seeds, setup.config.population_size), np.float32)
    mine = jax.tree.map(lambda x: x[:, k], members)
    for j in range(k + 1):
        keys = jax.vmap(lambda s, j=j: jax.random.split(jax.random.fold_in(s, j)))(key)
        theirs = jax.tree.map(lambda x, j=j: x[:, j], members)
        first = np.asarray(_pair_return_seeds(mine, theirs, keys[:, 0], setup))
        second = np.asarray(_pair_return_seeds(theirs, mine, keys[:, 1], setup))
        row[:, j] = np.float32(0.5) * (first + second)
    return row


# ------------------------------------------------------------------------------ one iteration


@functools.partial(jax.jit, static_argnames="setup")
def _member_phase_seeds(
    slots: Params,
    member: Params,
    weights: jax.Array,
    self_play: jax.Array,
    key: jax.Array,
    setup: MethodSetup,
) -> tuple[Params, dict[str, jax.Array]]:
    """`member_phase` of every seed; per-seed scalar metrics (last quarter of the updates)."""

    def _one_seed(slots, member, weights, self_play, key):
        member, metrics = member_phase(slots, member, weights, self_play, key, setup)
        summary = phase_summary(metrics, "member_")
        summary["train_return"] = summary.pop("member_train_return")
        return member, summary

    return map_seeds(_one_seed, slots, member, weights, self_play, key)


def partner_weights(buffer: Any, config: ColeConfig) -> np.ndarray:
    """(P,) float64 the draw weights of the next member's partners for one seed's host
    `buffer`: `partner_distribution` over the filled slots, 0 for the empty ones; one-hot on
    slot 0 (the learner itself) for the first member."""
    n = int(buffer.count)
    weights = np.zeros(config.population_size)
    if n == 0:
        weights[0] = 1.0
        return weights
    cross_play = np.asarray(buffer.cross_play, np.float64)[:n, :n]
    counts = np.asarray(buffer.partner_counts, np.float64)[:n]
    phi = shapley_values(cross_play)
    weights[:n] = partner_distribution(phi, counts, config.alpha, config.c_uct)
    return weights


def step(state: ColeState, setup: MethodSetup, done: int) -> tuple[ColeState, dict[str, Any]]:
    """Iteration `done + 1` of COLE for every seed (leading seed axis): partner distribution, a
    new member trained against it, its cross-play with the population, the ego chosen.

    Metrics (numpy, (num_seeds,)): `train_return` (the new member with its training partners,
    last quarter of its updates), `self_play_return` (`M[k, k]`), `xp_return` (its mean
    cross-play with the earlier members; NaN for the first), `population_xp_return` (mean of
    `M` over the population), `ego_return` (the chosen ego's mean cross-play with the rest of
    the population), `ego_index`, `partner_weight_max` and `partner_entropy` (of the
    distribution it trained against) and the member's PPO diagnostics (`member_*`);
    `METHOD.iterate` adds `population_size`, `iteration` and `env_steps` (cumulative,
    cross-play included).
    """
    config = setup.config
    keys = jax.vmap(lambda k: jax.random.split(k, 4))(state.key)
    fresh = fresh_params(setup.networks.member, keys[:, 1])
    host = jax.device_get(state.buffer)
    num_seeds = int(np.asarray(host.count).shape[0])
    weights = np.stack(
        [partner_weights(jax.tree.map(lambda x, s=s: x[s], host), config) for s in range(num_seeds)]
    )
    first = done == 0
    counts = np.asarray(host.partner_counts, np.float64) + (0.0 if first else weights)

    # 1. the new member
    member, metrics = _member_phase_seeds(
        state.buffer.members,
        fresh,
        jnp.asarray(weights, jnp.float32),
        jnp.full((num_seeds,), first),
        keys[:, 2],
        setup,
    )
    members = jax.tree.map(lambda s, m: s.at[:, done].set(m), state.buffer.members, member)
    # 2. its cross-play with every member, itself included
    row = cross_play_row(members, done, keys[:, 3], setup)
    cross_play = np.array(host.cross_play, np.float32)
    cross_play[:, done, :] = row
    cross_play[:, :, done] = row
    count = done + 1
    # 3. the ego: the member with the highest mean cross-play return
    scores = np.stack([np.asarray(mean_cross_play(m, count)) for m in cross_play])
    best = scores.argmax(axis=1)
    seeds = np.arange(num_seeds)
    state = ColeState(
        ego=jax.tree.map(lambda x: x[seeds, best], members),
        buffer=ColeBuffer(
            members=members,
            cross_play=jnp.asarray(cross_play),
            partner_counts=jnp.asarray(counts, jnp.float32),
            count=jnp.full((num_seeds,), count, jnp.int32),
        ),
        key=keys[:, 0],
        iteration=jnp.asarray(state.iteration) + 1,
    )

    out = {k: np.asarray(v) for k, v in metrics.items()}
    earlier = row[:, :done]
    filled = cross_play[:, :count, :count]
    out |= {
        "self_play_return": row[:, done],
        "xp_return": earlier.mean(axis=1) if done else np.full(num_seeds, np.nan, np.float32),
        "population_xp_return": filled.mean(axis=(1, 2)),
        "ego_return": scores[seeds, best],
        "ego_index": best,
    }
    drawn = weights[:, : max(done, 1)]
    out["partner_weight_max"] = drawn.max(axis=1)
    out["partner_entropy"] = 0.0 - np.sum(np.where(drawn > 0, drawn * np.log(drawn), 0.0), axis=1)
    return state, out


def population(state: ColeState, setup: MethodSetup, seed: int | None = 0) -> Population:
    """The members of one seed as a `Population` (host arrays), in generation order, ready for
    `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return buffer_population(state.buffer, "members", setup.networks.member, seed)


REPORT = Report(
    generation_curves=(
        Curve("train_return", "new member with its training partners", "C0", progress="train"),
        Curve("xp_return", "new member x earlier members (mean XP)", "C1"),
        Curve("self_play_return", "new member x itself", "C3"),
    ),
    diverged_fix="Lower ppo.learning_rate",
)
"""How `aht_bench.runs.train` drives COLE: one member per iteration."""
