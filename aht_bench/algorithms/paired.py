"""PAIRED (Dennis et al. 2020) for ad hoc teamwork (paper App. "Baselines Overview") over the
shared PPO core: a teammate, its best response and the ego agent trained jointly, in lockstep.

PAIRED's three roles become: the adversary -> the teammate generator (`MLPActorCritic` with a
critic per partner type, as ROTATE's: head 0 = `sigma^{-i,BR}`, head 1 = `sigma^{-i,ego}`);
the antagonist -> the teammate's best response (`MLPActorCritic`, its own critic); the
protagonist -> the ego agent (`RecurrentEgo`, a GRU in place of the paper's S5).

Every lockstep update (one seed) collects an SP rollout (teammate x BR) and an XP rollout
(teammate x ego), both from p0 in envs that persist from update to update (and from
iteration to iteration), then runs one PPO update of each learner on that data:

| learner  | streams (data, weight w_t, sign, value head)                              |
|----------|---------------------------------------------------------------------------|
| teammate | (D_SP, 1, +1, BR head 0), (D_XP, 1, -1, ego head 1): per-trajectory regret |
| BR       | (D_SP, 1, +1, 0): standard PPO                                             |
| ego      | (D_XP, 1, +1, 0): standard PPO of the recurrent ego                        |

The teammate's streams are the paper's per-trajectory regret (Eq. traj_regret_obj, ROTATE's
`per_trajectory` variant with lambda = 0): "the teammate is optimized to maximize the
per-trajectory regret of the ego agent". There is no population buffer: "the ego agent
trains only against the most recently generated teammate", which in lockstep is the teammate
being trained, the one that collected this update's XP data.

Iterations: the run's updates are split into `iterations` equal chunks (the table's Num
Checkpoints, 10), each one jitted call (all the chunk's updates in one `lax.scan`, seeds
vmapped), after which the run loop (`aht_bench.runs.IterationLoop`) checkpoints. The state carries
all
three learners' params and Adam states, both rollouts' env states and the key, so nothing
restarts between iterations and a resumed run is bit-identical to an unstopped one; a learning
rate schedule (`anneal_lr`) runs over the whole run. After each iteration the teammate is
snapshotted: `population()` is these checkpoints of the teammate (saved as the run's
population file; never trained against), `ego_params()` the ego.

What the paper leaves open, and what is chosen here:

- Table paired_hyperparams gives one set of PPO hyperparameters; all three learners use it
  (`teammate_ppo` for the teammate and the BR, `ego_ppo` for the ego, equal in the `paper`
  preset). Its Num Seeds (3) is the number of training seeds: `aht-bench train paired
  --seeds 3`.
- Timesteps count both rollouts (SP and XP) of every update, the budget of App. "Training
  Compute" (360M on LBF). Updates per iteration are `total_timesteps // (iterations x 2 x
  num_envs x rollout_length)`, whole updates only (the paper's LBF run does 10 x 8789 updates
  of 4096 steps: 359,997,440 steps).
- Unit weights and no competence term in the teammate's regret (the paper's description is
  plain per-trajectory regret); the regret metric is the mean SP return minus the mean XP
  return of the iteration's last quarter of updates (PAIRED's original uses the antagonist's
  best return over a few episodes; the means are the estimate the teammate's loss uses).
- No critic reset or fresh Adam state for the ego: it trains continuously (no phases).
- Not in the table, as in ROTATE's presets: rollout length (128 on LBF, 400 = one episode on
  Overcooked), gamma 0.99, GAE lambda 0.95, value-loss weight 0.5, gradient clip 0.5, MLP
  64-64, GRU 64, shaped reward on. Seats: the ego and the BR in `ego_seat` (0), the teammate
  in the other.

Metrics per iteration ((num_seeds,) each, over the last quarter of its updates): `sp_return`,
`xp_return`, `regret` (= SP - XP), `ego_return` (= `xp_return`: the ego with its only
partner), the PPO diagnostics of the three learners (`teammate_*`, `best_response_*`,
`ego_*`), `iteration` and `env_steps` (cumulative).

    config = paired.preset("quick", "lbf")
    state = paired.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    state, metrics = paired.iterate(state, config)        # one iteration (chunk of updates)

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from aht_bench.algorithms.api import Method, TaskConfig
from aht_bench.algorithms.common import check_hidden, check_task_id, require
from aht_bench.algorithms.rotate import BR_HEAD, EGO_HEAD, Networks
from aht_bench.algorithms.rotate import REPORT as rotate_report
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population
from aht_bench.training import presets
from aht_bench.training.config import PPOConfig, normalise_shaping
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
from aht_bench.training.streams import LossTerm, loss_streams, phase_summary

__all__ = [
    "METHOD",
    "REPORT",
    "PRESETS",
    "PairedConfig",
    "PairedState",
    "best_response_loss_terms",
    "ego_loss_terms",
    "ego_params",
    "init",
    "init_seeds",
    "iterate",
    "networks",
    "population",
    "preset",
    "run",
    "step",
    "teammate_loss_terms",
    "train",
    "update",
]


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairedConfig(TaskConfig):
    """A PAIRED run (paper Table paired_hyperparams)."""

    task_id: str
    """Registered task id or alias of a two-player task."""
    total_timesteps: int
    """Joint env steps of the whole run, SP and XP rollouts counted (table: Timesteps)."""
    iterations: int
    """Chunks the run is split into; each ends with a teammate snapshot and a checkpoint
    (table: Num Checkpoints)."""
    num_envs: int
    """Parallel envs of each of the two rollouts (table: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two lockstep updates (not in the table)."""
    teammate_ppo: PPOConfig
    """PPO hyperparameters of the teammate and its best response (table: LR, Epochs, ...)."""
    ego_ppo: PPOConfig
    """PPO hyperparameters of the ego agent (the same table rows in the `paper` preset)."""
    teammate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the teammate's actor and critic MLPs."""
    best_response_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the best response's actor and critic MLPs."""
    ego_hidden: int = 64
    """GRU state size of the ego agent."""
    ego_seat: int = 0
    """The seat of the ego agent and of the best response; the teammate plays the other."""
    shaped_reward_coef: float = 1.0
    """Training reward is `base + shaped_reward_coef * shaped` for every learner."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients that replace the paper's for every learner
    (as `RunConfig.shaping`, e.g. (("counter_pickup", 0.0),)); () keeps the paper's."""

    def __post_init__(self) -> None:
        check_task_id(self.task_id)
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        check_hidden(self, "teammate_hidden", "best_response_hidden")
        require(self.iterations >= 1, "iterations", self.iterations, "use at least 1")
        require(self.num_envs >= 1, "num_envs", self.num_envs, "use at least 1")
        require(self.rollout_length >= 1, "rollout_length", self.rollout_length, "use >= 1")
        require(self.ego_hidden >= 1, "ego_hidden", self.ego_hidden, "use a GRU size >= 1")
        require(self.ego_seat in (0, 1), "ego_seat", self.ego_seat, "use seat 0 or 1")
        require(
            self.shaped_reward_coef >= 0,
            "shaped_reward_coef",
            self.shaped_reward_coef,
            "use a value >= 0",
        )
        require(
            self.total_timesteps >= self.iterations * self.batch_size,
            "total_timesteps",
            self.total_timesteps,
            f"each of the {self.iterations} iterations needs at least one update of 2 rollouts "
            f"x num_envs x rollout_length = {self.batch_size} timesteps; raise it to at least "
            f"{self.iterations * self.batch_size} or lower iterations",
        )
        transitions = self.num_envs * self.rollout_length
        require(
            transitions % self.teammate_ppo.num_minibatches == 0,
            "teammate_ppo.num_minibatches",
            self.teammate_ppo.num_minibatches,
            f"it must divide the {transitions} transitions (num_envs x rollout_length) of "
            "each stream",
        )
        require(
            self.num_envs % self.ego_ppo.num_minibatches == 0,
            "ego_ppo.num_minibatches",
            self.ego_ppo.num_minibatches,
            f"the recurrent ego's minibatches split the {self.num_envs} env sequences; "
            "it must divide num_envs",
        )

    @property
    def batch_size(self) -> int:
        """Joint env steps of one lockstep update: SP and XP rollouts."""
        return 2 * self.num_envs * self.rollout_length

    @property
    def updates_per_iteration(self) -> int:
        """Lockstep updates of one iteration (whole updates only)."""
        return self.total_timesteps // (self.iterations * self.batch_size)

    @property
    def num_updates(self) -> int:
        """Lockstep updates of the whole run (the span of an annealed learning rate)."""
        return self.iterations * self.updates_per_iteration

    @property
    def env_steps_per_iteration(self) -> int:
        """Joint env steps one iteration takes."""
        return self.updates_per_iteration * self.batch_size


# ---------------------------------------------------------------------------------- loss terms


def teammate_loss_terms(config: PairedConfig) -> tuple[LossTerm, ...]:
    """The teammate's streams: per-trajectory regret (Eq. traj_regret_obj), the SP return on
    the BR head minus the XP return on the ego head, unit weights."""
    return (
        LossTerm("sp", 1.0, False, 1.0, BR_HEAD),
        LossTerm("xp", 1.0, False, -1.0, EGO_HEAD),
    )


def best_response_loss_terms(config: PairedConfig) -> tuple[LossTerm, ...]:
    """The best response's stream: standard PPO on SP."""
    return (LossTerm("sp", 1.0, False, 1.0, 0),)


def ego_loss_terms(config: PairedConfig) -> tuple[LossTerm, ...]:
    """The ego's stream: standard PPO on XP (with the current teammate only: no buffer)."""
    return (LossTerm("xp", 1.0, False, 1.0, 0),)


# ------------------------------------------------------------------------------------ networks


@functools.lru_cache(maxsize=32)
def networks(config: PairedConfig) -> Networks:
    """The three architectures of a run."""
    env = make_env(config.task_id, config.shaping)
    if env.num_agents != 2:
        raise ValueError(
            f"task_id={config.task_id!r} has {env.num_agents} seats; PAIRED here is for "
            "two-player tasks (one ego, one teammate)"
        )
    return Networks(
        teammate=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=2, hidden=config.teammate_hidden
        ),
        best_response=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.best_response_hidden
        ),
        ego=RecurrentEgo(env.obs_dim, env.num_actions, hidden=config.ego_hidden),
    )


