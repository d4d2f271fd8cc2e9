"""COLE, Cooperative Open-ended LEarning (Li et al. 2023; paper App. "Baselines Overview",
Table cole_hyperparams) over the shared PPO core.

COLE grows a population one member per iteration. Each new member is a fresh `MLPActorCritic`
(one value head) trained by PPO to maximise its return with partners drawn, one per episode,
from the current population, with a distribution that favours the members that are hardest to
coordinate with (cooperative incompatibility, from Shapley values of the population's cross-play
game) plus a UCB exploration bonus. After training, the new member plays every member
(itself included) to extend the cross-play matrix, then joins the population. The final ego
agent is the member with the highest mean cross-play return with the rest of the population.

One iteration (`iterate`), for every seed:

1. **Partner distribution** (host, numpy; the definitions below). Iteration 0 has no
   population: the first member trains with a copy of itself (self-play, as COLE starts).
2. **Training** (one jitted call, seeds vmapped, all PPO updates in one `lax.scan`): each update
   runs two rollouts of `num_envs` envs x `rollout_length` steps, the learner in seat 0 and a
   `SampledTeammate` over the population (weights = the distribution; zero for empty slots) in
   seat 1, then the same with the seats swapped, so the member can partner in either seat.
   The two are two streams (`LossTerm("seat0"/"seat1", 1, unweighted, +1, head 0)`) of one
   `ppo_update`. In self-play the pool's slot 0 holds the learner's current params, refreshed
   every update (the partner is the learner as it is now; only the learner-side transitions
   train, so self-play uses the same compiled update as every later iteration). Fresh params,
   a fresh Adam state and fresh envs per member.
3. **Cross-play**: the new member k plays each member j <= k for `eval_envs` episodes from p0
   in each seat order (one `horizon`-step rollout per order, the first episode of every env
   counted; a host loop over the 2(k + 1) rollouts, one compiled function); `M[k, j] = M[j, k]`
   = the mean base return over both orders (`M[k, k]`: its self-play return). The ego
   (`state.ego`) becomes the member with the highest mean cross-play return
   (`mean_cross_play`).

Definitions (our reading: the paper names the ingredients, Shapley-value cooperative
incompatibility, UCB-style sampling with alpha and c_UCT, but not the formulas; COLE's
"graphic Shapley value" of Li et al. is a Shapley value of the cross-play graph, which is what
these make exact):

- Cross-play game over the n members generated so far: payoff matrix `M` (n, n) as above;
  coalition value `v(C) = (1 / |C|^2) sum_{i in C} sum_{j in C} M[i, j]` (the mean return of
  partners drawn from C, self-play included), `v({}) = 0`.
- Shapley values, exact by enumeration of the 2^n coalitions (`shapley_values`; n <= 20):
  `phi_i = sum_{S subset N \\ {i}} |S|! (n - |S| - 1)! / n! * (v(S + {i}) - v(S))`;
  `sum_i phi_i = v(N)`. A low `phi_i` means member i lowers the population's mean cross-play:
  it is incompatible with the others.
- Incompatibility `u_i = (max phi - phi_i) / (max phi - min phi)` in [0, 1] (1 for the least
  compatible; all 1 when the phi are equal).
- Priority (alpha): `q_i = exp(alpha * u_i) / sum_j exp(alpha * u_j)`, a softmax with alpha as
  inverse temperature: alpha = 0 is uniform, larger alpha puts more weight on incompatible
  members (the least compatible gets e^alpha times the weight of the most compatible).
- UCB bonus (c_UCT): `b_i = c_UCT * sqrt(ln(1 + N) / (1 + n_i))`, `n_i` the times member i was
  sampled, counted as the probability mass it got in past iterations (`partner_counts`: after
  an iteration with distribution p, `n_i += p_i`; members start at 0), `N = sum_i n_i`
  (ln(1 + N) so that the first draws, N = 0, give no bonus rather than ln 0).
- Partner distribution `p_i = (q_i + b_i) / sum_j (q_j + b_j)` (`partner_distribution`).
- Final ego: `argmax_i (1 / (n - 1)) sum_{j != i} M[i, j]` (self-play excluded; `M[0, 0]` for a
  population of one), the first on ties (`mean_cross_play`).

Other choices the paper leaves open: the population size is the number of iterations (the
table's Population Size; 20 x 1.8e7 = 360M steps on LBF, the paper's budget); Timesteps Per
Iteration counts the training rollouts of both seats (whole updates); the cross-play rollouts
come on top (counted in `env_steps`, `env_steps_after`); Num Envs is per rollout; members
after the first train against the population only (the paper's description; no self-play term
mixed in); rollout length 128 (LBF) / 400 (Overcooked) and `eval_envs` = 64 are ours; members
train on the shaped reward, cross-play uses the base return.

    config = cole.preset("quick", "lbf")
    result = cole.train(jax.random.PRNGKey(0), config, num_seeds=1)
    result.metrics["ego_return"]                      # (num_seeds, population_size)
    save_population("pop.safetensors", cole.population(result.state, config, seed=0))

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from aht_bench.algorithms.api import Method, TaskConfig, buffer_population, fresh_params
from aht_bench.algorithms.common import (
    check_task_id,
    require,
)
from aht_bench.algorithms.rotate import LossTerm, loss_streams, phase_summary
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.policies.population import Population
from aht_bench.training import presets
from aht_bench.training.config import PPOConfig, normalise_shaping
from aht_bench.training.driver import map_seeds
from aht_bench.training.partners import SampledTeammate, TeammatePool
from aht_bench.training.ppo import LearnerState, make_optimizer, ppo_update
from aht_bench.training.report import IterationReport
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    make_env,
    reset_rollout,
    rollout,
)

MAX_POPULATION = 21
"""Shapley values enumerate the 2^(n-1) coalitions of the earlier members: n <= 21."""


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class ColeConfig(TaskConfig):
    """A COLE run (paper Table cole_hyperparams)."""

    task_id: str
    """Registered task id or alias of a two-player task."""
    population_size: int
    """Members generated, one per iteration (tables: Population Size)."""
    timesteps_per_iteration: int
    """Training joint env steps per member, both seats' rollouts counted (tables: Timesteps Per
    Iteration); the cross-play rollouts come on top."""
    num_envs: int
    """Parallel envs of each of an update's two rollouts (tables: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two PPO updates (not in the paper's tables)."""
    ppo: PPOConfig
    """PPO hyperparameters of every member (tables: LR, Epochs, Minibatches, Ent-Coef, Eps-Clip,
    Anneal LR)."""
    alpha: float
    """Inverse temperature of the incompatibility softmax; 0 = uniform (tables: alpha)."""
    c_uct: float
    """Weight of the UCB exploration bonus (tables: c_UCT)."""
    eval_envs: int = 64
    """Episodes per seat order for each cross-play entry (not in the paper's tables)."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of every member's actor and critic MLPs."""
    shaped_reward_coef: float = 1.0
    """Training reward is `base + shaped_reward_coef * shaped`; cross-play uses the base return."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients that replace the paper's for every learner
    (as `RunConfig.shaping`, e.g. (("counter_pickup", 0.0),)); () keeps the paper's."""

    def __post_init__(self) -> None:
        check_task_id(self.task_id)
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        hidden = tuple(int(h) for h in self.hidden)
        object.__setattr__(self, "hidden", hidden)
        require(len(hidden) >= 1 and min(hidden) >= 1, "hidden", hidden, "give sizes >= 1")
        require(
            1 <= self.population_size <= MAX_POPULATION,
            "population_size",
            self.population_size,
            f"use 1..{MAX_POPULATION} (exact Shapley values enumerate all coalitions of the "
            "earlier members)",
        )
        require(self.num_envs >= 1, "num_envs", self.num_envs, "use at least 1")
        require(self.rollout_length >= 1, "rollout_length", self.rollout_length, "use >= 1")
        require(self.eval_envs >= 1, "eval_envs", self.eval_envs, "use at least 1")
        for name in ("alpha", "c_uct", "shaped_reward_coef"):
            value = getattr(self, name)
            require(value >= 0, name, value, "use a value >= 0")
        require(
            self.timesteps_per_iteration >= self.batch_size,
            "timesteps_per_iteration",
            self.timesteps_per_iteration,
            f"one update takes 2 rollouts (one per seat) x num_envs x rollout_length = "
            f"{self.batch_size} timesteps",
        )
        transitions = self.num_envs * self.rollout_length
        require(
            transitions % self.ppo.num_minibatches == 0,
            "ppo.num_minibatches",
            self.ppo.num_minibatches,
            f"it must divide the {transitions} transitions (num_envs x rollout_length) of "
            "each seat's stream",
        )

    @property
    def iterations(self) -> int:
        """Iterations of the run: one member each."""
        return self.population_size

    @property
    def batch_size(self) -> int:
        """Joint env steps of one training update: two rollouts (one per seat)."""
        return 2 * self.num_envs * self.rollout_length

    @property
    def updates_per_iteration(self) -> int:
        """PPO updates of each member."""
        return self.timesteps_per_iteration // self.batch_size

    @property
    def train_steps_per_iteration(self) -> int:
        """Training joint env steps per iteration (whole updates only)."""
        return self.updates_per_iteration * self.batch_size

    @property
    def eval_length(self) -> int:
        """Steps of a cross-play rollout: the task's horizon (one whole episode per env)."""
        return int(make_env(self.task_id, self.shaping).horizon)

    def eval_steps(self, iteration: int) -> int:
        """Cross-play joint env steps of iteration `iteration` (0-based): member `iteration`
        plays members 0..iteration, two seat orders each."""
        return (iteration + 1) * 2 * self.eval_envs * self.eval_length

    def env_steps_after(self, done: int) -> int:
        """Joint env steps per seed after `done` iterations, training and cross-play."""
        return done * self.train_steps_per_iteration + sum(self.eval_steps(i) for i in range(done))

    @property
    def env_steps_per_iteration(self) -> int:
        """Mean joint env steps per iteration (they grow with the population: see
        `env_steps_after`)."""
        return self.env_steps_after(self.iterations) // self.iterations


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


# ------------------------------------------------------------------------------------ networks


class Networks(NamedTuple):
    member: MLPActorCritic  # every population member; one value head
    ego: MLPActorCritic  # the ego is a member (the same architecture)


@functools.lru_cache(maxsize=32)
def networks(config: ColeConfig) -> Networks:
    """The architectures of a run."""
    env = make_env(config.task_id, config.shaping)
    if env.num_agents != 2:
        raise ValueError(
            f"task_id={config.task_id!r} has {env.num_agents} seats; COLE here is for "
            "two-player tasks"
        )
    member = MLPActorCritic(env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.hidden)
    return Networks(member=member, ego=member)


@functools.lru_cache(maxsize=32)
def _member_shapes(config: ColeConfig) -> Any:
    return jax.eval_shape(networks(config).member.init, jax.random.PRNGKey(0))


class _Pairings(NamedTuple):
    seat0: Pairing  # roles (member, SampledTeammate), the learner in seat 0
    seat1: Pairing  # the same, the learner in seat 1
    cross: Pairing  # roles (member, member), no learners: cross-play evaluation


@functools.lru_cache(maxsize=32)
def _pairings(config: ColeConfig) -> _Pairings:
    net = networks(config).member
    # Only the structure of the population matters here (SampledTeammate compares structures).
    slots = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct((config.population_size,) + x.shape, x.dtype),
        _member_shapes(config),
    )
    partner = SampledTeammate(Population(net, slots))
    coef = config.shaped_reward_coef
    return _Pairings(
        seat0=Pairing((net, partner), (0,), (0, 1), coef),
        seat1=Pairing((net, partner), (0,), (1, 0), coef),
        cross=Pairing((net, net), (), (0, 1), coef),
    )


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


