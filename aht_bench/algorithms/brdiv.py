"""BRDiv (Rahman et al. 2023; paper App. "Baselines Overview", Table brdiv_hyperparams) over the
shared PPO core: a population of confederate/best-response pairs trained on the whole cross-play
matrix, then the PPO ego agent against the confederates.

**Teammate generation.** `n = population_size` confederates and `n` best responses (BRs), all
`MLPActorCritic`s with `n` value heads. The paper's teammates "use a critic that conditions on
the agent ID of a candidate partner agent ... implementing the n-1 critics via parameter
sharing"; here that critic is `n` heads on one shared critic trunk: confederate `i`'s head `j`
estimates its return with BR `j`, and BR `j`'s head `i` its return with confederate `i` (a
one-hot partner id fed to the critic's input would be the other reading; the heads need no
change to the network and train exactly as ROTATE's two-head teammate does). Every update
collects one rollout of each of the `n x n` pairs (confederate `i` in the teammate seat, BR `j`
in `ego.learner_seat`, the ego's seat), all from p0, in envs that persist across updates, and
gives each agent one PPO update over the `n` rollouts it played in:

    confederate i:  (D_ij, 1 + 2 xp_coef, +1, head j) for j = i      SP, maximised
                    (D_ij,     xp_coef,   -1, head j) for j != i     XP, minimised
    best response j: the same over confederates i: (D_ij, ..., head i)

(`confederate_loss_terms`, `best_response_loss_terms`: `training.streams.LossTerm`s, no timestep
weighting; each stream's clip loss is a mean over its own transitions, the entropy loss is once
over all of a learner's data, each head trains on its pair's data: `ppo_update`). So each agent
maximises `(1 + 2 w) J(i, i) - w sum_{j != i} J(i, j)`, the paper's "coefficient on the SP return
is always 1 + 2 * xp_weight". The `2n` PPO updates of an update run as two vmapped
`ppo_update`s (confederates, BRs), the `n x n` rollouts as one vmapped rollout; one update of
all pairs costs `n^2 x num_envs x rollout_length` env steps (the paper's O(n^2 T)), and the
table's Timesteps count all of them. (Vmapping the agents' updates measured the same run time
as unrolling them and a smaller compile: docs/baselines/brdiv.md.)

**Ego stage.** `two_stage`: the recurrent PPO ego (`ego.py`, Table ppo_ego_tm_hyperparams,
`presets.get("ego", ...)`) against the `n` confederates, drawn uniformly per episode.

A run is `generation_iterations` iterations of the generation (each a chunk of the joint
updates; the confederates', BRs' and Adam states and the pairs' envs carry over) and then
`ego_iterations` ego iterations (`aht_bench.runs.IterationLoop`: a checkpoint after each, exact
resume).

What the paper leaves open, and what is chosen here:

- Epochs, minibatches and LR annealing of the generation stage are not in Table
  brdiv_hyperparams: the IPPO table's (the base algorithm of every method): 15 epochs, 4
  minibatches on LBF and 16 on Overcooked, annealed LR (annealing over the whole generation).
- "Num Envs" is read as envs per pair rollout; rollout length as everywhere (128 on LBF, one
  400-step episode on Overcooked).
- The BRs sit in the ego's seat (they are its stand-ins), the confederates in the other; BRs
  minimise their XP returns too (the objective is one function of the whole matrix).
- The table's Timesteps (3.3e8 on LBF) plus the ego table's (6e7) exceed the paper's stated
  per-task budget (360M); both tables are followed as printed.

    config = brdiv.preset("quick", "lbf")
    state = brdiv.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    for _ in range(config.iterations):
        state, metrics = brdiv.iterate(state, config)      # metrics["xp_return"]: (num_seeds,)
    brdiv.population(state, config, seed=0)                # the confederates (a Population)
    brdiv.best_responses(state, config, seed=0)            # their best responses

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from aht_bench.algorithms import ego, two_stage
from aht_bench.algorithms.api import Method, TaskConfig, seed_of
from aht_bench.algorithms.common import (
    check_hidden,
    check_task_id,
    require,
)
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population
from aht_bench.training import presets
from aht_bench.training.config import EgoConfig, PPOConfig, normalise_shaping
from aht_bench.training.driver import map_seeds
from aht_bench.training.ppo import LearnerState, Stream, make_optimizer, make_stream, ppo_update
from aht_bench.training.report import IterationReport
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    init_params,
    make_env,
    reset_rollout,
    rollout,
)
from aht_bench.training.streams import LossTerm, phase_summary

CONFEDERATE = 0
"""Index of the confederate's data in a pair rollout's `Trajectory.learners`."""
BEST_RESPONSE = 1
"""Index of the best response's data in a pair rollout's `Trajectory.learners`."""


def _split(total: int, parts: int) -> tuple[int, ...]:
    """`total` split into `parts` sizes as even as possible (larger ones first)."""
    base, extra = divmod(total, parts)
    return tuple(base + (1 if i < extra else 0) for i in range(parts))


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class BRDivConfig(TaskConfig):
    """A BRDiv run (paper Table brdiv_hyperparams; the ego stage: Table ppo_ego_tm_hyperparams)."""

    task_id: str
    """Registered task id or alias of a two-player task."""
    population_size: int
    """n: confederate/best-response pairs (tables: Population size)."""
    xp_coef: float
    """w: weight of each XP return; the SP return's is 1 + 2w (tables: XP Coefficient)."""
    generation_timesteps: int
    """Joint env steps of the generation stage, all n x n pair rollouts counted (tables:
    Timesteps)."""
    num_envs: int
    """Parallel envs of each pair's rollout (tables: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two updates (not in the paper's tables)."""
    generation_ppo: PPOConfig
    """PPO hyperparameters of the confederates and BRs (tables: LR, Ent-Coef, Clip-Eps)."""
    ego: EgoConfig
    """The ego stage: PPO ego agent against the confederates (Table ppo_ego_tm_hyperparams);
    its `learner_seat` is also the BRs' seat."""
    generation_iterations: int = 10
    """Run-loop iterations (checkpoints) the generation stage is split into (ours)."""
    ego_iterations: int = 10
    """Run-loop iterations (checkpoints) the ego stage is split into (ours)."""
    confederate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of each confederate's actor and critic MLPs."""
    best_response_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of each best response's actor and critic MLPs."""
    shaped_reward_coef: float = 1.0
    """Training reward of the generation stage is `base + shaped_reward_coef * shaped`."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients of the generation stage that replace the
    paper's (as `RunConfig.shaping`); () keeps the paper's."""

    def __post_init__(self) -> None:
        check_task_id(self.task_id)
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        require(
            self.population_size >= 2,
            "population_size",
            self.population_size,
            "use at least 2 (BRDiv needs cross-play pairs)",
        )
        require(self.xp_coef >= 0, "xp_coef", self.xp_coef, "use a value >= 0")
        require(self.num_envs >= 1, "num_envs", self.num_envs, "use at least 1")
        require(self.rollout_length >= 1, "rollout_length", self.rollout_length, "use >= 1")
        require(
            self.shaped_reward_coef >= 0,
            "shaped_reward_coef",
            self.shaped_reward_coef,
            "use a value >= 0",
        )
        check_hidden(self, "confederate_hidden", "best_response_hidden")
        require(
            self.ego.canonical_task_id == self.canonical_task_id,
            "ego.task_id",
            self.ego.task_id,
            f"the ego stage must train on the run's task {self.canonical_task_id}",
        )
        require(
            self.ego.learner_seat in (0, 1), "ego.learner_seat", self.ego.learner_seat, "use 0 or 1"
        )
        require(
            self.generation_timesteps >= self.generation_batch_size,
            "generation_timesteps",
            self.generation_timesteps,
            f"one update takes population_size^2 x num_envs x rollout_length = "
            f"{self.generation_batch_size} timesteps",
        )
        transitions = self.num_envs * self.rollout_length
        require(
            transitions % self.generation_ppo.num_minibatches == 0,
            "generation_ppo.num_minibatches",
            self.generation_ppo.num_minibatches,
            f"it must divide the {transitions} transitions (num_envs x rollout_length) of "
            "each pair's rollout",
        )
        require(
            1 <= self.generation_iterations <= self.generation_updates,
            "generation_iterations",
            self.generation_iterations,
            f"use 1..{self.generation_updates} (the generation stage has "
            f"{self.generation_updates} updates)",
        )
        require(
            1 <= self.ego_iterations <= self.ego.num_updates,
            "ego_iterations",
            self.ego_iterations,
            f"use 1..{self.ego.num_updates} (the ego stage has {self.ego.num_updates} updates)",
        )

    @property
    def sp_coef(self) -> float:
        """Weight of the SP return: 1 + 2 * xp_coef (paper App. "Baselines Overview")."""
        return 1.0 + 2.0 * self.xp_coef

    @property
    def generation_batch_size(self) -> int:
        """Joint env steps of one generation update: every pair's rollout."""
        return self.population_size**2 * self.num_envs * self.rollout_length

    @property
    def generation_updates(self) -> int:
        """Joint PPO updates (of every confederate and BR) in the generation stage."""
        return self.generation_timesteps // self.generation_batch_size

    @property
    def generation_chunks(self) -> tuple[int, ...]:
        """Generation updates per generation iteration."""
        return _split(self.generation_updates, self.generation_iterations)

    @property
    def ego_chunks(self) -> tuple[int, ...]:
        """Ego PPO updates per ego iteration."""
        return two_stage.chunk_sizes(self.ego, self.ego_iterations)

    @property
    def iterations(self) -> int:
        """Run-loop iterations of the whole run: generation, then ego."""
        return self.generation_iterations + self.ego_iterations

    @property
    def ego_seat(self) -> int:
        """The seat of the ego and of the BRs; the confederates play the other."""
        return self.ego.learner_seat

    def env_steps_after(self, done: int) -> int:
        """Cumulative joint env steps per seed after `done` iterations."""
        gen = np.concatenate([[0], np.cumsum(self.generation_chunks)]) * self.generation_batch_size
        if done <= self.generation_iterations:
            return int(gen[done])
        ego_steps = two_stage.env_steps_of_chunks(self.ego, self.ego_iterations)
        return int(gen[-1] + ego_steps[done - self.generation_iterations])

    @property
    def env_steps_per_iteration(self) -> int:
        """Mean joint env steps per iteration (iterations differ: see `env_steps_after`)."""
        return self.env_steps_after(self.iterations) // self.iterations


