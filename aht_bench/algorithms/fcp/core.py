"""The training of FCP (`aht_bench.algorithms.fcp`, whose docstring describes it): setup,
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

from aht_bench.algorithms import ego, ippo, two_stage
from aht_bench.algorithms.api import MethodSetup, buffer_population
from aht_bench.algorithms.common import params_shape, two_player_env
from aht_bench.algorithms.fcp.config import (
    FCPConfig,
)
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.algorithms.ippo import IPPOState
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population
from aht_bench.training.driver import map_seeds
from aht_bench.training.report import Curve, Report
from aht_bench.training.streams import phase_summary

# ---------------------------------------------------------------------------------------- setup


class Networks(NamedTuple):
    """The architectures of a run: IPPO's agents (the pool's members) and the ego."""

    teammate: MLPActorCritic  # every IPPO agent and pool member (one value head)
    ego: RecurrentEgo


def setup(config: FCPConfig) -> MethodSetup:
    """What an FCP run of `config` derives from it: the env (a ValueError unless the task has
    two seats), `Networks` and the params of one pool member (`param_shapes`); its IPPO runs
    and its ego stage derive theirs from `config.ippo_config` and `config.ego_config`."""
    env = two_player_env(config, "FCP")
    nets = Networks(teammate=ippo.network(config.ippo_config), ego=ego.network(config.ego_config))
    return MethodSetup(config, env, nets, param_shapes=params_shape(nets.teammate))


# ---------------------------------------------------------------------------------------- state


class FCPBuffer(NamedTuple):
    """The teammate pool, filled team by team (each team's snapshots oldest first)."""

    teammates: Params  # leaves (pool_size, ...): teammate-seat IPPO params of every snapshot
    team_keys: jax.Array  # (num_ippo_seeds, 2) uint32: the seed key of each IPPO run
    count: jax.Array  # () int32: filled slots


class FCPState(NamedTuple):
    """Everything an FCP run needs to continue exactly, between two iterations (an IPPO run
    lives inside one iteration, so none of its state carries over)."""

    ego: FixedPartnerState  # the ego's params, Adam state, pool, envs, key, update counter
    buffer: FCPBuffer  # the pool
    key: jax.Array  # PRNG key of the hand-over (the ego's env reset)
    iteration: jax.Array  # () int32: iterations done


def _teammate(params: Params, config: FCPConfig) -> Params:
    """The teammate seat's agent of IPPO params stacked on the agent axis."""
    return jax.tree.map(lambda x: x[1 - config.ego_seat], params)


def init(key: jax.Array, setup: MethodSetup) -> FCPState:
    """A fresh run for one seed: a random ego, an empty pool and the IPPO runs' seed keys."""
    config, nets = setup.config, setup.networks
    key_ego, key_teams, key = jax.random.split(key, 3)
    slots = jax.tree.map(
        lambda x: jnp.zeros((config.pool_size,) + x.shape, x.dtype), setup.param_shapes
    )
    return FCPState(
        ego=two_stage.ego_start(key_ego, config.ego_config, Population(nets.teammate, slots)),
        buffer=FCPBuffer(
            teammates=slots,
            team_keys=jax.random.split(key_teams, config.num_ippo_seeds),
            count=jnp.zeros((), jnp.int32),
        ),
        key=key,
        iteration=jnp.zeros((), jnp.int32),
    )


def train_team(team: IPPOState, setup: MethodSetup) -> tuple[Params, dict[str, jax.Array]]:
    """One whole IPPO run from `team` (`ippo.init`'s state), `ippo.update` scanned over all its
    updates. Returns the teammate seat's params at each of `config.checkpoint_updates` (leaves
    (num_checkpoints, ...)) and IPPO's per-update metrics (leaves (U,))."""
    config = setup.config
    ippo_config = config.ippo_config
    marks = jnp.asarray(config.checkpoint_updates, jnp.int32)

    def _keep(kept: Params, state: IPPOState) -> Params:
        hit = marks == state.update_step
        params = _teammate(state.learners.params, config)
        return jax.tree.map(
            lambda k, p: jnp.where(hit.reshape((-1,) + (1,) * p.ndim), p[None], k), kept, params
        )

    empty = jax.tree.map(
        lambda x: jnp.zeros((config.num_checkpoints,) + x.shape, x.dtype),
        _teammate(team.learners.params, config),
    )

    def _update(carry: tuple[IPPOState, Params], _: None):
        state, kept = carry
        state, metrics = ippo.update(state, ippo_config)
        return (state, _keep(kept, state)), metrics

    (_, kept), metrics = jax.lax.scan(
        _update, (team, _keep(empty, team)), None, length=ippo_config.num_updates
    )
    return kept, metrics


def team_states(state: FCPState, setup: MethodSetup, teams: range) -> IPPOState:
    """Fresh IPPO states (`ippo.init` with each run's seed key) of `teams` for every seed:
    leaves (num_seeds, len(teams), ...). Built seed by seed outside jit, as `ippo.train` does."""
    config = setup.config
    keys = np.asarray(jax.device_get(state.buffer.team_keys))
    per_seed = [
        jax.tree.map(
            lambda *xs: jnp.stack(xs), *[ippo.init(keys[s, t], config.ippo_config) for t in teams]
        )
        for s in range(keys.shape[0])
    ]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *per_seed)


