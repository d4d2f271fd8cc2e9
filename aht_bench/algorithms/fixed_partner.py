"""PPO for one learner against fixed teammates: the shared core of `ego` and `br`.

The learner sits in `config.learner_seat`; every other seat is a `SampledTeammate` that draws a
member of the teammate pool at each episode start (one member for a single teammate). The
learner trains with the standard PPO loss (one stream, `w = 1`, `sign = +1`, value head 0).
`ego` plugs in the recurrent ego network (minibatches over whole sequences), `br` an MLP.

May import jax, aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.policies.population import Population, TeammateSet
from aht_bench.training.config import BRConfig, EgoConfig
from aht_bench.training.driver import Metrics, TrainResult, init_seeds, run
from aht_bench.training.partners import SampledTeammate, TeammatePool, teammate_pool
from aht_bench.training.ppo import LearnerState, make_optimizer, make_stream, ppo_update
from aht_bench.training.rollout import (
    LearnerSetup,
    Pairing,
    RolloutState,
    episode_stats,
    init_params,
    init_rollout,
    make_env,
    rollout,
)

Teammates = Population | TeammateSet | TeammatePool


class FixedPartnerState(NamedTuple):
    """Everything a learner-vs-teammates run needs to continue exactly."""

    learner: LearnerState  # the learner's params and Adam state
    teammates: TeammatePool  # the fixed teammates and their draw weights
    rollout: RolloutState  # env states, observations, carries of the parallel envs
    key: jax.Array  # PRNG key of the next update
    update_step: jax.Array  # () int32: updates done


def as_pool(teammates: Teammates) -> TeammatePool:
    """A `TeammatePool` (uniform weights) from a Population, a TeammateSet or a pool."""
    if isinstance(teammates, TeammatePool):
        return teammates
    if isinstance(teammates, Population | TeammateSet):
        return teammate_pool(teammates)
    raise TypeError(
        f"teammates must be a Population, a TeammateSet or a TeammatePool, got "
        f"{type(teammates).__name__}; wrap a single policy as "
        "TeammateSet(['name'], [(policy, params)])"
    )


def _setup(config: BRConfig | EgoConfig, network: Any, pool: TeammatePool) -> LearnerSetup:
    env = make_env(config.task_id, config.shaping)
    if not 0 <= config.learner_seat < env.num_agents:
        raise ValueError(
            f"learner_seat={config.learner_seat} is invalid: {config.task_id} has "
            f"seats 0..{env.num_agents - 1}"
        )
    others = tuple(s for s in range(env.num_agents) if s != config.learner_seat)
    teammate = SampledTeammate(pool.members)
    pairing = Pairing(
        policies=(network,) + (teammate,) * len(others),
        learners=(0,),
        seats=(config.learner_seat,) + others,
        shaped_reward_coef=config.shaped_reward_coef,
    )
    return LearnerSetup(env, pairing, make_optimizer(config.ppo, config.num_updates))


def init(
    key: jax.Array, config: BRConfig | EgoConfig, network: Any, teammates: Teammates
) -> FixedPartnerState:
    """A fresh learner `network` against `teammates`, freshly reset envs."""
    pool = as_pool(teammates)
    setup = _setup(config, network, pool)
    key_params, key_envs, key = jax.random.split(key, 3)
    params = init_params(network, key_params)
    return FixedPartnerState(
        learner=LearnerState(params, setup.optimizer.init(params)),
        teammates=pool,
        rollout=init_rollout(setup.env, setup.pairing, key_envs, config.num_envs),
        key=key,
        update_step=jnp.zeros((), jnp.int32),
    )


def update(
    state: FixedPartnerState, config: BRConfig | EgoConfig, network: Any
) -> tuple[FixedPartnerState, Metrics]:
    """One update: a rollout of every env against the teammates, then one PPO update."""
    setup = _setup(config, network, state.teammates)
    key, key_rollout, key_ppo = jax.random.split(state.key, 3)
    params = (state.learner.params,) + (state.teammates,) * (setup.pairing.num_roles - 1)
    rollout_state, trajectory = rollout(
        setup.env, setup.pairing, params, state.rollout, key_rollout, config.rollout_length
    )
    stream = make_stream(trajectory, 0, config.ppo)
    learner, metrics = ppo_update(
        network, state.learner, (stream,), key_ppo, config.ppo, setup.optimizer
    )
    step = state.update_step + 1
    metrics |= episode_stats(trajectory, seat=config.learner_seat)
    metrics["env_steps"] = step * config.batch_size
    return state._replace(
        learner=learner, rollout=rollout_state, key=key, update_step=step
    ), metrics


def learner_params(state: FixedPartnerState) -> Any:
    """The learner's params (what checkpoints keep)."""
    return state.learner.params


def train(
    key: jax.Array,
    config: BRConfig | EgoConfig,
    teammates: Teammates,
    algorithm_init: Callable[..., FixedPartnerState],
    algorithm_update: Callable[..., tuple[FixedPartnerState, Metrics]],
    num_seeds: int = 1,
    on_update: Callable[[int, Metrics], None] | None = None,
) -> TrainResult:
    """A whole run for `num_seeds` seeds at once, of the algorithm whose module-level
    `init(key, config, pool)` and `update(state, config)` are given (module-level functions, so
    that runs with equal configs share one compiled update)."""
    keys = jax.random.split(key, num_seeds)
    state = init_seeds(keys, algorithm_init, config, as_pool(teammates))
    return run(state, algorithm_update, config, learner_params, on_update=on_update)


class Learner(NamedTuple):
    """One learner architecture bound to this core (`bind`): what `ego` and `br` export."""

    init: Callable[[jax.Array, Any, Teammates], FixedPartnerState]
    """`init(key, config, teammates)`: a fresh learner against `teammates` (Population,
    TeammateSet or TeammatePool)."""
    update: Callable[[FixedPartnerState, Any], tuple[FixedPartnerState, Metrics]]
    """`update(state, config)`: one PPO update of the learner."""
    train: Callable[..., TrainResult]
    """`train(key, config, teammates, num_seeds=1, on_update=None)`: a whole run for
    `num_seeds` seeds at once (seed i uses `split(key, num_seeds)[i]`)."""


def bind(network: Callable[[Any], Any]) -> Learner:
    """`init`, `update` and `train` of the learner whose architecture `network(config)` gives.
    Bind once, at module level: runs with equal configs then share one compiled update."""

    def init_learner(key: jax.Array, config: Any, teammates: Teammates) -> FixedPartnerState:
        return init(key, config, network(config), teammates)

    def update_learner(state: FixedPartnerState, config: Any) -> tuple[FixedPartnerState, Metrics]:
        return update(state, config, network(config))

    def train_learner(
        key: jax.Array,
        config: Any,
        teammates: Teammates,
        num_seeds: int = 1,
        on_update: Callable[[int, Metrics], None] | None = None,
    ) -> TrainResult:
        return train(key, config, teammates, init_learner, update_learner, num_seeds, on_update)

    return Learner(init_learner, update_learner, train_learner)