# ---------------------------------------------------------------------------------- loss terms


def pair_name(confederate: int, best_response: int) -> str:
    """The data name of the rollout of confederate `confederate` with BR `best_response`."""
    return f"c{confederate}-br{best_response}"


def confederate_loss_terms(config: BRDivConfig, i: int) -> tuple[LossTerm, ...]:
    """Confederate `i`'s streams, one per BR `j`: SP (j = i) with weight 1 + 2w and sign +1,
    XP (j != i) with weight w and sign -1; value head j (its return with BR j)."""
    return tuple(
        LossTerm(
            pair_name(i, j),
            config.sp_coef if i == j else config.xp_coef,
            False,
            1.0 if i == j else -1.0,
            j,
        )
        for j in range(config.population_size)
    )


def best_response_loss_terms(config: BRDivConfig, j: int) -> tuple[LossTerm, ...]:
    """BR `j`'s streams, one per confederate `i`: SP (i = j) with weight 1 + 2w and sign +1,
    XP (i != j) with weight w and sign -1; value head i (its return with confederate i)."""
    return tuple(
        LossTerm(
            pair_name(i, j),
            config.sp_coef if i == j else config.xp_coef,
            False,
            1.0 if i == j else -1.0,
            i,
        )
        for i in range(config.population_size)
    )