@functools.partial(jax.jit, static_argnames="setup")
def _generation_seeds(
    state: FCPState, teams: IPPOState, setup: MethodSetup
) -> tuple[FCPState, dict[str, jax.Array]]:
    """Train the IPPO runs `teams` (leaves (num_seeds, k, ...)) of every seed; their snapshots
    join the pool."""
    config = setup.config

    def _one_seed(state: FCPState, teams: IPPOState):
        kept, metrics = map_seeds(lambda t: train_team(t, setup), teams)  # leaves (k, C, ...)
        members = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), kept)
        buf = state.buffer

        def insert(slots: jax.Array, new: jax.Array) -> jax.Array:
            start = (buf.count,) + (0,) * (slots.ndim - 1)
            return jax.lax.dynamic_update_slice(slots, new, start)

        buffer = buf._replace(
            teammates=jax.tree.map(insert, buf.teammates, members),
            count=buf.count + config.teams_per_iteration * config.num_checkpoints,
        )
        summaries = jax.vmap(lambda m: phase_summary(m, "ippo_"))(
            {k: v for k, v in metrics.items() if k != "env_steps"}
        )
        summary = {k: jnp.nanmean(v) for k, v in summaries.items()}
        summary["sp_return"] = summary.pop("ippo_episode_return")
        return state._replace(buffer=buffer), summary

    return map_seeds(_one_seed, state, teams)


def pool_weights(config: FCPConfig) -> jax.Array:
    """(pool_size,) draw weights of the ego stage: uniform over every snapshot of every run."""
    return jnp.ones((config.pool_size,), jnp.float32)


@functools.partial(jax.jit, static_argnames="setup")
def _hand_over_seeds(state: FCPState, setup: MethodSetup) -> FCPState:
    """The full pool becomes the ego's (uniform weights); the ego's envs are reset."""
    config = setup.config

    def _one_seed(state: FCPState) -> FCPState:
        key, key_reset = jax.random.split(state.key)
        members = Population(setup.networks.teammate, state.buffer.teammates)
        ego_state = two_stage.with_population(
            state.ego, members, pool_weights(config), config.ego_config, key_reset
        )
        return state._replace(ego=ego_state, key=key)

    return map_seeds(_one_seed, state)


# ------------------------------------------------------------------------------ one iteration


def step(state: FCPState, setup: MethodSetup, done: int) -> tuple[FCPState, dict[str, Any]]:
    """Iteration `done + 1` of every seed (leading seed axis): the next `teams_per_iteration`
    IPPO runs while the pool is being built (the last of them hands the pool to the ego), one
    chunk of the ego's PPO updates after that. Metrics: see the module docstring."""
    config = setup.config
    if done < config.generation_iterations:
        k = config.teams_per_iteration
        teams = team_states(state, setup, range(done * k, (done + 1) * k))
        state, metrics = _generation_seeds(state, teams, setup)
        if done + 1 == config.generation_iterations:
            state = _hand_over_seeds(state, setup)
    else:
        sizes = two_stage.chunk_sizes(config.ego_config, config.ego_iterations)
        ego_state, metrics = two_stage.ego_chunk_seeds(
            state.ego, config.ego_config, sizes[done - config.generation_iterations]
        )
        state = state._replace(ego=ego_state)
    return state._replace(iteration=state.iteration + 1), metrics


def population(state: FCPState, setup: MethodSetup, seed: int | None = 0) -> Population:
    """The pool of one seed as a `Population` (host arrays; team by team, each team's snapshots
    oldest first), ready for `aht_bench.policies.io.save_population`. `seed=None` for an
    unbatched state."""
    return buffer_population(state.buffer, "teammates", setup.networks.teammate, seed, "pool")


REPORT = Report(
    generation_curves=(
        Curve("sp_return", "SP return of each IPPO team (last quarter)", "C0", progress="sp"),
    ),
)
"""How `aht_bench.runs.train` drives FCP (`aht-bench train fcp`)."""