def init(key: jax.Array, config: ColeConfig) -> ColeState:
    """A fresh run for one seed: an empty population."""
    shapes = _member_shapes(config)
    size = config.population_size
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
    config: ColeConfig,
) -> tuple[MemberPhaseState, dict[str, jax.Array]]:
    """One update: a rollout in each seat against partners drawn from the pool, one PPO update."""
    net, pairings = networks(config).member, _pairings(config)
    env = make_env(config.task_id, config.shaping)
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
    optimizer = make_optimizer(config.ppo, config.updates_per_iteration)
    learner, metrics = ppo_update(net, carry.learner, streams, k_ppo, config.ppo, optimizer)
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
    config: ColeConfig,
) -> tuple[Params, dict[str, jax.Array]]:
    """Train `member` (fresh params) for `config.updates_per_iteration` updates against
    partners drawn with `weights` (P,) from `slots` (leaves (P, ...)); in `self_play`, against
    itself. Returns its params and the per-update metrics (leaves (U,))."""
    pairings = _pairings(config)
    env = make_env(config.task_id, config.shaping)
    optimizer = make_optimizer(config.ppo, config.updates_per_iteration)
    key, k_seat0, k_seat1 = jax.random.split(key, 3)
    start = MemberPhaseState(
        learner=LearnerState(member, optimizer.init(member)),
        seat0=reset_rollout(env, pairings.seat0, k_seat0, config.num_envs),
        seat1=reset_rollout(env, pairings.seat1, k_seat1, config.num_envs),
        key=key,
    )
    final, metrics = jax.lax.scan(
        lambda c, _: _member_update(c, slots, weights, self_play, config),
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


def pair_return(a: Params, b: Params, key: jax.Array, config: ColeConfig) -> jax.Array:
    """() mean base return of `config.eval_envs` episodes from p0 of member `a` in seat 0 with
    member `b` in seat 1 (one seed)."""
    env = make_env(config.task_id, config.shaping)
    pairing = _pairings(config).cross
    key_reset, key_rollout = jax.random.split(key)
    start = reset_rollout(env, pairing, key_reset, config.eval_envs)
    _, trajectory = rollout(env, pairing, (a, b), start, key_rollout, config.eval_length)
    return jnp.mean(first_episode_returns(trajectory))


@functools.partial(jax.jit, static_argnames="config")
def _pair_return_seeds(a: Params, b: Params, key: jax.Array, config: ColeConfig) -> jax.Array:
    return map_seeds(lambda a, b, k: pair_return(a, b, k, config), a, b, key)


def cross_play_row(members: Params, k: int, key: jax.Array, config: ColeConfig) -> np.ndarray:
    """(num_seeds, P) float32 `M[k, j]` for j <= k (0 beyond): member k with member j, the mean
    over both seat orders, for every seed (`members` leaves (num_seeds, P, ...), `key`
    (num_seeds, 2)). A host loop over the pairs and orders calling one compiled rollout (cheaper
    to compile than one call holding them all)."""
    num_seeds = int(np.asarray(key).shape[0])
    row = np.zeros((num_seeds, config.population_size), np.float32)
    mine = jax.tree.map(lambda x: x[:, k], members)
    for j in range(k + 1):
        keys = jax.vmap(lambda s, j=j: jax.random.split(jax.random.fold_in(s, j)))(key)
        theirs = jax.tree.map(lambda x, j=j: x[:, j], members)
        first = np.asarray(_pair_return_seeds(mine, theirs, keys[:, 0], config))
        second = np.asarray(_pair_return_seeds(theirs, mine, keys[:, 1], config))
        row[:, j] = np.float32(0.5) * (first + second)
    return row


# ------------------------------------------------------------------------------ one iteration


@functools.partial(jax.jit, static_argnames="config")
def _member_phase_seeds(
    slots: Params,
    member: Params,
    weights: jax.Array,
    self_play: jax.Array,
    key: jax.Array,
    config: ColeConfig,
) -> tuple[Params, dict[str, jax.Array]]:
    """`member_phase` of every seed; per-seed scalar metrics (last quarter of the updates)."""

    def _one_seed(slots, member, weights, self_play, key):
        member, metrics = member_phase(slots, member, weights, self_play, key, config)
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


def step(state: ColeState, config: ColeConfig, done: int) -> tuple[ColeState, dict[str, Any]]:
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
    keys = jax.vmap(lambda k: jax.random.split(k, 4))(state.key)
    fresh = fresh_params(networks(config).member, keys[:, 1])
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
        config,
    )
    members = jax.tree.map(lambda s, m: s.at[:, done].set(m), state.buffer.members, member)
    # 2. its cross-play with every member, itself included
    row = cross_play_row(members, done, keys[:, 3], config)
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