# ------------------------------------------------------------------------------------ networks


class Networks(NamedTuple):
    confederate: MLPActorCritic  # population_size value heads: head j = return with BR j
    best_response: MLPActorCritic  # population_size value heads: head i = with confederate i
    ego: RecurrentEgo


@functools.lru_cache(maxsize=32)
def networks(config: BRDivConfig) -> Networks:
    """The three architectures of a run."""
    env = make_env(config.task_id, config.shaping)
    if env.num_agents != 2:
        raise ValueError(
            f"task_id={config.task_id!r} has {env.num_agents} seats; BRDiv here is for "
            "two-player tasks (one ego, one teammate)"
        )
    n = config.population_size
    return Networks(
        confederate=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=n, hidden=config.confederate_hidden
        ),
        best_response=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=n, hidden=config.best_response_hidden
        ),
        ego=ego.network(config.ego),
    )


@functools.lru_cache(maxsize=32)
def _pairing(config: BRDivConfig) -> Pairing:
    """Roles (confederate, BR), both learners, in seats (other, ego seat)."""
    nets = networks(config)
    return Pairing(
        (nets.confederate, nets.best_response),
        (CONFEDERATE, BEST_RESPONSE),
        (1 - config.ego_seat, config.ego_seat),
        config.shaped_reward_coef,
    )