class _Pairings(NamedTuple):
    sp: Pairing  # roles (BR, teammate); learners (teammate, BR)
    xp: Pairing  # roles (ego, teammate); learners (teammate, ego)


@functools.lru_cache(maxsize=32)
def _pairings(config: PairedConfig) -> _Pairings:
    nets = networks(config)
    seats = (config.ego_seat, 1 - config.ego_seat)
    coef = config.shaped_reward_coef
    return _Pairings(
        sp=Pairing((nets.best_response, nets.teammate), (1, 0), seats, coef),
        xp=Pairing((nets.ego, nets.teammate), (1, 0), seats, coef),
    )


def _optimizers(
    config: PairedConfig,
) -> tuple[optax.GradientTransformation, optax.GradientTransformation]:
    """(teammate and BR, ego) optimisers; an annealed rate falls over the whole run."""
    return (
        make_optimizer(config.teammate_ppo, config.num_updates),
        make_optimizer(config.ego_ppo, config.num_updates),
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


def init(key: jax.Array, config: PairedConfig) -> PairedState:
    """A fresh run for one seed: three random learners, freshly reset envs."""
    nets, pairings = networks(config), _pairings(config)
    env = make_env(config.task_id, config.shaping)
    k_ego, k_tm, k_br, k_sp, k_xp, key = jax.random.split(key, 6)
    tm_opt, ego_opt = _optimizers(config)
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


def update(state: PairedState, config: PairedConfig) -> tuple[PairedState, dict[str, jax.Array]]:
    """One lockstep update of one seed: SP and XP rollouts, then one PPO update each of the
    teammate (per-trajectory regret), the BR (SP) and the ego (XP), all on data collected
    before any of them. Pure and jittable."""
    nets, pairings = networks(config), _pairings(config)
    env = make_env(config.task_id, config.shaping)
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
    tm_opt, ego_opt = _optimizers(config)
    teammate, tm_metrics = ppo_update(
        nets.teammate, state.teammate, tm_streams, k_tm, config.teammate_ppo, tm_opt
    )
    best_response, br_metrics = ppo_update(
        nets.best_response, state.best_response, br_streams, k_br, config.teammate_ppo, tm_opt
    )
    ego_learner, ego_metrics = ppo_update(
        nets.ego, state.ego, ego_streams, k_ego, config.ego_ppo, ego_opt
    )
    metrics = {f"teammate_{k}": v for k, v in tm_metrics.items()}
    metrics |= {f"best_response_{k}": v for k, v in br_metrics.items()}
    metrics |= {f"ego_{k}": v for k, v in ego_metrics.items()}
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


def _iteration(state: PairedState, config: PairedConfig) -> tuple[PairedState, dict[str, Any]]:
    """One iteration of one seed: `updates_per_iteration` lockstep updates, then the teammate
    snapshot; per-iteration summaries of the metrics."""
    state, metrics = jax.lax.scan(
        lambda s, _: update(s, config), state, None, length=config.updates_per_iteration
    )
    buffer = jax.tree.map(
        lambda slots, x: slots.at[state.iteration].set(x), state.buffer, state.teammate.params
    )
    summary = phase_summary(metrics)
    summary["regret"] = summary["sp_return"] - summary["xp_return"]
    summary["ego_return"] = summary["xp_return"]
    return state._replace(buffer=buffer, iteration=state.iteration + 1), summary


@functools.partial(jax.jit, static_argnames="config")
def _iteration_seeds(
    state: PairedState, config: PairedConfig
) -> tuple[PairedState, dict[str, jax.Array]]:
    return map_seeds(lambda s: _iteration(s, config), state)


def step(
    state: PairedState, config: PairedConfig, done: int
) -> tuple[PairedState, dict[str, jax.Array]]:
    """One iteration of every seed (leading seed axis) in one jitted call. Metrics
    ((num_seeds,)): module docstring."""
    return _iteration_seeds(state, config)


def population(state: PairedState, config: PairedConfig, seed: int | None = 0) -> Population:
    """The teammate after each iteration done so far, of one seed, as a `Population` (host
    arrays), oldest first. `seed=None` for an unbatched state."""
    host = jax.device_get((state.buffer, state.iteration))
    if seed is not None:
        host = jax.tree.map(lambda x: x[seed], host)
    buffer, count = host[0], int(host[1])
    if count == 0:
        raise ValueError("no iteration has run yet: run at least one first")
    members = jax.tree.map(lambda x: np.asarray(x[:count]), buffer)
    return Population(networks(config).teammate, members)


def ego_of(state: PairedState) -> Params:
    """Where the ego's params are in a PAIRED state (`Method.ego`)."""
    return state.ego.params


# How `aht-bench train paired` shows a run (one step = one iteration, a chunk of updates): the
# regret curves of ROTATE, whose SP/XP/regret metrics PAIRED reports under the same names.
REPORT = rotate_report


# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table paired_hyperparams, per task (bold values where the table searched):
# (timesteps, lr, minibatches, ent-coef, eps-clip). Every task: Num Seeds 3 (`--seeds 3`),
# Num Checkpoints 10, Num Envs 16, Epochs 15, Anneal LR false.
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (3.6e8, 1e-4, 4, 0.03, 0.2),
        "overcooked-cramped_room-v1": (2.4e8, 5e-4, 8, 0.005, 0.05),
        "overcooked-asymm_advantages-v1": (2.4e8, 1e-5, 8, 0.05, 0.1),
        "overcooked-counter_circuit-v1": (4.4e8, 5e-5, 8, 0.01, 0.05),
        "overcooked-coord_ring-v1": (4.4e8, 1e-4, 8, 0.005, 0.05),
        "overcooked-forced_coord-v1": (4.4e8, 5e-5, 8, 0.1, 0.3),
    }
)


