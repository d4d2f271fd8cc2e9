"""The training of PAIRED (`aht_bench.algorithms.paired`, whose docstring describes it): networks,
state, phases and one iteration of every seed.

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

from aht_bench.algorithms.api import MethodSetup
from aht_bench.algorithms.common import teammate_networks
from aht_bench.algorithms.paired.config import (
    PairedConfig,
    best_response_loss_terms,
    ego_loss_terms,
    teammate_loss_terms,
)
from aht_bench.algorithms.rotate import REPORT as rotate_report
from aht_bench.policies.core import Params
from aht_bench.policies.population import Population
from aht_bench.training.driver import map_seeds
from aht_bench.training.ppo import LearnerState, make_optimizer, ppo_update
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    init_params,
    init_rollout,
    make_env,
    rollout,
)
from aht_bench.training.streams import loss_streams, phase_summary, prefixed

# ---------------------------------------------------------------------------------------- setup


class Pairings(NamedTuple):
    sp: Pairing  # roles (BR, teammate); learners (teammate, BR)
    xp: Pairing  # roles (ego, teammate); learners (teammate, ego)


@dataclasses.dataclass(frozen=True, eq=False)
class PairedSetup(MethodSetup):
    """`MethodSetup` (its `optimizer`: the teammate's and the BR's) plus the ego's optimiser."""

    ego_optimizer: Any = None


def setup(config: PairedConfig) -> PairedSetup:
    """What a PAIRED run of `config` derives from it: the env, `Networks`, `Pairings` and the
    optimisers; an annealed learning rate falls over the whole run."""
    nets = teammate_networks(config, "PAIRED", 2)  # the teammate's heads: with its BR, the ego
    seats = (config.ego_seat, 1 - config.ego_seat)
    coef = config.shaped_reward_coef
    pairings = Pairings(
        sp=Pairing((nets.best_response, nets.teammate), (1, 0), seats, coef),
        xp=Pairing((nets.ego, nets.teammate), (1, 0), seats, coef),
    )
    return PairedSetup(
        config,
        make_env(config.task_id, config.shaping),
        nets,
        pairings,
        optimizer=make_optimizer(config.teammate_ppo, config.num_updates),
        ego_optimizer=make_optimizer(config.ego_ppo, config.num_updates),
    )


# ---------------------------------------------------------------------------------------- state


class PairedState(NamedTuple):
    """Everything a PAIRED run needs to continue exactly, between two lockstep updates."""

    ego: LearnerState  # the ego's params (RecurrentEgo) and Adam state
    teammate: LearnerState  # the teammate's params (two value heads) and Adam state
    best_response: LearnerState  # the BR's params and Adam state
    sp: RolloutState  # SP envs (BR x teammate, p0 starts), persistent
    xp: RolloutState  # XP envs (ego x teammate, p0 starts), persistent
    buffer: Params  # leaves (iterations, ...): the teammate after each iteration (checkpoints
    #   for the population file; never trained against); slots past `iteration` are zeros
    key: jax.Array  # PRNG key of the next update
    iteration: jax.Array  # () int32: iterations done


def init(key: jax.Array, setup: PairedSetup) -> PairedState:
    """A fresh run for one seed: three random learners, freshly reset envs."""
    config, env, nets, pairings = setup.config, setup.env, setup.networks, setup.pairings
    k_ego, k_tm, k_br, k_sp, k_xp, key = jax.random.split(key, 6)
    tm_opt, ego_opt = setup.optimizer, setup.ego_optimizer
    ego = init_params(nets.ego, k_ego)
    teammate = init_params(nets.teammate, k_tm)
    best_response = init_params(nets.best_response, k_br)
    return PairedState(
        ego=LearnerState(ego, ego_opt.init(ego)),
        teammate=LearnerState(teammate, tm_opt.init(teammate)),
        best_response=LearnerState(best_response, tm_opt.init(best_response)),
        sp=init_rollout(env, pairings.sp, k_sp, config.num_envs),
        xp=init_rollout(env, pairings.xp, k_xp, config.num_envs),
        buffer=jax.tree.map(lambda x: jnp.zeros((config.iterations,) + x.shape, x.dtype), teammate),
        key=key,
        iteration=jnp.zeros((), jnp.int32),
    )


# ------------------------------------------------------------------------------ lockstep update