def _optimizer(config: BRDivConfig) -> optax.GradientTransformation:
    return make_optimizer(config.generation_ppo, config.generation_updates)


# ---------------------------------------------------------------------------------------- state


class PairPopulation(NamedTuple):
    """What the generation stage trains: the confederates and their best responses."""

    confederates: Params  # leaves (population_size, ...)
    best_responses: Params  # leaves (population_size, ...)


class GenerationState(NamedTuple):
    """The rest of the generation stage's state, carried across its iterations."""

    confederate_opt: optax.OptState  # leaves (population_size, ...): Adam states
    best_response_opt: optax.OptState  # leaves (population_size, ...)
    rollouts: RolloutState  # leaves (population_size, population_size, num_envs, ...): pair i, j
    key: jax.Array  # PRNG key of the next update
    update_step: jax.Array  # () int32: generation updates done


class BRDivState(NamedTuple):
    """Everything a BRDiv run needs to continue exactly, between two iterations."""

    ego: FixedPartnerState  # the ego stage's whole learner state (`two_stage`)
    buffer: PairPopulation  # the confederates and BRs
    generation: GenerationState  # Adam states, pair envs, key of the generation stage
    key: jax.Array  # PRNG key of the ego stage's env reset
    iteration: jax.Array  # () int32: run-loop iterations done


