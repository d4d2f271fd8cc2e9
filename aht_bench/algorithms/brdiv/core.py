"""The training of BRDiv (`aht_bench.algorithms.brdiv`, whose docstring describes it): networks,
state, phases and one iteration of every seed.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from aht_bench.algorithms import ego, two_stage
from aht_bench.algorithms.api import MethodSetup, seed_of
from aht_bench.algorithms.brdiv.config import (
    BEST_RESPONSE,
    CONFEDERATE,
    BRDivConfig,
    best_response_loss_terms,
    confederate_loss_terms,
    pair_name,
)
from aht_bench.algorithms.common import two_player_env
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population
from aht_bench.training.driver import map_seeds
from aht_bench.training.ppo import LearnerState, Stream, make_optimizer, make_stream, ppo_update
from aht_bench.training.report import Curve, Report
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    init_params,
    reset_rollout,
    rollout,
)
from aht_bench.training.streams import phase_summary

# ---------------------------------------------------------------------------------------- setup


class Networks(NamedTuple):
    confederate: MLPActorCritic  # population_size value heads: head j = return with BR j
    best_response: MLPActorCritic  # population_size value heads: head i = with confederate i
    ego: RecurrentEgo


def setup(config: BRDivConfig) -> MethodSetup:
    """What a BRDiv run of `config` derives from it: the env, `Networks`, the pair rollouts'
    `Pairing` (roles (confederate, BR), both learners, in seats (other, ego seat)) and the
    optimiser of every learner of the generation stage."""
    env = two_player_env(config, "BRDiv")
    n = config.population_size
    nets = Networks(
        confederate=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=n, hidden=config.confederate_hidden
        ),
        best_response=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=n, hidden=config.best_response_hidden
        ),
        ego=ego.network(config.ego_config),
    )
    pairing = Pairing(
        (nets.confederate, nets.best_response),
        (CONFEDERATE, BEST_RESPONSE),
        (1 - config.ego_seat, config.ego_seat),
        config.shaped_reward_coef,
    )
    optimizer = make_optimizer(config.generation_ppo, config.generation_updates)
    return MethodSetup(config, env, nets, pairing, optimizer=optimizer)


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


@functools.partial(jax.jit, static_argnames="setup")
def _init_generation(
    confederates: list[Params], best_responses: list[Params], key: jax.Array, setup: MethodSetup
) -> tuple[PairPopulation, GenerationState]:
    """The generation stage's start (one seed) from fresh params: Adam states, every pair's
    envs reset, in one compiled call."""
    config, optimizer = setup.config, setup.optimizer
    n, env, pairing = config.population_size, setup.env, setup.pairings
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


def init(key: jax.Array, setup: MethodSetup) -> BRDivState:
    """A fresh run for one seed: random confederates and BRs, pair envs reset, a fresh ego
    whose pool holds placeholders (the fresh confederates) with weights 0."""
    config: BRDivConfig = setup.config
    nets = setup.networks
    n = config.population_size
    keys = np.asarray(jax.random.split(key, 2 * n + 3))
    confederates = [init_params(nets.confederate, k) for k in keys[:n]]
    best_responses = [init_params(nets.best_response, k) for k in keys[n : 2 * n]]
    buffer, generation = _init_generation(confederates, best_responses, keys[2 * n], setup)
    slots = Population(nets.confederate, buffer.confederates)
    return BRDivState(
        ego=two_stage.ego_start(keys[2 * n + 1], config.ego_config, slots),
        buffer=buffer,
        generation=generation,
        key=jnp.asarray(keys[2 * n + 2]),
        iteration=jnp.zeros((), jnp.int32),
    )


def pair_rollouts(
    buffer: PairPopulation, rollouts: RolloutState, key: jax.Array, setup: MethodSetup
) -> tuple[RolloutState, Trajectory]:
    """One rollout of every pair (confederate i, BR j), vmapped: leaves (n, n, ...)."""
    config, env, pairing = setup.config, setup.env, setup.pairings
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
    setup: MethodSetup,
) -> tuple[Params, optax.OptState, dict[str, jax.Array]]:
    """`ppo_update` of the n learners of one side, vmapped: streams' leaves (n, ...)."""

    def _one(params, opt_state, streams, k):
        learner, metrics = ppo_update(
            network,
            LearnerState(params, opt_state),
            streams,
            k,
            setup.config.generation_ppo,
            setup.optimizer,
        )
        return learner.params, learner.opt_state, metrics

    n = setup.config.population_size
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
    buffer: PairPopulation, generation: GenerationState, setup: MethodSetup
) -> tuple[PairPopulation, GenerationState, dict[str, jax.Array]]:
    """One BRDiv update (one seed): a rollout of every pair, then one PPO update of every
    confederate and every BR on its row (column) of the cross-play matrix.

    Metrics: `pair_{i}_{j}_return` / `_episodes` (base return of the episodes that ended in pair
    (i, j)'s rollout), and the confederates' and BRs' PPO diagnostics (mean over agents).
    """
    config, nets = setup.config, setup.networks
    n = config.population_size
    key, k_roll, k_conf, k_br = jax.random.split(generation.key, 4)
    rollouts, trajectories = pair_rollouts(buffer, generation.rollouts, k_roll, setup)
    confederates, confederate_opt, c_metrics = _learners_update(
        nets.confederate,
        buffer.confederates,
        generation.confederate_opt,
        _side_streams(trajectories, CONFEDERATE, config),
        k_conf,
        setup,
    )
    best_responses, best_response_opt, b_metrics = _learners_update(
        nets.best_response,
        buffer.best_responses,
        generation.best_response_opt,
        _side_streams(trajectories, BEST_RESPONSE, config),
        k_br,
        setup,
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
    state: BRDivState, setup: MethodSetup, num_updates: int
) -> tuple[BRDivState, dict[str, jax.Array]]:
    config = setup.config

    def _update(carry, _):
        buffer, generation = carry
        buffer, generation, metrics = generation_update(buffer, generation, setup)
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


