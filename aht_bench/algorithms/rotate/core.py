"""The training of ROTATE (`aht_bench.algorithms.rotate`, whose docstring describes it): networks,
state, phases and one iteration of every seed.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.algorithms import fixed_partner
from aht_bench.algorithms.api import MethodSetup, buffer_population, fresh_params
from aht_bench.algorithms.common import (
    TeammateNetworks,
    params_shape,
    slot_structs,
    teammate_networks,
    update_teammate_and_best_response,
)
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.algorithms.rotate.config import (
    RotateConfig,
    best_response_loss_terms,
    teammate_loss_terms,
)
from aht_bench.policies.core import Params
from aht_bench.policies.population import Population
from aht_bench.training.buffer import TeammateBuffer, empty_buffer, insert
from aht_bench.training.driver import map_seeds
from aht_bench.training.partners import MixedPartner, SampledTeammate, TeammatePool
from aht_bench.training.ppo import LearnerState, make_optimizer, ppo_update
from aht_bench.training.report import Curve, Report
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
from aht_bench.training.streams import branch_rollout, loss_streams, phase_summary, prefixed

# ---------------------------------------------------------------------------------------- setup


Networks = TeammateNetworks
"""The teammate (two value heads, BR_HEAD and EGO_HEAD; `minimax`: one), the BR, the ego."""


class Pairings(NamedTuple):
    sp: Pairing  # roles (BR, teammate); learners (teammate, BR)
    xp: Pairing  # roles (ego, teammate); learners (teammate,)
    mixed: Pairing  # roles (MixedPartner, teammate); no learners
    ego: Pairing  # roles (ego, SampledTeammate); learners (ego,): the ego update


def setup(config: RotateConfig) -> MethodSetup:
    """What a ROTATE run of `config` derives from it: the env, `Networks`, `Pairings`, the
    params of a teammate and of a BR (`param_shapes`) and the teammate phase's optimiser."""
    nets = teammate_networks(config, "ROTATE", 1 if config.variant == "minimax" else 2)
    shapes = (params_shape(nets.teammate), params_shape(nets.best_response))
    seats = (config.ego_seat, 1 - config.ego_seat)
    coef = config.shaped_reward_coef
    mixed = MixedPartner(nets.ego, nets.best_response)
    drawn = SampledTeammate(Population(nets.teammate, slot_structs(shapes[0], config.iterations)))
    pairings = Pairings(
        sp=Pairing((nets.best_response, nets.teammate), (1, 0), seats, coef),
        xp=Pairing((nets.ego, nets.teammate), (1,), seats, coef),
        mixed=Pairing((mixed, nets.teammate), (), seats, coef),
        ego=Pairing((nets.ego, drawn), (0,), seats, coef),
    )
    optimizer = make_optimizer(config.teammate_ppo, config.teammate_updates)
    env = make_env(config.task_id, config.shaping)
    return MethodSetup(config, env, nets, pairings, shapes, optimizer)


# ---------------------------------------------------------------------------------------- state


class RotateState(NamedTuple):
    """Everything a ROTATE run needs to continue exactly, between two iterations.

    Teammates, best responses and their Adam states live only inside a phase, and every phase
    starts a fresh Adam state, so nothing else carries over from one iteration to the next.
    """

    ego: Params  # the ego agent's params (RecurrentEgo)
    buffer: TeammateBuffer  # every teammate generated so far
    key: jax.Array  # PRNG key of the next iteration
    iteration: jax.Array  # () int32: iterations done


def _empty_buffer(setup: MethodSetup) -> TeammateBuffer:
    teammate, best_response = setup.param_shapes
    no_br = setup.config.variant == "minimax"
    return empty_buffer(setup.config.iterations, teammate, None if no_br else best_response)


def init(key: jax.Array, setup: MethodSetup) -> RotateState:
    """A fresh run for one seed: a random ego and an empty buffer."""
    key_ego, key = jax.random.split(key)
    return RotateState(
        ego=init_params(setup.networks.ego, key_ego),
        buffer=_empty_buffer(setup),
        key=key,
        iteration=jnp.zeros((), jnp.int32),
    )


# ------------------------------------------------------------------------------------- rollouts


# ------------------------------------------------------------------------- teammate generation