def _stack(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


@functools.partial(jax.jit, static_argnames="config")
def _init_generation(
    confederates: list[Params], best_responses: list[Params], key: jax.Array, config: BRDivConfig
) -> tuple[PairPopulation, GenerationState]:
    """The generation stage's start (one seed) from fresh params: Adam states, every pair's
    envs reset, in one compiled call."""
    n, optimizer = config.population_size, _optimizer(config)
    env, pairing = make_env(config.task_id, config.shaping), _pairing(config)
    k_envs, k_gen = jax.random.split(key)
    reset = jax.vmap(lambda k: reset_rollout(env, pairing, k, config.num_envs))
    rollouts = reset(jax.random.split(k_envs, n * n))
    buffer = PairPopulation(_stack(confederates), _stack(best_responses))
    return buffer, GenerationState(
        confederate_opt=jax.vmap(optimizer.init)(buffer.confederates),
        best_response_opt=jax.vmap(optimizer.init)(buffer.best_responses),
        rollouts=jax.tree.map(lambda x: x.reshape((n, n) + x.shape[1:]), rollouts),
        key=k_gen,
        update_step=jnp.zeros((), jnp.int32),
    )


def init(key: jax.Array, config: BRDivConfig) -> BRDivState:
    """A fresh run for one seed: random confederates and BRs, pair envs reset, a fresh ego
    whose pool holds placeholders (the fresh confederates) with weights 0."""
    nets, n = networks(config), config.population_size
    keys = np.asarray(jax.random.split(key, 2 * n + 3))
    confederates = [init_params(nets.confederate, k) for k in keys[:n]]
    best_responses = [init_params(nets.best_response, k) for k in keys[n : 2 * n]]
    buffer, generation = _init_generation(confederates, best_responses, keys[2 * n], config)
    slots = Population(nets.confederate, buffer.confederates)
    return BRDivState(
        ego=two_stage.ego_start(keys[2 * n + 1], config.ego, slots),
        buffer=buffer,
        generation=generation,
        key=jnp.asarray(keys[2 * n + 2]),
        iteration=jnp.zeros((), jnp.int32),
    )


def pair_rollouts(
    buffer: PairPopulation, rollouts: RolloutState, key: jax.Array, config: BRDivConfig
) -> tuple[RolloutState, Trajectory]:
    """One rollout of every pair (confederate i, BR j), vmapped: leaves (n, n, ...)."""
    env, pairing = make_env(config.task_id, config.shaping), _pairing(config)
    n = config.population_size

    def _pair(confederate: Params, best_response: Params, state: RolloutState, k: jax.Array):
        return rollout(env, pairing, (confederate, best_response), state, k, config.rollout_length)

    over_br = jax.vmap(_pair, in_axes=(None, 0, 0, 0))
    over_pairs = jax.vmap(over_br, in_axes=(0, None, 0, 0))
    keys = jax.random.split(key, n * n).reshape((n, n) + key.shape)
    return over_pairs(buffer.confederates, buffer.best_responses, rollouts, keys)


def _learners_update(
    network: MLPActorCritic,
    params: Params,
    opt_states: optax.OptState,
    streams: tuple[Stream, ...],
    key: jax.Array,
    config: BRDivConfig,
) -> tuple[Params, optax.OptState, dict[str, jax.Array]]:
    """`ppo_update` of the n learners of one side, vmapped: streams' leaves (n, ...)."""

    def _one(params, opt_state, streams, k):
        learner, metrics = ppo_update(
            network,
            LearnerState(params, opt_state),
            streams,
            k,
            config.generation_ppo,
            _optimizer(config),
        )
        return learner.params, learner.opt_state, metrics

    n = config.population_size
    return jax.vmap(_one)(params, opt_states, streams, jax.random.split(key, n))


class TermTable(NamedTuple):
    """The loss terms of the n learners of one side as arrays indexed [learner a, stream k]."""

    coef: np.ndarray  # (n, n) float32: constant weight w_t of the stream
    sign: np.ndarray  # (n, n) float32: +1 (SP) or -1 (XP)
    value_head: np.ndarray  # (n, n) int32: the learner's critic head of the stream


def term_table(config: BRDivConfig, side: int) -> TermTable:
    """`confederate_loss_terms` (side `CONFEDERATE`) or `best_response_loss_terms` of every
    learner as arrays: stream k of confederate a is pair (a, k)'s rollout, of BR a pair (k, a)."""
    n = config.population_size
    terms_of = confederate_loss_terms if side == CONFEDERATE else best_response_loss_terms
    rows = [terms_of(config, a) for a in range(n)]
    for a, row in enumerate(rows):
        for k, term in enumerate(row):
            pair = pair_name(a, k) if side == CONFEDERATE else pair_name(k, a)
            assert term.data == pair and not term.timestep_weighted and not term.per_start_state
    return TermTable(
        coef=np.array([[t.coef for t in row] for row in rows], np.float32),
        sign=np.array([[t.sign for t in row] for row in rows], np.float32),
        value_head=np.array([[t.value_head for t in row] for row in rows], np.int32),
    )


def _side_streams(trajectories: Trajectory, side: int, config: BRDivConfig) -> tuple[Stream, ...]:
    """The n streams of each of the n learners of one side, from the pair rollouts (leaves
    (n, n, ...), [confederate i, BR j]): stream k (leaves (n, ...), one per learner) holds
    every learner's k-th loss term, built by one vmapped `make_stream` (so one GAE)."""
    n = config.population_size
    table = term_table(config, side)
    if side == BEST_RESPONSE:  # BR a's k-th stream is pair (k, a)
        trajectories = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), trajectories)

    def _stream(trajectory: Trajectory, coef: jax.Array, sign: jax.Array, head: jax.Array):
        weights = coef * jnp.ones(trajectory.time.shape, jnp.float32)
        return make_stream(trajectory, side, config.generation_ppo, head, weights, sign)

    streams = jax.vmap(jax.vmap(_stream))(
        trajectories,
        jnp.asarray(table.coef),
        jnp.asarray(table.sign),
        jnp.asarray(table.value_head),
    )
    return tuple(jax.tree.map(lambda x, k=k: x[:, k], streams) for k in range(n))