@functools.partial(jax.jit, static_argnames=("setup", "num_updates"))
def generation_chunk_seeds(
    state: BRDivState, setup: MethodSetup, num_updates: int
) -> tuple[BRDivState, dict[str, jax.Array]]:
    """`num_updates` generation updates of every seed (leading seed axis) in one call.

    Metrics ((num_seeds,) each), over the last quarter of the chunk's updates: the cross-play
    matrix `pair_{i}_{j}_return`, `sp_return` (mean of its diagonal), `xp_return` (mean off the
    diagonal) and the PPO diagnostics `confederate_*`, `best_response_*`."""
    return map_seeds(lambda s: _generation_chunk(s, setup, num_updates), state)


@functools.partial(jax.jit, static_argnames="setup")
def _start_ego_seeds(state: BRDivState, setup: MethodSetup) -> BRDivState:
    """The ego's pool becomes the trained confederates (uniform), its envs reset."""
    config, nets = setup.config, setup.networks

    def _one_seed(state: BRDivState) -> BRDivState:
        members = Population(nets.confederate, state.buffer.confederates)
        weights = jnp.ones((config.population_size,), jnp.float32)
        key, k_envs = jax.random.split(state.key)
        ego_state = two_stage.with_population(
            state.ego, members, weights, config.ego_config, k_envs
        )
        return state._replace(ego=ego_state, key=key)

    return map_seeds(_one_seed, state)


# ------------------------------------------------------------------------------ one iteration


def step(state: BRDivState, setup: MethodSetup, done: int) -> tuple[BRDivState, dict[str, Any]]:
    """Iteration `done + 1` of every seed (leading seed axis): a chunk of the generation stage,
    or (after `generation_iterations`) a chunk of the ego stage.

    Metrics ((num_seeds,)): generation iterations report the cross-play matrix
    (`pair_{i}_{j}_return`), `sp_return`, `xp_return` and the confederates' and BRs' PPO
    diagnostics; ego iterations report `ego_return` (the ego with the confederates) and the
    ego's diagnostics (`ego_*`); `METHOD.iterate` adds `iteration` and `env_steps`.
    """
    config = setup.config
    if done < config.generation_iterations:
        state, metrics = generation_chunk_seeds(state, setup, config.generation_chunks[done])
    else:
        if done == config.generation_iterations:
            state = _start_ego_seeds(state, setup)
        chunk = config.ego_chunks[done - config.generation_iterations]
        ego_state, metrics = two_stage.ego_chunk_seeds(state.ego, config.ego_config, chunk)
        state = state._replace(ego=ego_state)
    return state._replace(iteration=state.iteration + 1), metrics


def population(state: BRDivState, setup: MethodSetup, seed: int | None = 0) -> Population:
    """The confederates of one seed as a `Population` (host arrays), ready for
    `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return Population(setup.networks.confederate, seed_of(state.buffer.confederates, seed))


def best_responses(state: BRDivState, setup: MethodSetup, seed: int | None = 0) -> Population:
    """The best responses of one seed as a `Population` (host arrays), BR j paired with
    confederate j."""
    return Population(setup.networks.best_response, seed_of(state.buffer.best_responses, seed))


REPORT = Report(
    generation_curves=(
        Curve("sp_return", "SP return (diagonal: confederate i x BR i)", "C0", progress="sp"),
        Curve("xp_return", "XP return (off-diagonal: confederate i x BR j)", "C1", progress="xp"),
    ),
    diverged_fix="Lower generation_ppo.learning_rate or ego_ppo.learning_rate",
)
"""How `aht-bench train brdiv` drives a run (`aht_bench.runs.ALGORITHMS`)."""