class TeammatePhaseState(NamedTuple):
    """The carry of the teammate-generation scan (one seed)."""

    teammate: LearnerState  # params (two value heads) and Adam state
    best_response: LearnerState | None  # params and Adam state; None for `minimax`
    sp: RolloutState | None  # SP envs (p0 starts), persistent across updates; not `minimax`
    xp: RolloutState  # XP envs (p0 starts), persistent across updates
    mixed: RolloutState | None  # mixed-partner envs (p0 starts); `mixed_play` only
    key: jax.Array


def _teammate_update(
    carry: TeammatePhaseState, ego: Params, setup: MethodSetup
) -> tuple[TeammatePhaseState, dict[str, jax.Array]]:
    """One update of Alg. rotate_teamgen_alg: collect the rollouts, one PPO update of the
    teammate (its loss terms) and one of the BR (L_BR)."""
    config, env, pairings = setup.config, setup.env, setup.pairings
    steps, num_envs = config.rollout_length, config.num_envs
    assert carry.best_response is not None and carry.sp is not None
    tm, br = carry.teammate.params, carry.best_response.params
    key, k_sp, k_xp, k_a, k_b, k_tm, k_br = jax.random.split(carry.key, 7)
    per_state = config.variant in ("rotate", "no_buffer")
    sp_state, sp = rollout(env, pairings.sp, (br, tm), carry.sp, k_sp, steps, per_state)
    xp_state, xp = rollout(env, pairings.xp, (ego, tm), carry.xp, k_xp, steps, per_state)
    # trajectory, learner index of (teammate, BR) in it
    data: dict[str, tuple[Trajectory, int]] = {"sp": (sp, 0), "xp": (xp, 0)}
    br_data: dict[str, tuple[Trajectory, int]] = {"sp": (sp, 1)}
    mixed_state = carry.mixed
    if per_state:
        sxp = branch_rollout(env, pairings.sp, (br, tm), xp.states, k_a, num_envs, steps)
        xsp = branch_rollout(env, pairings.xp, (ego, tm), sp.states, k_b, num_envs, steps)
        data |= {"sxp": (sxp, 0), "xsp": (xsp, 0)}
        br_data["sxp"] = (sxp, 1)
    elif config.variant == "mixed_play":
        assert mixed_state is not None
        mixed_state, mixed = rollout(
            env, pairings.mixed, ((ego, br), tm), mixed_state, k_a, steps, True
        )
        mp = branch_rollout(env, pairings.sp, (br, tm), mixed.states, k_b, num_envs, steps)
        data["mp"] = (mp, 0)
        br_data["mp"] = (mp, 1)
    tm_streams = loss_streams(teammate_loss_terms(config), data, config.teammate_ppo)
    br_streams = loss_streams(best_response_loss_terms(config), br_data, config.teammate_ppo)
    teammate, best_response, metrics = update_teammate_and_best_response(
        setup.networks,
        carry,
        (tm_streams, br_streams),
        (k_tm, k_br),
        config.teammate_ppo,
        setup.optimizer,
    )
    for name, (trajectory, _) in data.items():
        stats = episode_stats(trajectory, seat=config.ego_seat)
        metrics[f"{name}_return"] = stats["episode_return"]
        metrics[f"{name}_episodes"] = stats["episodes"]
    next_carry = TeammatePhaseState(teammate, best_response, sp_state, xp_state, mixed_state, key)
    return next_carry, metrics


def _minimax_teammate_update(
    carry: TeammatePhaseState, ego: Params, setup: MethodSetup
) -> tuple[TeammatePhaseState, dict[str, jax.Array]]:
    """One update of the `minimax` variant: an XP rollout (teammate x the fixed ego) and one
    PPO update of the teammate on its loss terms (minus the ego's return); no SP, no BR."""
    key, k_xp, k_tm = jax.random.split(carry.key, 3)
    tm, config = carry.teammate.params, setup.config
    steps = config.rollout_length
    xp_state, xp = rollout(setup.env, setup.pairings.xp, (ego, tm), carry.xp, k_xp, steps)
    streams = loss_streams(teammate_loss_terms(config), {"xp": (xp, 0)}, config.teammate_ppo)
    teammate, tm_metrics = ppo_update(
        setup.networks.teammate,
        carry.teammate,
        streams,
        k_tm,
        config.teammate_ppo,
        setup.optimizer,
    )
    metrics = prefixed(teammate=tm_metrics)
    stats = episode_stats(xp, seat=config.ego_seat)
    metrics |= {"xp_return": stats["episode_return"], "xp_episodes": stats["episodes"]}
    return carry._replace(teammate=teammate, xp=xp_state, key=key), metrics


