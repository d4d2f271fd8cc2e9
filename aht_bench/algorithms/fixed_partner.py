"""PPO for one learner against fixed teammates: the shared core of `ego` and `br`, and what the
three PPO methods (ippo, br, ego) share as `Method`s.

The learner sits in `config.learner_seat`; every other seat is a `SampledTeammate` that draws a
member of the teammate pool at each episode start (one member for a single teammate). The
learner trains with the standard PPO loss (one stream, `w = 1`, `sign = +1`, value head 0).
`ego` plugs in the recurrent ego network (minibatches over whole sequences), `br` an MLP
(`method(name, network)`: the `Method` of that learner, one step `updates_per_call` updates).

May import jax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms.api only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.algorithms.api import UPDATES, Method, MethodSetup
from aht_bench.policies.population import Population
from aht_bench.policies.teammate_set import TeammateSet
from aht_bench.training import presets
from aht_bench.training.config import BRConfig, EgoConfig, RunConfig
from aht_bench.training.driver import Metrics, update_seeds
from aht_bench.training.partners import SampledTeammate, TeammatePool, teammate_pool
from aht_bench.training.ppo import LearnerState, make_optimizer, make_stream, ppo_update
from aht_bench.training.report import Curve, Report
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


REPORT = Report(
    generation_curves=(),
    diverged_fix="Lower ppo.learning_rate or check the reward scale",
    ego_curves=(Curve("episode_return", "base return", "C0", progress="ret"),),
    nan_metrics=("episode_return",),
)
"""How a run of a PPO method (ippo, br, ego) shows its progress: the learners' base return per
seed against env steps (NaN in an update where no episode ended)."""

EXHAUSTED = "give a larger total_timesteps (a new run: the learning rate anneals over it)"
"""What `iterate` tells a PPO method's run that has done all its updates."""


def learners(method: Method[Any, Any], state: Any) -> dict[str, Any]:
    """What must stay finite in a PPO method's run: its learners' params."""
    return {"the learners'": method.ego(state)}


def keeps(config: RunConfig, done: int) -> bool:
    """Whether a PPO method's run keeps its learners after update `done`
    (`checkpoint_updates`)."""
    return done in config.checkpoint_updates


def no_population(state: Any, setup: MethodSetup, seed: int | None) -> Population:
    raise ValueError(
        f"{type(setup.config).__name__}: a best response or ego run trains one policy and "
        "publishes no population; take its params (ego_params)"
    )


def method(
    name: str,
    network: Callable[[Any], Any],
    init_learner: Callable[[jax.Array, Any, Teammates], FixedPartnerState],
    update_learner: Callable[[FixedPartnerState, Any], tuple[FixedPartnerState, Metrics]],
) -> Method[Any, FixedPartnerState]:
    """The `Method` named `name` of the learner `network(config)` against fixed teammates,
    from the module's `init_learner(key, config, teammates)` (`init` with that network) and
    `update_learner(state, config)` (one `update`): one step `updates_per_call` PPO updates;
    its `init` takes the teammates after the setup (a Population, TeammateSet or
    TeammatePool). Build once, at module level, from module-level functions: runs with equal
    configs then share one compiled update."""

    def setup(config: Any) -> MethodSetup:
        return MethodSetup(
            config=config, env=make_env(config.task_id, config.shaping), networks=network(config)
        )

    def files(m: Method[Any, Any], state: Any, setup: MethodSetup, seed: int, kept: bool) -> list:
        return [("", (setup.networks, m.ego_params(state, seed)))]

    return Method(
        name=name,
        presets=presets.tables(name),
        setup=setup,
        init=lambda key, setup, teammates: init_learner(key, setup.config, teammates),
        step=lambda state, setup, done: update_seeds(state, update_learner, setup.config),
        population=no_population,
        report=REPORT,
        exhausted=EXHAUSTED,
        ego=learner_params,
        schedule=UPDATES,
        checked=learners,
        files=files,
        keeps=keeps,
    )