def population(state: ColeState, config: ColeConfig, seed: int | None = 0) -> Population:
    """The members of one seed as a `Population` (host arrays), in generation order, ready for
    `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return buffer_population(state.buffer, "members", networks(config).member, seed)


REPORT = IterationReport(
    generation_curves=(
        ("train_return", "new member with its training partners", "C0"),
        ("xp_return", "new member x earlier members (mean XP)", "C1"),
        ("self_play_return", "new member x itself", "C3"),
    ),
    progress_metrics=(("train", "train_return"), ("ego", "ego_return")),
    diverged_fix="Lower ppo.learning_rate",
)
"""How `aht_bench.runs.train` drives COLE: one member per iteration."""


# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table cole_hyperparams, per task: (timesteps per iteration, population size, num envs, lr,
# epochs, minibatches, ent-coef, eps-clip, anneal lr, alpha, c_UCT). The table bolds only the
# values it searched (LBF, CR, CoR); the others are its single values.
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (1.8e7, 20, 64, 1e-3, 15, 8, 0.05, 0.05, False, 1.5, 0.4),
        "overcooked-cramped_room-v1": (1.85e7, 13, 64, 1e-3, 15, 8, 0.05, 0.05, False, 0.1, 0.1),
        "overcooked-asymm_advantages-v1": (1.85e7, 13, 64, 1e-3, 15, 8, 0.01, 0.3, False, 0.1, 0.3),
        "overcooked-counter_circuit-v1": (3.38e7, 13, 64, 1e-3, 15, 8, 0.01, 0.01, False, 0.1, 0.3),
        "overcooked-coord_ring-v1": (3.38e7, 13, 64, 1e-3, 15, 8, 0.01, 0.1, False, 0.1, 0.3),
        "overcooked-forced_coord-v1": (3.38e7, 13, 64, 1e-3, 15, 8, 0.01, 0.05, False, 0.1, 0.3),
    }
)


def _paper(task_id: str) -> ColeConfig:
    steps, size, envs, lr, epochs, minibatches, ent, clip, anneal, alpha, c_uct = _PAPER_ROWS[
        task_id
    ]
    # not in the table: rollout length (presets' 128 on LBF, one 400-step episode on
    # Overcooked), eval_envs 64, MLP 64-64, gamma/GAE lambda/value and gradient clips as in
    # every preset (aht_bench.training.presets)
    return ColeConfig(
        task_id=task_id,
        population_size=size,
        timesteps_per_iteration=int(steps),
        num_envs=envs,
        rollout_length=128 if task_id.startswith("lbf") else 400,
        ppo=PPOConfig(
            learning_rate=lr,
            anneal_lr=anneal,
            num_epochs=epochs,
            num_minibatches=minibatches,
            clip_eps=clip,
            ent_coef=ent,
        ),
        alpha=alpha,
        c_uct=c_uct,
        eval_envs=64,
    )


# quick: two CPU cores; see docs/baselines/cole.md for the measured run times and returns.
_QUICK_PPO = presets.QUICK_PPO
# task -> (population size, training timesteps per iteration): 128 (LBF) and 48 (Overcooked)
# updates of 2 x 64 x 128 steps per member. A first LBF member reached self-play return 0.42 in
# 2M steps, a first cramped_room member 57 in 1M (docs/baselines/cole.md).
_QUICK_BUDGET = presets.with_v2(
    {
        "lbf-v1": (4, 2_097_152),
        "overcooked-cramped_room-v1": (4, 786_432),
        "overcooked-asymm_advantages-v1": (4, 786_432),
        "overcooked-counter_circuit-v1": (4, 786_432),
        "overcooked-coord_ring-v1": (4, 786_432),
        "overcooked-forced_coord-v1": (4, 786_432),
    }
)


def _quick(task_id: str) -> ColeConfig:
    size, steps = _QUICK_BUDGET[task_id]
    alpha, c_uct = _PAPER_ROWS[task_id][9:]
    return ColeConfig(
        task_id=task_id,
        population_size=size,
        timesteps_per_iteration=steps,
        num_envs=64,
        rollout_length=128,
        ppo=_QUICK_PPO,
        alpha=alpha,
        c_uct=c_uct,
        eval_envs=32,
        shaping=presets.quick_method_shaping(task_id),
    )


PRESETS: dict[str, dict[str, ColeConfig]] = {
    "paper": {t: _paper(t) for t in PAPER_TASKS},
    "quick": {t: _quick(t) for t in PAPER_TASKS},
}
"""preset name -> task id -> config."""


METHOD: Method[ColeConfig, ColeState] = Method(
    name="COLE",
    presets=PRESETS,
    init=init,
    step=step,
    networks=networks,
    population=population,
    report=REPORT,
    exhausted=(
        "raise population_size= in the config to go on (the population has one slot per iteration)"
    ),
)
"""COLE as a `Method`: what `aht-bench train cole` drives."""
init_seeds = METHOD.init_seeds
iterate = METHOD.iterate
run = METHOD.run
train = METHOD.train
ego_params = METHOD.ego_params
preset = METHOD.preset