def teammate_phase(
    ego: Params,
    teammate: Params,
    best_response: Params | None,
    key: jax.Array,
    setup: MethodSetup,
) -> tuple[Params, Params | None, dict[str, jax.Array]]:
    """Alg. rotate_teamgen_alg for one seed: train `teammate` and `best_response` (fresh
    params; None for `minimax`) against the fixed `ego` for `config.teammate_updates` updates.

    Returns the trained teammate and BR params and the per-update metrics (leaves (U,)).
    """
    config, env, pairings = setup.config, setup.env, setup.pairings
    optimizer = setup.optimizer
    key, k_sp, k_xp, k_mixed = jax.random.split(key, 4)
    mixed = None
    if config.variant == "mixed_play":
        mixed = reset_rollout(env, pairings.mixed, k_mixed, config.num_envs)
    minimax = config.variant == "minimax"
    learner = None
    if not minimax:
        assert best_response is not None, f"variant {config.variant!r} trains a best response"
        learner = LearnerState(best_response, optimizer.init(best_response))
    start = TeammatePhaseState(
        teammate=LearnerState(teammate, optimizer.init(teammate)),
        best_response=learner,
        sp=None if minimax else reset_rollout(env, pairings.sp, k_sp, config.num_envs),
        xp=reset_rollout(env, pairings.xp, k_xp, config.num_envs),
        mixed=mixed,
        key=key,
    )
    update = _minimax_teammate_update if minimax else _teammate_update
    final, metrics = jax.lax.scan(
        lambda c, _: update(c, ego, setup), start, None, length=config.teammate_updates
    )
    best = None if final.best_response is None else final.best_response.params
    return final.teammate.params, best, metrics


# ----------------------------------------------------------------------------------- ego update


def buffer_weights(buffer: TeammateBuffer, config: RotateConfig) -> jax.Array:
    """(iterations,) draw weights of the ego update: uniform over the filled slots (Alg.
    rotate_ego_update line 5); the latest teammate alone for `no_buffer`."""
    slots = jnp.arange(config.iterations)
    if config.variant == "no_buffer":
        return (slots == buffer.count - 1).astype(jnp.float32)
    return (slots < buffer.count).astype(jnp.float32)


def ego_phase(
    ego: Params, buffer: TeammateBuffer, key: jax.Array, setup: MethodSetup
) -> tuple[Params, dict[str, jax.Array]]:
    """Alg. rotate_ego_update for one seed: `config.ego_updates` PPO updates of the ego against
    teammates drawn from the buffer (fresh envs and a fresh Adam state). Returns the ego's
    params and the per-update metrics (leaves (U,))."""
    config, nets = setup.config, setup.networks
    ego_config = config.ego_config
    optimizer = make_optimizer(ego_config.ppo, ego_config.num_updates)
    pool = TeammatePool(Population(nets.teammate, buffer.teammates), buffer_weights(buffer, config))
    key_envs, key = jax.random.split(key)
    start = FixedPartnerState(
        learner=LearnerState(ego, optimizer.init(ego)),
        teammates=pool,
        rollout=reset_rollout(setup.env, setup.pairings.ego, key_envs, config.num_envs),
        key=key,
        update_step=jnp.zeros((), jnp.int32),
    )
    final, metrics = jax.lax.scan(
        lambda s, _: fixed_partner.update(s, ego_config, nets.ego),
        start,
        None,
        length=config.ego_updates,
    )
    return final.learner.params, metrics


# ------------------------------------------------------------------------------ one iteration