def _paper(task_id: str) -> PairedConfig:
    timesteps, lr, minibatches, ent, clip = _PAPER_ROWS[task_id]
    # one set of PPO hyperparameters for all three learners (module docstring)
    ppo = PPOConfig(
        learning_rate=lr,
        anneal_lr=False,
        num_epochs=15,
        num_minibatches=minibatches,
        clip_eps=clip,
        ent_coef=ent,
    )
    return PairedConfig(
        task_id=task_id,
        total_timesteps=int(timesteps),
        iterations=10,
        num_envs=16,
        rollout_length=128 if task_id.startswith("lbf") else 400,
        teammate_ppo=ppo,
        ego_ppo=ppo,
    )


# quick: two CPU cores, one seed: 4-5 CPU-minutes a task, measured (under load) on LBF and
# cramped_room (docs/baselines/paired.md). ROTATE's quick PPO settings; 4 iterations of
# lockstep updates of 2 x 64 envs x 128 steps: 64 updates an iteration on LBF (4.2M steps in
# all), 32 on the Overcooked layouts, whose steps cost about three times as much (2.1M).
_QUICK_PPO = presets.QUICK_PPO
_QUICK_EGO_PPO = presets.QUICK_EGO_PPO


def _quick(task_id: str) -> PairedConfig:
    updates_per_iteration = 64 if task_id == "lbf-v1" else 32
    return PairedConfig(
        task_id=task_id,
        total_timesteps=4 * updates_per_iteration * 2 * 64 * 128,
        iterations=4,
        num_envs=64,
        rollout_length=128,
        teammate_ppo=_QUICK_PPO,
        ego_ppo=_QUICK_EGO_PPO,
        shaping=presets.quick_method_shaping(task_id),
    )


PRESETS: dict[str, dict[str, PairedConfig]] = {
    "paper": {t: _paper(t) for t in PAPER_TASKS},
    "quick": {t: _quick(t) for t in PAPER_TASKS},
}
"""preset name -> task id -> config."""


METHOD: Method[PairedConfig, PairedState] = Method(
    name="PAIRED",
    presets=PRESETS,
    init=init,
    step=step,
    networks=networks,
    population=population,
    report=REPORT,
    exhausted=("raise iterations= (and total_timesteps=) in the config for a longer run"),
    ego=ego_of,
)
"""PAIRED as a `Method`: what `aht-bench train paired` drives."""
init_seeds = METHOD.init_seeds
iterate = METHOD.iterate
run = METHOD.run
train = METHOD.train
ego_params = METHOD.ego_params
preset = METHOD.preset
