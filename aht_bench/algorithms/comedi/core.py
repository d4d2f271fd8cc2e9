"""The training of CoMeDi (`aht_bench.algorithms.comedi`, whose docstring describes it): networks,
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

from aht_bench.algorithms import two_stage
from aht_bench.algorithms.api import MethodSetup, buffer_population, fresh_params
from aht_bench.algorithms.comedi.config import (
    PARTNER_SEAT,
    TEAMMATE_SEAT,
    CoMeDiConfig,
    best_response_loss_terms,
    first_teammate_loss_terms,
    teammate_loss_terms,
    with_xp_head,
)
from aht_bench.algorithms.common import (
    TeammateNetworks,
    params_shape,
    teammate_networks,
    update_teammate_and_best_response,
)
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.policies.core import Carry, Extras, Params
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.policies.population import Population
from aht_bench.training.buffer import TeammateBuffer, empty_buffer, insert
from aht_bench.training.driver import map_seeds
from aht_bench.training.partners import MixedPartner
from aht_bench.training.ppo import LearnerState, Stream, make_optimizer
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    make_env,
    reset_rollout,
    rollout,
)
from aht_bench.training.streams import branch_rollout, loss_streams, phase_summary

# ------------------------------------------------------------------------------------ networks


Networks = TeammateNetworks
"""The teammate (population_size value heads: BR_HEAD, then XP_HEAD + j), the BR, the ego."""


@dataclasses.dataclass(frozen=True)
class EarlierTeammates:
    """The XP partner: in env e, earlier teammate `e mod count` plays, for every episode.
    Params: (the buffer as a `Population`, count); carry: the env's index (what `init_carry`
    gives, so episode-start resets keep it)."""

    teammate: MLPActorCritic

    def init_carry(self, batch_shape: tuple[int, ...]) -> jax.Array:
        envs = jnp.arange(batch_shape[-1], dtype=jnp.int32) if batch_shape else jnp.int32(0)
        return jnp.broadcast_to(envs, batch_shape)

    def act(
        self, params: tuple[Population, jax.Array], carry: jax.Array, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, Carry, Extras]:
        members, count = params
        action, _, _ = members.act(carry % jnp.maximum(count, 1), (), obs, key)
        return jnp.asarray(action, jnp.int32), carry, {}


def xp_slots(num_envs: int, count: jax.Array | int) -> jax.Array:
    """(num_envs,) int32: the earlier teammate each XP env plays with (`EarlierTeammates`)."""
    return jnp.arange(num_envs, dtype=jnp.int32) % jnp.maximum(count, 1)


class Pairings(NamedTuple):
    sp: Pairing  # roles (BR, teammate); learners (teammate, BR)
    xp: Pairing  # roles (EarlierTeammates, teammate); learners (teammate,)
    mixed: Pairing  # roles (MixedPartner, teammate); no learners


def setup(config: CoMeDiConfig) -> MethodSetup:
    """What a CoMeDi run of `config` derives from it: the env, `Networks`, `Pairings`, the
    params of a teammate and of a BR (`param_shapes`) and a generation iteration's optimiser."""
    nets = teammate_networks(config, "CoMeDi", config.population_size)
    shapes = (params_shape(nets.teammate), params_shape(nets.best_response))
    seats = (PARTNER_SEAT, TEAMMATE_SEAT)
    coef = config.shaped_reward_coef
    pairings = Pairings(
        sp=Pairing((nets.best_response, nets.teammate), (1, 0), seats, coef),
        xp=Pairing((EarlierTeammates(nets.teammate), nets.teammate), (1,), seats, coef),
        mixed=Pairing((MixedPartner(nets.teammate, nets.best_response), nets.teammate), (), seats),
    )
    optimizer = make_optimizer(config.teammate_ppo, config.teammate_updates)
    env = make_env(config.task_id, config.shaping)
    return MethodSetup(config, env, nets, pairings, shapes, optimizer)


# ---------------------------------------------------------------------------------------- state