def generation_update(
    buffer: PairPopulation, generation: GenerationState, config: BRDivConfig
) -> tuple[PairPopulation, GenerationState, dict[str, jax.Array]]:
    """One BRDiv update (one seed): a rollout of every pair, then one PPO update of every
    confederate and every BR on its row (column) of the cross-play matrix.

    Metrics: `pair_{i}_{j}_return` / `_episodes` (base return of the episodes that ended in pair
    (i, j)'s rollout), and the confederates' and BRs' PPO diagnostics (mean over agents).
    """
    nets, n = networks(config), config.population_size
    key, k_roll, k_conf, k_br = jax.random.split(generation.key, 4)
    rollouts, trajectories = pair_rollouts(buffer, generation.rollouts, k_roll, config)
    confederates, confederate_opt, c_metrics = _learners_update(
        nets.confederate,
        buffer.confederates,
        generation.confederate_opt,
        _side_streams(trajectories, CONFEDERATE, config),
        k_conf,
        config,
    )
    best_responses, best_response_opt, b_metrics = _learners_update(
        nets.best_response,
        buffer.best_responses,
        generation.best_response_opt,
        _side_streams(trajectories, BEST_RESPONSE, config),
        k_br,
        config,
    )
    metrics = {f"confederate_{k}": jnp.mean(v) for k, v in c_metrics.items()}
    metrics |= {f"best_response_{k}": jnp.mean(v) for k, v in b_metrics.items()}
    stats = jax.vmap(jax.vmap(lambda t: episode_stats(t, seat=config.ego_seat)))(trajectories)
    for i in range(n):
        for j in range(n):
            metrics[f"pair_{i}_{j}_return"] = stats["episode_return"][i, j]
            metrics[f"pair_{i}_{j}_episodes"] = stats["episodes"][i, j]
    next_generation = GenerationState(
        confederate_opt, best_response_opt, rollouts, key, generation.update_step + 1
    )
    return PairPopulation(confederates, best_responses), next_generation, metrics


def cross_play_matrix(metrics: dict[str, Any], n: int) -> Any:
    """(..., n, n) the pair returns `pair_{i}_{j}_return` of `metrics` as a matrix, row i =
    confederate i, column j = BR j."""
    return jnp.stack(
        [jnp.stack([metrics[f"pair_{i}_{j}_return"] for j in range(n)], -1) for i in range(n)], -2
    )


def _generation_chunk(
    state: BRDivState, config: BRDivConfig, num_updates: int
) -> tuple[BRDivState, dict[str, jax.Array]]:
    def _update(carry, _):
        buffer, generation = carry
        buffer, generation, metrics = generation_update(buffer, generation, config)
        return (buffer, generation), metrics

    (buffer, generation), metrics = jax.lax.scan(
        _update, (state.buffer, state.generation), None, length=num_updates
    )
    summary = phase_summary(metrics)
    matrix = cross_play_matrix(summary, config.population_size)
    off = 1.0 - jnp.eye(config.population_size)
    summary["sp_return"] = jnp.mean(jnp.diagonal(matrix))
    summary["xp_return"] = jnp.sum(matrix * off) / jnp.sum(off)
    return state._replace(buffer=buffer, generation=generation), summary


@functools.partial(jax.jit, static_argnames=("config", "num_updates"))
def generation_chunk_seeds(
    state: BRDivState, config: BRDivConfig, num_updates: int
) -> tuple[BRDivState, dict[str, jax.Array]]:
    """`num_updates` generation updates of every seed (leading seed axis) in one call.

    Metrics ((num_seeds,) each), over the last quarter of the chunk's updates: the cross-play
    matrix `pair_{i}_{j}_return`, `sp_return` (mean of its diagonal), `xp_return` (mean off the
    diagonal) and the PPO diagnostics `confederate_*`, `best_response_*`."""
    return map_seeds(lambda s: _generation_chunk(s, config, num_updates), state)