@functools.partial(jax.jit, static_argnames="setup")
def _teammate_phase_seeds(
    state: RotateState,
    teammate: Params,
    best_response: Params,
    key: jax.Array,
    setup: MethodSetup,
) -> tuple[RotateState, dict[str, jax.Array]]:
    """Teammate phase of every seed; the new teammate and BR join the buffer."""

    def _one_seed(state: RotateState, teammate: Params, best_response: Params, key: jax.Array):
        teammate, best_response, metrics = teammate_phase(
            state.ego, teammate, best_response, key, setup
        )
        buffer = insert(state.buffer, teammate, best_response)
        summary = phase_summary(metrics)
        if "sp_return" in summary:  # every variant but `minimax`
            summary["regret"] = summary["sp_return"] - summary["xp_return"]
        return state._replace(buffer=buffer), summary

    return map_seeds(_one_seed, state, teammate, best_response, key)


@functools.partial(jax.jit, static_argnames="setup")
def _ego_phase_seeds(
    state: RotateState, fresh_ego: Params, key: jax.Array, setup: MethodSetup
) -> tuple[RotateState, dict[str, jax.Array]]:
    """Ego phase of every seed (critic head reset from `fresh_ego` if configured)."""

    def _one_seed(state: RotateState, fresh_ego: Params, key: jax.Array):
        ego = state.ego
        if setup.config.reset_ego_critic:
            ego = _with_fresh_critic(ego, fresh_ego)
        ego, metrics = ego_phase(ego, state.buffer, key, setup)
        summary = phase_summary(metrics, "ego_")
        summary["ego_return"] = summary.pop("ego_episode_return")
        return state._replace(ego=ego, iteration=state.iteration + 1), summary

    return map_seeds(_one_seed, state, fresh_ego, key)


def _with_fresh_critic(ego: Params, fresh: Params) -> Params:
    """`ego` with the critic layers of `fresh` (the GRU trunk is shared with the actor)."""
    inner = dict(ego["params"])
    for name in ("critic_0", "critic_out"):
        inner[name] = fresh["params"][name]
    return {**ego, "params": inner}


def step(
    state: RotateState, setup: MethodSetup, done: int
) -> tuple[RotateState, dict[str, jax.Array]]:
    """One iteration of Alg. OpenEndedFramework for every seed (leading seed axis), `done`
    done before it: generate a teammate against the current ego, add it to the buffer, update
    the ego (`METHOD.iterate` runs it).

    Metrics ((num_seeds,)): `sp_return`, `xp_return`, `regret` (= SP - XP, the regret
    estimate), the other rollouts' returns (`sxp_return`, `xsp_return` or `mp_return`), the
    teammate's, BR's and ego's PPO diagnostics (`teammate_*`, `best_response_*`, `ego_*`),
    `ego_return` (the ego with teammates from the buffer); `iterate` adds `population_size`,
    `iteration` and `env_steps` (cumulative). Returns and diagnostics are over the last
    quarter of a phase.
    """
    nets = setup.networks
    keys = jax.vmap(lambda k: jax.random.split(k, 6))(state.key)
    teammate = fresh_params(nets.teammate, keys[:, 1])
    best_response = None  # `minimax` trains no best response
    if setup.config.variant != "minimax":
        best_response = fresh_params(nets.best_response, keys[:, 2])
    fresh_ego = fresh_params(nets.ego, keys[:, 3])
    state = state._replace(key=keys[:, 0])
    state, tm_metrics = _teammate_phase_seeds(state, teammate, best_response, keys[:, 4], setup)
    state, ego_metrics = _ego_phase_seeds(state, fresh_ego, keys[:, 5], setup)
    return state, {**tm_metrics, **ego_metrics}


def population(state: RotateState, setup: MethodSetup, seed: int | None = 0) -> Population:
    """The generated teammates of one seed as a `Population` (host arrays), in generation order,
    ready for `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return buffer_population(state.buffer, "teammates", setup.networks.teammate, seed, "buffer")


REPORT = Report(
    generation_curves=(
        Curve("sp_return", "SP return (teammate x BR)", "C0"),
        Curve("xp_return", "XP return (teammate x ego)", "C1"),
        Curve("regret", "regret estimate (SP - XP)", "C3", progress="regret"),
    ),
)
"""How `aht-bench train rotate` shows a run: the regret curve of each new teammate, the ego's
return, per iteration (`aht_bench.runs.MethodLoop`)."""