class CoMeDiState(NamedTuple):
    """Everything a CoMeDi run needs to continue exactly, between two iterations. A teammate,
    its BR and their Adam states live only inside its generation iteration."""

    ego: FixedPartnerState  # the ego stage's whole learner state (`two_stage`)
    buffer: TeammateBuffer  # the teammates generated so far
    key: jax.Array  # PRNG key of the next generation iteration
    iteration: jax.Array  # () int32: iterations done


def init(key: jax.Array, setup: MethodSetup) -> CoMeDiState:
    """A fresh run for one seed: an empty buffer and a fresh ego whose pool is still empty."""
    key_ego, key = jax.random.split(key)
    buffer = empty_buffer(setup.config.population_size, *setup.param_shapes)
    slots = Population(setup.networks.teammate, buffer.teammates)
    return CoMeDiState(
        ego=two_stage.ego_start(key_ego, setup.config.ego_config, slots),
        buffer=buffer,
        key=key,
        iteration=jnp.zeros((), jnp.int32),
    )


# ------------------------------------------------------------------------- teammate generation


def compatibility(trajectory: Trajectory, count: jax.Array | int) -> jax.Array:
    """(population_size,) estimated compatibility of the teammate with each earlier teammate:
    its mean training reward per step in the XP envs of that teammate (-inf for slots not yet
    filled). `trajectory` is an XP rollout, learner 0 the teammate."""
    rewards = trajectory.learners[0].rewards  # (T, E)
    envs = rewards.shape[1]
    slots = xp_slots(envs, count)
    size = trajectory.learners[0].values.shape[-1]  # population_size value heads
    onehot = (slots[:, None] == jnp.arange(size)[None, :]).astype(jnp.float32)  # (E, P)
    per_slot = jnp.mean(rewards, axis=0) @ onehot / jnp.maximum(onehot.sum(axis=0), 1.0)
    return jnp.where(jnp.arange(size) < count, per_slot, -jnp.inf)


def _masked_episode_stats(
    trajectory: Trajectory, env_mask: jax.Array, seat: int
) -> dict[str, jax.Array]:
    """`episode_stats` over the episodes of the envs in `env_mask` (E,) only."""
    done = (trajectory.done & env_mask[None, :]).astype(jnp.float32)
    count = jnp.sum(done)
    total = jnp.sum(trajectory.episode_return[..., seat] * done)
    mean = jnp.where(count > 0, total / jnp.maximum(count, 1.0), jnp.nan)
    return {"episode_return": mean, "episodes": count}


def choose_comp(xp: Trajectory, count: jax.Array | int) -> jax.Array:
    """() int32: pi^comp, the earlier teammate with the highest `compatibility` (ties: the
    earliest)."""
    return jnp.argmax(compatibility(xp, count)).astype(jnp.int32)


def teammate_streams(
    config: CoMeDiConfig,
    data: dict[str, tuple[Trajectory, int]],
    comp: jax.Array | int | None,
    count: jax.Array | int,
) -> tuple[Stream, ...]:
    """The teammate's streams (`data[name] = (trajectory, teammate's learner index)`): SP only
    for the first teammate (`comp` None); else SP, XP and MP of `teammate_loss_terms`, the XP
    stream on pi^comp's value head and masked to the XP envs that `comp` played in (of the
    `count` earlier teammates the rollout's envs were split among)."""
    if comp is None:
        return loss_streams(first_teammate_loss_terms(), data, config.teammate_ppo)
    terms = with_xp_head(teammate_loss_terms(config), comp)
    streams = loss_streams(terms, data, config.teammate_ppo)
    out = []
    for term, stream in zip(terms, streams, strict=True):
        if term.data == "xp":
            envs = xp_slots(stream.mask.shape[1], count) == comp  # (E,)
            stream = stream._replace(mask=stream.mask & envs[None, :])
        out.append(stream)
    return tuple(out)


class GenerationState(NamedTuple):
    """The carry of one teammate's generation scan (one seed)."""

    teammate: LearnerState  # params (population_size value heads) and Adam state
    best_response: LearnerState  # params and Adam state
    sp: RolloutState  # SP envs (p0 starts), persistent across updates
    xp: RolloutState | None  # XP envs (p0 starts); None for the first teammate
    mixed: RolloutState | None  # mixed-partner envs (p0 starts); None for the first teammate
    key: jax.Array