@functools.partial(jax.jit, static_argnames="config")
def _start_ego_seeds(state: BRDivState, config: BRDivConfig) -> BRDivState:
    """The ego's pool becomes the trained confederates (uniform), its envs reset."""
    nets = networks(config)

    def _one_seed(state: BRDivState) -> BRDivState:
        members = Population(nets.confederate, state.buffer.confederates)
        weights = jnp.ones((config.population_size,), jnp.float32)
        key, k_envs = jax.random.split(state.key)
        ego_state = two_stage.with_population(state.ego, members, weights, config.ego, k_envs)
        return state._replace(ego=ego_state, key=key)

    return map_seeds(_one_seed, state)


# ------------------------------------------------------------------------------ one iteration


def step(state: BRDivState, config: BRDivConfig, done: int) -> tuple[BRDivState, dict[str, Any]]:
    """Iteration `done + 1` of every seed (leading seed axis): a chunk of the generation stage,
    or (after `generation_iterations`) a chunk of the ego stage.

    Metrics ((num_seeds,)): generation iterations report the cross-play matrix
    (`pair_{i}_{j}_return`), `sp_return`, `xp_return` and the confederates' and BRs' PPO
    diagnostics; ego iterations report `ego_return` (the ego with the confederates) and the
    ego's diagnostics (`ego_*`); `METHOD.iterate` adds `iteration` and `env_steps`.
    """
    if done < config.generation_iterations:
        state, metrics = generation_chunk_seeds(state, config, config.generation_chunks[done])
    else:
        if done == config.generation_iterations:
            state = _start_ego_seeds(state, config)
        chunk = config.ego_chunks[done - config.generation_iterations]
        ego_state, metrics = two_stage.ego_chunk_seeds(state.ego, config.ego, chunk)
        state = state._replace(ego=ego_state)
    return state._replace(iteration=state.iteration + 1), metrics


