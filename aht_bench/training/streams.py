"""Loss streams and the rollouts they come from, for methods that train on several kinds of data
at once (teammates trained on self-play and cross-play data, say): a `LossTerm` names one
stream of a learner's loss (which rollout, its weight w_t, sign and value head) and
`loss_streams` turns a table of them into `ppo.Stream`s; `branch_rollout` rolls a pairing out
from start states drawn from stored ones (the paper's SXP/XSP, mixed-play data);
`phase_summary` reduces a phase's per-update metrics to per-phase scalars.

May import jax, aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.envs.core import EnvState
from aht_bench.envs.wrappers import AutoReset, StoredStates
from aht_bench.policies.core import Params
from aht_bench.training.config import PPOConfig
from aht_bench.training.ppo import Stream, make_stream, timestep_weights
from aht_bench.training.rollout import Pairing, Trajectory, reset_rollout, rollout


class LossTerm(NamedTuple):
    """One stream of a learner's loss: which data, its weight w_t, sign and value head."""

    data: str  # "sp", "xp", "sxp", "xsp" or "mp": the rollout it comes from
    coef: float  # constant factor of w_t
    timestep_weighted: bool  # w_t = coef * (t + 1) (Eq. tsw_grad) if True, else coef
    sign: float  # +1 or -1 (Eq. ppo_clip_loss's varsigma)
    value_head: int  # the learner's critic head its advantages come from and train
    per_start_state: bool = False  # w_t also times transitions per episode of the batch


def flat_states(states: EnvState[Any] | None) -> EnvState[Any]:
    assert states is not None, "rollout was not run with keep_states=True"
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), states)


def branch_rollout(
    env: AutoReset,
    pairing: Pairing,
    params: tuple[Params, ...],
    states: EnvState[Any] | None,
    key: jax.Array,
    num_envs: int,
    rollout_length: int,
) -> Trajectory:
    """A rollout of `pairing` whose episodes start from states drawn uniformly from `states`
    (leaves (T, E, ...), e.g. the states an XP rollout visited): SXP, XSP and MP data.

    Every update draws fresh start states from the latest batch (the paper's teammate
    generation algorithm, lines SampleStates/Interact); an episode that ends inside the
    rollout restarts from another drawn state, and the last one is bootstrapped where the
    rollout cuts it: `num_envs` envs of `env`'s task (its reset source replaced),
    `rollout_length` steps.
    """
    env = AutoReset(env.env, StoredStates(flat_states(states)))
    key_reset, key_rollout = jax.random.split(key)
    start = reset_rollout(env, pairing, key_reset, num_envs)
    _, trajectory = rollout(env, pairing, params, start, key_rollout, rollout_length)
    return trajectory


def term_stream(
    trajectory: Trajectory, learner: int, term: LossTerm, ppo_config: PPOConfig
) -> Stream:
    base = timestep_weights(trajectory) if term.timestep_weighted else 1.0
    weights = term.coef * jnp.broadcast_to(base, trajectory.time.shape).astype(jnp.float32)
    if term.per_start_state:
        # mean over transitions x (transitions / episodes) = mean over episodes (start states)
        episodes = jnp.maximum(jnp.sum(trajectory.starts), 1)
        weights = weights * (trajectory.starts.size / episodes)
    return make_stream(trajectory, learner, ppo_config, term.value_head, weights, term.sign)


def loss_streams(
    terms: tuple[LossTerm, ...],
    data: dict[str, tuple[Trajectory, int]],
    ppo_config: PPOConfig,
) -> tuple[Stream, ...]:
    """The streams of `terms`; `data[name] = (trajectory, learner index in it)`."""
    return tuple(term_stream(*data[t.data], t, ppo_config) for t in terms)


def tail_return(returns: jax.Array, episodes: jax.Array) -> jax.Array:
    """Mean base return of the episodes that ended in the last quarter of a phase's updates."""
    tail = max(1, returns.shape[0] // 4)
    r, n = returns[-tail:], episodes[-tail:]
    total = jnp.sum(jnp.where(n > 0, r * n, 0.0))
    count = jnp.sum(n)
    return jnp.where(count > 0, total / jnp.maximum(count, 1.0), jnp.nan)


def prefixed(**learners: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """One metrics dict from several learners' (`teammate=..., best_response=...`), each key
    prefixed with its learner's name: `teammate_loss`, `best_response_loss`, ..."""
    return {f"{name}_{k}": v for name, metrics in learners.items() for k, v in metrics.items()}


def phase_summary(metrics: dict[str, jax.Array], prefix: str = "") -> dict[str, jax.Array]:
    """Per-phase scalars: returns over the last quarter of updates, PPO diagnostics averaged
    over the last quarter."""
    out = {}
    for k, v in metrics.items():
        if k.endswith("_episodes") or k in ("episodes", "env_steps"):
            continue
        if k.endswith("episode_return") or k.endswith("_return"):
            count_key = k.replace("_return", "_episodes") if k != "episode_return" else "episodes"
            out[prefix + k] = tail_return(v, metrics[count_key])
        else:
            out[prefix + k] = jnp.mean(v[-max(1, v.shape[0] // 4) :])
    return out