def _generation_update(
    carry: GenerationState, buffer: TeammateBuffer, setup: MethodSetup, first: bool
) -> tuple[GenerationState, dict[str, jax.Array]]:
    """One PPO update of the teammate and of its BR (module docstring)."""
    config, env, nets, pairings = setup.config, setup.env, setup.networks, setup.pairings
    steps = config.rollout_length
    tm, br = carry.teammate.params, carry.best_response.params
    key, k_sp, k_xp, k_mixed, k_mp, k_tm, k_br = jax.random.split(carry.key, 7)
    sp_state, sp = rollout(env, pairings.sp, (br, tm), carry.sp, k_sp, steps)
    data: dict[str, tuple[Trajectory, int]] = {"sp": (sp, 0)}  # (trajectory, learner index)
    br_data: dict[str, tuple[Trajectory, int]] = {"sp": (sp, 1)}
    metrics: dict[str, jax.Array] = {}
    xp_state, mixed_state = carry.xp, carry.mixed
    comp = None
    if not first:
        assert xp_state is not None and mixed_state is not None
        earlier = Population(nets.teammate, buffer.teammates)
        xp_state, xp = rollout(
            env, pairings.xp, ((earlier, buffer.count), tm), xp_state, k_xp, steps
        )
        comp = choose_comp(xp, buffer.count)
        mixed_state, mixed = rollout(
            env, pairings.mixed, ((earlier.get(comp), br), tm), mixed_state, k_mixed, steps, True
        )
        mp = branch_rollout(env, pairings.sp, (br, tm), mixed.states, k_mp, config.num_envs, steps)
        data |= {"xp": (xp, 0), "mp": (mp, 0)}
        br_data["mp"] = (mp, 1)
        comp_envs = xp_slots(config.num_envs, buffer.count) == comp
        for name, stats in (
            ("xp", _masked_episode_stats(xp, comp_envs, PARTNER_SEAT)),
            ("xp_all", episode_stats(xp, seat=PARTNER_SEAT)),
            ("mp", episode_stats(mp, seat=PARTNER_SEAT)),
        ):
            metrics[f"{name}_return"] = stats["episode_return"]
            metrics[f"{name}_episodes"] = stats["episodes"]
        metrics["comp"] = comp
    tm_streams = teammate_streams(config, data, comp, buffer.count)
    br_streams = loss_streams(best_response_loss_terms(first), br_data, config.teammate_ppo)
    teammate, best_response, updated = update_teammate_and_best_response(
        nets,
        carry,
        (tm_streams, br_streams),
        (k_tm, k_br),
        config.teammate_ppo,
        setup.optimizer,
    )
    metrics |= updated
    sp_stats = episode_stats(sp, seat=PARTNER_SEAT)
    metrics["sp_return"], metrics["sp_episodes"] = sp_stats["episode_return"], sp_stats["episodes"]
    return GenerationState(teammate, best_response, sp_state, xp_state, mixed_state, key), metrics


def generation_phase(
    buffer: TeammateBuffer,
    teammate: Params,
    best_response: Params,
    key: jax.Array,
    setup: MethodSetup,
    first: bool,
) -> tuple[Params, Params, dict[str, jax.Array]]:
    """Train one new teammate and its BR (fresh params, one seed) for `config.teammate_updates`
    updates against the earlier teammates in `buffer` (none if `first`).

    Returns the trained teammate and BR params and the per-update metrics (leaves (U,)).
    """
    config, env, pairings = setup.config, setup.env, setup.pairings
    optimizer = setup.optimizer
    key, k_sp, k_xp, k_mixed = jax.random.split(key, 4)
    xp = mixed = None
    if not first:
        xp = reset_rollout(env, pairings.xp, k_xp, config.num_envs)
        mixed = reset_rollout(env, pairings.mixed, k_mixed, config.num_envs)
    start = GenerationState(
        teammate=LearnerState(teammate, optimizer.init(teammate)),
        best_response=LearnerState(best_response, optimizer.init(best_response)),
        sp=reset_rollout(env, pairings.sp, k_sp, config.num_envs),
        xp=xp,
        mixed=mixed,
        key=key,
    )
    final, metrics = jax.lax.scan(
        lambda c, _: _generation_update(c, buffer, setup, first),
        start,
        None,
        length=config.teammate_updates,
    )
    return final.teammate.params, final.best_response.params, metrics