def population(state: BRDivState, config: BRDivConfig, seed: int | None = 0) -> Population:
    """The confederates of one seed as a `Population` (host arrays), ready for
    `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return Population(networks(config).confederate, seed_of(state.buffer.confederates, seed))


def best_responses(state: BRDivState, config: BRDivConfig, seed: int | None = 0) -> Population:
    """The best responses of one seed as a `Population` (host arrays), BR j paired with
    confederate j."""
    return Population(networks(config).best_response, seed_of(state.buffer.best_responses, seed))


REPORT = IterationReport(
    generation_curves=(
        ("sp_return", "SP return (diagonal: confederate i x BR i)", "C0"),
        ("xp_return", "XP return (off-diagonal: confederate i x BR j)", "C1"),
    ),
    progress_metrics=(("sp", "sp_return"), ("xp", "xp_return"), ("ego", "ego_return")),
    diverged_fix="Lower generation_ppo.learning_rate or the ego stage's ego.ppo learning rate",
)
"""How `aht-bench train brdiv` drives a run (`aht_bench.runs.ALGORITHMS`)."""


# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table brdiv_hyperparams, selected (bold) values, per task:
# (timesteps, xp coefficient, population size, envs, lr, ent-coef, clip-eps)
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (3.3e8, 0.1, 3, 64, 5e-5, 0.005, 0.2),
        "overcooked-cramped_room-v1": (2.1e8, 0.5, 4, 64, 1e-5, 0.05, 0.3),
        "overcooked-asymm_advantages-v1": (2.1e8, 0.5, 3, 64, 1e-3, 0.05, 0.05),
        "overcooked-counter_circuit-v1": (3.8e8, 0.01, 3, 128, 1e-5, 0.01, 0.01),
        "overcooked-coord_ring-v1": (3.8e8, 0.005, 3, 128, 1e-5, 0.05, 0.1),
        "overcooked-forced_coord-v1": (3.8e8, 0.01, 3, 128, 5e-4, 0.01, 0.05),
    }
)
# Not in the table: epochs, minibatches and annealing, taken from Table ippo_hyperparams (IPPO
# is the base algorithm of every method): 15 epochs; 4 minibatches on LBF, 16 on Overcooked;
# annealed LR. 30 + 30 iterations (checkpoints) are ours.
_PAPER_EPOCHS = 15
_PAPER_ITERATIONS = 30


def _ego_preset(name: str, task_id: str, **overrides: Any) -> EgoConfig:
    """The shared ego stage (`presets.get("ego", name, task_id)`)."""
    config = presets.get("ego", name, task_id, **overrides)
    assert isinstance(config, EgoConfig)
    return config


def _paper(task_id: str) -> BRDivConfig:
    steps, xp_coef, size, envs, lr, ent, clip = _PAPER_ROWS[task_id]
    return BRDivConfig(
        task_id=task_id,
        population_size=size,
        xp_coef=xp_coef,
        generation_timesteps=int(steps),
        num_envs=envs,
        rollout_length=128 if task_id.startswith("lbf") else 400,
        generation_ppo=PPOConfig(
            learning_rate=lr,
            anneal_lr=True,
            num_epochs=_PAPER_EPOCHS,
            num_minibatches=4 if task_id.startswith("lbf") else 16,
            clip_eps=clip,
            ent_coef=ent,
        ),
        ego=_ego_preset("paper", task_id),
        generation_iterations=_PAPER_ITERATIONS,
        ego_iterations=_PAPER_ITERATIONS,
    )


# quick: two CPU cores, see docs/baselines/brdiv.md for the measured runs.
_QUICK_PPO = presets.QUICK_PPO
# task -> (population size, generation updates, ego updates); 32 envs x 128 steps per pair and
# update, 64 x 128 per ego update (the `ego` quick preset). The XP coefficient is the paper's.
# LBF keeps the paper's 3 pairs; Overcooked steps cost about 3x LBF's on CPU, so its layouts
# use 2 pairs (4 rollouts per update, not 9) to fit the time.
_QUICK_BUDGET = presets.with_v2(
    {
        "lbf-v1": (3, 128, 240),
        "overcooked-cramped_room-v1": (2, 120, 120),
        "overcooked-asymm_advantages-v1": (2, 120, 120),
        "overcooked-counter_circuit-v1": (2, 120, 120),
        "overcooked-coord_ring-v1": (2, 120, 120),
        "overcooked-forced_coord-v1": (2, 120, 120),
    }
)
_QUICK_ENVS = 32


def _quick(task_id: str) -> BRDivConfig:
    size, generation_updates, ego_updates = _QUICK_BUDGET[task_id]
    shaping = presets.quick_method_shaping(task_id)
    return BRDivConfig(
        task_id=task_id,
        population_size=size,
        xp_coef=_PAPER_ROWS[task_id][1],
        generation_timesteps=size**2 * _QUICK_ENVS * 128 * generation_updates,
        num_envs=_QUICK_ENVS,
        rollout_length=128,
        generation_ppo=_QUICK_PPO,
        ego=_ego_preset("quick", task_id, total_timesteps=64 * 128 * ego_updates, shaping=shaping),
        generation_iterations=4,
        ego_iterations=4,
        shaping=shaping,
    )


PRESETS: dict[str, dict[str, BRDivConfig]] = {
    "paper": {t: _paper(t) for t in PAPER_TASKS},
    "quick": {t: _quick(t) for t in PAPER_TASKS},
}
"""preset name -> task id -> config."""


METHOD: Method[BRDivConfig, BRDivState] = Method(
    name="BRDiv",
    presets=PRESETS,
    init=init,
    step=step,
    networks=networks,
    population=population,
    report=REPORT,
    exhausted=("raise ego_iterations or generation_iterations only in a new run"),
    ego=two_stage.ego_of,
)
"""BRDiv as a `Method`: what `aht-bench train brdiv` drives."""
init_seeds = METHOD.init_seeds
iterate = METHOD.iterate
run = METHOD.run
train = METHOD.train
ego_params = METHOD.ego_params
preset = METHOD.preset
