"""Independent PPO in self-play (paper: the base algorithm of every method, Table ippo_hyperparams).

Every seat is a separate MLP actor-critic learner (no parameter sharing); all seats play
together from p0 starts, and each trains on its own transitions with the standard PPO loss
(one stream, `w = 1`, `sign = +1`, value head 0). The agents' params and optimiser states are
stacked on a leading agent axis; each agent gets its own PPO update. Used to train the
heldout IPPO teammates and FCP's pool (`IPPOConfig.checkpoint_updates` keeps intermediate
params).

    result = ippo.train(jax.random.PRNGKey(0), presets.get("ippo", "quick", "lbf"), num_seeds=2)
    result.metrics["episode_return"]      # (2, num_updates)
    result.state.learners.params          # leaves (2 seeds, num_agents, ...)
    result.kept                           # update -> params, at config.checkpoint_updates

`METHOD` is the `Method` (one step `updates_per_call` updates); it publishes a seed's team as a
`Population` of its agents.

May import jax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms (api, fixed_partner) only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.algorithms import fixed_partner
from aht_bench.algorithms.api import UPDATES, Method, MethodSetup, seed_of
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.policies.population import Population
from aht_bench.training import presets
from aht_bench.training.config import IPPOConfig
from aht_bench.training.driver import Metrics, update_seeds
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


class IPPOState(NamedTuple):
    """Everything an IPPO run needs to continue exactly."""

    learners: LearnerState  # params and Adam states, leaves (num_agents, ...)
    rollout: RolloutState  # env states, observations, carries of the parallel envs
    key: jax.Array  # PRNG key of the next update
    update_step: jax.Array  # () int32: updates done


def setup(config: IPPOConfig) -> LearnerSetup:
    """The env, the self-play pairing (one network per seat) and the optimiser of `config`:
    built where a jitted update is traced (once per config) and by `init`."""
    env = make_env(config.task_id, config.shaping)
    network = MLPActorCritic(env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.hidden)
    pairing = Pairing(
        policies=(network,) * env.num_agents,
        learners=tuple(range(env.num_agents)),
        shaped_reward_coef=config.shaped_reward_coef,
    )
    return LearnerSetup(env, pairing, make_optimizer(config.ppo, config.num_updates))


def network(config: IPPOConfig) -> MLPActorCritic:
    """The architecture of every IPPO agent of `config` (every seat's policy)."""
    policy = setup(config).pairing.policies[0]
    assert isinstance(policy, MLPActorCritic)
    return policy


def init(key: jax.Array, config: IPPOConfig) -> IPPOState:
    """Fresh agents (one per seat) and freshly reset envs."""
    parts = setup(config)
    num_agents = parts.env.num_agents
    key_params, key_envs, key = jax.random.split(key, 3)
    keys = jax.random.split(key_params, num_agents)
    agent_params = [init_params(parts.pairing.policies[0], k) for k in keys]
    params = jax.tree.map(lambda *xs: jnp.stack(xs), *agent_params)
    return IPPOState(
        learners=LearnerState(params, jax.vmap(parts.optimizer.init)(params)),
        rollout=init_rollout(parts.env, parts.pairing, key_envs, config.num_envs),
        key=key,
        update_step=jnp.zeros((), jnp.int32),
    )


def update(state: IPPOState, config: IPPOConfig) -> tuple[IPPOState, Metrics]:
    """One IPPO update: a rollout of every env, then one PPO update per agent."""
    parts = setup(config)
    num_agents = parts.env.num_agents
    key, key_rollout, key_ppo = jax.random.split(state.key, 3)
    params = tuple(
        jax.tree.map(lambda x, i=i: x[i], state.learners.params) for i in range(num_agents)
    )
    coef = None
    if config.shaped_reward_anneal_steps is not None:
        done = state.update_step.astype(jnp.float32) * config.batch_size
        left = jnp.clip(1.0 - done / config.shaped_reward_anneal_steps, 0.0, 1.0)
        coef = config.shaped_reward_coef * left
    rollout_state, trajectory = rollout(
        parts.env,
        parts.pairing,
        params,
        state.rollout,
        key_rollout,
        config.rollout_length,
        shaped_reward_coef=coef,
    )
    # One PPO update per agent, unrolled: a vmap over agents makes every matmul a batched one,
    # slower on XLA's CPU backend than two plain ones.
    updated = [
        ppo_update(
            parts.pairing.policies[i],
            jax.tree.map(lambda x, i=i: x[i], state.learners),
            (make_stream(trajectory, i, config.ppo),),
            agent_key,
            config.ppo,
            parts.optimizer,
        )
        for i, agent_key in enumerate(jax.random.split(key_ppo, num_agents))
    ]
    learners, ppo_metrics = jax.tree.map(lambda *xs: jnp.stack(xs), *updated)
    step = state.update_step + 1
    metrics = {k: jnp.mean(v) for k, v in ppo_metrics.items()}
    metrics |= episode_stats(trajectory, seat=0)
    metrics["env_steps"] = step * config.batch_size
    if coef is not None:
        metrics["shaped_reward_coef"] = coef
    return IPPOState(learners, rollout_state, key, step), metrics


def learner_params(state: IPPOState) -> Any:
    """The agents' params (what checkpoints keep)."""
    return state.learners.params


def _setup(config: IPPOConfig) -> MethodSetup:
    return MethodSetup(config=config, env=make_env(config.task_id, config.shaping),
                       networks=network(config))  # fmt: skip


def _team(state: IPPOState, setup: MethodSetup, seed: int | None) -> Population:
    """Seed `seed`'s agents (one per seat) as a `Population` of the IPPO network."""
    return Population(setup.networks, seed_of(learner_params(state), seed))


def _agents(
    m: Method[Any, Any], state: IPPOState, setup: MethodSetup, seed: int, kept: bool
) -> list:
    """A policy file per agent of seed `seed`: `seed<s>-agent<a>`."""
    params = m.ego_params(state, seed)
    num_agents = jax.tree.leaves(params)[0].shape[0]
    return [
        (f"agent{a}", (setup.networks, jax.tree.map(lambda x, a=a: x[a], params)))
        for a in range(num_agents)
    ]


METHOD: Method[IPPOConfig, IPPOState] = Method(
    name="ippo",
    presets=presets.tables("ippo"),
    setup=_setup,
    init=lambda key, setup: init(key, setup.config),
    step=lambda state, setup, done: update_seeds(state, update, setup.config),
    population=_team,
    report=fixed_partner.REPORT,
    exhausted=fixed_partner.EXHAUSTED,
    ego=learner_params,
    schedule=UPDATES,
    checked=fixed_partner.learners,
    files=_agents,
    keeps=fixed_partner.keeps,
)
"""IPPO as a `Method`: one step `updates_per_call` PPO updates of every agent."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()
"""`train(key, config, num_seeds=1, on_iteration=None)`: a whole run for `num_seeds` seeds at
once (seed i uses `split(key, num_seeds)[i]`), `aht_bench.algorithms.api.Method`."""


SMOKE = (
    "total_timesteps=384",
    "num_envs=8",
    "rollout_length=16",
    "ppo.num_epochs=1",
    "ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates on LBF."""