@functools.partial(jax.jit, static_argnames=("setup", "first"))
def _generation_seeds(
    state: CoMeDiState,
    teammate: Params,
    best_response: Params,
    key: jax.Array,
    setup: MethodSetup,
    first: bool,
) -> tuple[CoMeDiState, dict[str, jax.Array]]:
    """One generation iteration of every seed: the new teammate and its BR join the buffer."""

    def _one_seed(state: CoMeDiState, teammate: Params, best_response: Params, key: jax.Array):
        buf = state.buffer
        teammate, best_response, metrics = generation_phase(
            buf, teammate, best_response, key, setup, first
        )

        buffer = insert(buf, teammate, best_response)
        comp = metrics.pop("comp", None)
        summary = phase_summary(metrics)
        if comp is not None:
            summary["comp_teammate"] = comp[-1].astype(jnp.float32)  # pi^comp at the last update
        next_state = state._replace(buffer=buffer, iteration=state.iteration + 1)
        return next_state, summary

    return map_seeds(_one_seed, state, teammate, best_response, key)


@functools.partial(jax.jit, static_argnames="setup")
def _ego_with_population(state: CoMeDiState, key: jax.Array, setup: MethodSetup) -> CoMeDiState:
    """Every seed's ego now trains against its whole population (uniform draws)."""
    config = setup.config

    def _one_seed(state: CoMeDiState, key: jax.Array) -> CoMeDiState:
        members = Population(setup.networks.teammate, state.buffer.teammates)
        weights = jnp.ones((config.population_size,), jnp.float32)
        ego = two_stage.with_population(state.ego, members, weights, config.ego_config, key)
        return state._replace(ego=ego)

    return map_seeds(_one_seed, state, key)


# ------------------------------------------------------------------------------ one iteration


def step(state: CoMeDiState, setup: MethodSetup, done: int) -> tuple[CoMeDiState, dict[str, Any]]:
    """Iteration `done + 1` of every seed (leading seed axis): iterations
    `0 .. population_size - 1` generate teammate `done` (after the last, the ego's pool
    becomes the population), the rest each run one chunk of the ego stage.

    Metrics ((num_seeds,)), over the last quarter of the iteration's updates: generation:
    `sp_return` (teammate x BR), `xp_return` (with pi^comp), `xp_all_return` (with every
    earlier teammate), `mp_return`, `comp_teammate` (pi^comp's index at the last update),
    `teammate_*`, `best_response_*` (PPO diagnostics); the first teammate has `sp_return` and
    the diagnostics only. Ego: `ego_return` (with the population) and `ego_*`.
    `METHOD.iterate` adds `iteration`, `population_size` and `env_steps` (cumulative).
    """
    config = setup.config
    if done < config.population_size:
        nets = setup.networks
        keys = jax.vmap(lambda k: jax.random.split(k, 5))(state.key)
        teammate = fresh_params(nets.teammate, keys[:, 1])
        best_response = fresh_params(nets.best_response, keys[:, 2])
        state = state._replace(key=keys[:, 0])
        state, out = _generation_seeds(
            state, teammate, best_response, keys[:, 3], setup, first=done == 0
        )
        if done + 1 == config.population_size:
            state = _ego_with_population(state, keys[:, 4], setup)
        return state, out
    ego_config = config.ego_config
    chunk = two_stage.chunk_sizes(ego_config, config.ego_iterations)[done - config.population_size]
    ego, out = two_stage.ego_chunk_seeds(state.ego, ego_config, chunk)
    return state._replace(ego=ego, iteration=state.iteration + 1), out


def population(state: CoMeDiState, setup: MethodSetup, seed: int | None = 0) -> Population:
    """The generated teammates of one seed as a `Population` (host arrays), in generation order,
    ready for `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return buffer_population(state.buffer, "teammates", setup.networks.teammate, seed, "buffer")
