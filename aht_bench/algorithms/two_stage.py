"""The ego stage shared by the two-stage methods (FCP, BRDiv, CoMeDi; paper App. "Baselines
Overview"): once a method has generated its teammate population, the recurrent PPO ego agent
(`ego.py`, Table ppo_ego_tm_hyperparams, `presets.get("ego", ...)`) trains against members
drawn per episode from it.

A two-stage run is a sequence of iterations of the run loop (an `aht_bench.runs.MethodLoop`):
the method's own `generation_iterations` first, then `ego_iterations` iterations that each run one
chunk of the ego's PPO updates in one jitted call. The ego's whole learner state (params, Adam
state, envs, key, update counter: a `FixedPartnerState`) lives in the run state from the start, so a
run stopped after any iteration resumes bit-identically, and the ego stage of a long preset
checkpoints as it goes. Until the population exists the ego's pool holds zero params with zero
weights; `with_population` puts the real members in and resets the ego's envs.

A method's state is any NamedTuple with the fields `ego` (a `FixedPartnerState`), `buffer`
(what the method generated), `key` and `iteration`, which is what `aht_bench.runs.MethodLoop`
reads.

    state = state._replace(ego=two_stage.with_population(state.ego, members, weights, ego_cfg, key))
    ego_state, metrics = two_stage.ego_chunk_seeds(state.ego, ego_cfg, updates)

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.algorithms import ego, fixed_partner
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.policies.core import Params
from aht_bench.policies.population import Population
from aht_bench.training.config import EgoConfig
from aht_bench.training.driver import map_seeds
from aht_bench.training.partners import TeammatePool
from aht_bench.training.rollout import reset_rollout
from aht_bench.training.streams import phase_summary

__all__ = [
    "chunk_sizes",
    "ego_chunk_seeds",
    "ego_of",
    "ego_start",
    "env_steps_of_chunks",
    "with_population",
]


def chunk_sizes(config: EgoConfig, ego_iterations: int) -> tuple[int, ...]:
    """The ego's PPO updates per ego iteration: `config.num_updates` split as evenly as
    possible over `ego_iterations` (at most two distinct sizes, so at most two compiles)."""
    total = config.num_updates
    if not 1 <= ego_iterations <= total:
        raise ValueError(
            f"ego_iterations={ego_iterations} is invalid: use 1..{total} (the ego stage has "
            f"{total} PPO updates of {config.batch_size} env steps)"
        )
    base, extra = divmod(total, ego_iterations)
    return tuple(base + (1 if i < extra else 0) for i in range(ego_iterations))


def ego_start(key: jax.Array, config: EgoConfig, slots: Population) -> FixedPartnerState:
    """A fresh ego (one seed) whose pool has the structure of `slots` (a population of the
    final size; its params are placeholders) and zero weights: the state before the
    population exists."""
    pool = TeammatePool(slots, jnp.zeros((slots.size,), jnp.float32))
    return ego.init(key, config, pool)


def with_population(
    state: FixedPartnerState,
    members: Population,
    weights: jax.Array,
    config: EgoConfig,
    key: jax.Array,
) -> FixedPartnerState:
    """`state` (one seed) training against `members` drawn with `weights` (size,), its envs
    reset with `key` (so no episode runs on with a placeholder teammate). Traceable."""
    pool = TeammatePool(members, jnp.asarray(weights, jnp.float32))
    setup = fixed_partner._setup(config, ego.network(config), pool)
    rollout = reset_rollout(setup.env, setup.pairing, key, config.num_envs)
    return state._replace(teammates=pool, rollout=rollout)


def _ego_chunk(
    state: FixedPartnerState, config: EgoConfig, num_updates: int
) -> tuple[FixedPartnerState, dict[str, jax.Array]]:
    state, metrics = jax.lax.scan(
        lambda s, _: ego.update(s, config), state, None, length=num_updates
    )
    summary = phase_summary(metrics, "ego_")
    summary["ego_return"] = summary.pop("ego_episode_return")
    return state, summary


@functools.partial(jax.jit, static_argnames=("config", "num_updates"))
def ego_chunk_seeds(
    state: FixedPartnerState, config: EgoConfig, num_updates: int
) -> tuple[FixedPartnerState, dict[str, jax.Array]]:
    """`num_updates` PPO updates of the ego of every seed (leading seed axis) in one call.

    Metrics ((num_seeds,) each): `ego_return` (base return of the episodes that ended in the
    last quarter of the chunk's updates, NaN if none did) and the ego's PPO diagnostics
    averaged over that quarter (`ego_policy_loss`, ...)."""
    return map_seeds(lambda s: _ego_chunk(s, config, num_updates), state)


def ego_of(state: Any) -> Params:
    """Where the ego's params are in a two-stage state (`Method.ego`)."""
    return state.ego.learner.params


def env_steps_of_chunks(config: EgoConfig, ego_iterations: int) -> np.ndarray:
    """(ego_iterations + 1,) cumulative env steps of the ego stage after each ego iteration."""
    sizes = chunk_sizes(config, ego_iterations)
    return np.concatenate([[0], np.cumsum(sizes)]) * config.batch_size