def update(state: PairedState, setup: PairedSetup) -> tuple[PairedState, dict[str, jax.Array]]:
    """One lockstep update of one seed: SP and XP rollouts, then one PPO update each of the
    teammate (per-trajectory regret), the BR (SP) and the ego (XP), all on data collected
    before any of them. Pure and jittable."""
    config, env, nets, pairings = setup.config, setup.env, setup.networks, setup.pairings
    steps = config.rollout_length
    tm, br, ego = state.teammate.params, state.best_response.params, state.ego.params
    key, k_sp, k_xp, k_tm, k_br, k_ego = jax.random.split(state.key, 6)
    sp_state, sp = rollout(env, pairings.sp, (br, tm), state.sp, k_sp, steps)
    xp_state, xp = rollout(env, pairings.xp, (ego, tm), state.xp, k_xp, steps)
    # trajectory, index of the learner in it: SP learners (teammate, BR), XP (teammate, ego)
    tm_data: dict[str, tuple[Trajectory, int]] = {"sp": (sp, 0), "xp": (xp, 0)}
    tm_streams = loss_streams(teammate_loss_terms(config), tm_data, config.teammate_ppo)
    br_streams = loss_streams(
        best_response_loss_terms(config), {"sp": (sp, 1)}, config.teammate_ppo
    )
    ego_streams = loss_streams(ego_loss_terms(config), {"xp": (xp, 1)}, config.ego_ppo)
    tm_opt, ego_opt = setup.optimizer, setup.ego_optimizer
    teammate, tm_metrics = ppo_update(
        nets.teammate, state.teammate, tm_streams, k_tm, config.teammate_ppo, tm_opt
    )
    best_response, br_metrics = ppo_update(
        nets.best_response, state.best_response, br_streams, k_br, config.teammate_ppo, tm_opt
    )
    ego_learner, ego_metrics = ppo_update(
        nets.ego, state.ego, ego_streams, k_ego, config.ego_ppo, ego_opt
    )
    metrics = prefixed(teammate=tm_metrics, best_response=br_metrics, ego=ego_metrics)
    for name, trajectory in (("sp", sp), ("xp", xp)):
        stats = episode_stats(trajectory, seat=config.ego_seat)
        metrics[f"{name}_return"] = stats["episode_return"]
        metrics[f"{name}_episodes"] = stats["episodes"]
    return state._replace(
        ego=ego_learner,
        teammate=teammate,
        best_response=best_response,
        sp=sp_state,
        xp=xp_state,
        key=key,
    ), metrics


def _iteration(state: PairedState, setup: PairedSetup) -> tuple[PairedState, dict[str, Any]]:
    """One iteration of one seed: `updates_per_iteration` lockstep updates, then the teammate
    snapshot; per-iteration summaries of the metrics."""
    state, metrics = jax.lax.scan(
        lambda s, _: update(s, setup), state, None, length=setup.config.updates_per_iteration
    )
    buffer = jax.tree.map(
        lambda slots, x: slots.at[state.iteration].set(x), state.buffer, state.teammate.params
    )
    summary = phase_summary(metrics)
    summary["regret"] = summary["sp_return"] - summary["xp_return"]
    summary["ego_return"] = summary["xp_return"]
    return state._replace(buffer=buffer, iteration=state.iteration + 1), summary


@functools.partial(jax.jit, static_argnames="setup")
def _iteration_seeds(
    state: PairedState, setup: PairedSetup
) -> tuple[PairedState, dict[str, jax.Array]]:
    return map_seeds(lambda s: _iteration(s, setup), state)


def step(
    state: PairedState, setup: PairedSetup, done: int
) -> tuple[PairedState, dict[str, jax.Array]]:
    """One iteration of every seed (leading seed axis) in one jitted call. Metrics
    ((num_seeds,)): module docstring."""
    return _iteration_seeds(state, setup)


def population(state: PairedState, setup: PairedSetup, seed: int | None = 0) -> Population:
    """The teammate after each iteration done so far, of one seed, as a `Population` (host
    arrays), oldest first. `seed=None` for an unbatched state."""
    host = jax.device_get((state.buffer, state.iteration))
    if seed is not None:
        host = jax.tree.map(lambda x: x[seed], host)
    buffer, count = host[0], int(host[1])
    if count == 0:
        raise ValueError("no iteration has run yet: run at least one first")
    members = jax.tree.map(lambda x: np.asarray(x[:count]), buffer)
    return Population(setup.networks.teammate, members)


def ego_of(state: PairedState) -> Params:
    """Where the ego's params are in a PAIRED state (`Method.ego`)."""
    return state.ego.params


# How `aht-bench train paired` shows a run (one step = one iteration, a chunk of updates): the
# regret curves of ROTATE, whose SP/XP/regret metrics PAIRED reports under the same names.
REPORT = rotate_report
