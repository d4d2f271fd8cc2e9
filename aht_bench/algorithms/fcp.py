"""Fictitious Co-Play (FCP; paper App. "Baselines Overview", Table fcp-tg-hyperparams) over the
shared PPO core: a two-stage method.

1. **Teammate generation.** `num_ippo_seeds` independent IPPO runs (`aht_bench.algorithms.ippo`,
   its own `init` and `update`: nothing of IPPO is re-implemented here), each from its own seed,
   each `teammate_timesteps` joint env steps long (tables: Timesteps Per Agent). Each run keeps
   `num_checkpoints` snapshots evenly spaced over its PPO updates, from the initial params
   (update 0) to the final ones (`checkpoint_updates`: update `i * U // (C - 1)` for
   `i = 0..C-1`, U updates, C checkpoints), as FCP keeps "initial, intermediate, final"
   partners of varying skill. The pool member of a snapshot is the agent of the *teammate's*
   seat (`1 - ego_seat`); the other seat's agent is dropped. So the pool has `num_ippo_seeds x
   num_checkpoints` members (paper: 23 x 5 = 115 on LBF, CR, AA and 22 x 5 = 110 on CC, CoR,
   FC: the "~110 agents per task" of App. "Training Compute"), each playing the seat it was
   trained in. Members are stored team by team, oldest checkpoint first.
2. **Ego training** (`two_stage`): the recurrent PPO ego agent (Table ppo_ego_tm_hyperparams,
   `presets.get("ego", ...)`) trains in `ego_seat` against a teammate drawn uniformly from the
   whole pool at every episode start.

Run loop (`aht_bench.runs.IterationLoop`): iterations `1..generation_iterations` each train
`teams_per_iteration` whole IPPO runs in one jitted call (all PPO updates in one `lax.scan`,
snapshots recorded inside it); the last of them hands the pool to the ego (uniform weights) and
resets the ego's envs; iterations after that each run one chunk of the ego's PPO updates
(`two_stage.chunk_sizes`). Every iteration is checkpointed, and a run stopped after any of
them resumes bit-identically: an IPPO run lives inside one iteration, its seed key is fixed at
`init` (`FCPBuffer.team_keys`), and the ego's whole learner state is in the run state from the
start.

Metrics per iteration: generation iterations report `sp_return` (the IPPO team's base return
in self-play over the last quarter of its updates; mean over the iteration's teams) and the
teams' PPO diagnostics (`ippo_*`); ego iterations report `ego_return` (the ego's base return
with pool members over the last quarter of the chunk) and `ego_*`. Every iteration reports
`population_size`, `iteration` and `env_steps` (cumulative: every IPPO run's joint env steps,
then the ego's).

What the paper leaves open, and what is chosen here:

- Snapshot spacing: evenly spaced over updates, the first the untrained initial params (the
  table gives only Num Checkpoints = 5). Pool members: the teammate seat's agent only (the
  paper's pool sizes count one agent per snapshot).
- "Timesteps Per Agent" is read as the joint env steps of one IPPO run (each agent of the team
  acts at every joint step).
- IPPO's PPO settings not in the table (rollout length 128 on LBF / one 400-step episode on
  Overcooked, gamma, GAE lambda, value weight, gradient clip, MLP 64-64, shaped reward) are
  those of `presets` for IPPO; the ego stage is `presets.get("ego", "paper", task)` exactly.
- The ego stage is split into `ego_iterations` chunks for checkpoints and curves (paper preset:
  about 2M env steps each, the granularity of ROTATE's ego updates); chunking changes nothing
  in the ego's training.
- FCP is not held to the shared env-step budget of the other methods (App. "Training
  Compute"); neither is it here.

    config = fcp.preset("quick", "lbf")
    state = fcp.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    for _ in range(config.iterations):
        state, metrics = fcp.iterate(state, config)
    save_population("pool.safetensors", fcp.population(state, config, seed=0))

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

from aht_bench.algorithms import ego, ippo, two_stage
from aht_bench.algorithms.api import Method, TaskConfig, buffer_population
from aht_bench.algorithms.common import (
    check_hidden,
    check_task_id,
    require,
)
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.algorithms.ippo import IPPOState
from aht_bench.algorithms.rotate import phase_summary
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population
from aht_bench.training import presets
from aht_bench.training.config import EgoConfig, IPPOConfig, PPOConfig, normalise_shaping
from aht_bench.training.driver import map_seeds
from aht_bench.training.report import IterationReport
from aht_bench.training.rollout import make_env

# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class FCPConfig(TaskConfig):
    """An FCP run (paper Table fcp-tg-hyperparams for stage 1, ppo_ego_tm_hyperparams for the
    ego)."""

    task_id: str
    """Registered task id or alias of a two-player task."""
    num_ippo_seeds: int
    """IPPO runs (teams) of the teammate-generation stage, one seed each (tables: Num Seeds)."""
    num_checkpoints: int
    """Snapshots kept per IPPO run, evenly spaced from update 0 to the last (tables: Num
    Checkpoints)."""
    teammate_timesteps: int
    """Joint env steps of one IPPO run (tables: Timesteps Per Agent)."""
    teammate_num_envs: int
    """Parallel envs of each IPPO run (tables: Num Envs)."""
    teammate_rollout_length: int
    """Env steps per env between two IPPO updates (not in the paper's tables)."""
    teammate_ppo: PPOConfig
    """PPO hyperparameters of the IPPO agents (tables: LR, Epochs, Minibatches, Ent-Coef,
    Eps-Clip, Anneal LR)."""
    ego_timesteps: int
    """Joint env steps of the whole ego stage (ego table: Total Timesteps)."""
    ego_num_envs: int
    """Parallel envs of the ego stage (ego table: Num Envs)."""
    ego_rollout_length: int
    """Env steps per env between two ego updates (not in the paper's tables)."""
    ego_ppo: PPOConfig
    """PPO hyperparameters of the ego agent (ego table)."""
    ego_iterations: int
    """Run iterations (checkpoints, curve points) the ego stage is split into."""
    teams_per_iteration: int = 1
    """IPPO runs trained per generation iteration (vmapped); must divide `num_ippo_seeds`."""
    teammate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of each IPPO agent's actor and critic MLPs."""
    ego_hidden: int = 64
    """GRU state size of the ego agent."""
    ego_seat: int = 0
    """The seat of the ego agent; pool members are the IPPO agents of the other seat."""
    shaped_reward_coef: float = 1.0
    """Training reward is `base + shaped_reward_coef * shaped` for IPPO and the ego."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients that replace the paper's for every learner
    (as `RunConfig.shaping`, e.g. (("counter_pickup", 0.0),)); () keeps the paper's."""

    def __post_init__(self) -> None:
        check_task_id(self.task_id)
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        check_hidden(self, "teammate_hidden")
        for name in (
            "num_ippo_seeds",
            "num_checkpoints",
            "teammate_num_envs",
            "teammate_rollout_length",
            "ego_num_envs",
            "ego_rollout_length",
            "ego_hidden",
            "teams_per_iteration",
            "ego_iterations",
        ):
            value = getattr(self, name)
            require(value >= 1, name, value, "use at least 1")
        require(self.ego_seat in (0, 1), "ego_seat", self.ego_seat, "use seat 0 or 1")
        require(
            self.shaped_reward_coef >= 0,
            "shaped_reward_coef",
            self.shaped_reward_coef,
            "use a value >= 0",
        )
        require(
            self.num_ippo_seeds % self.teams_per_iteration == 0,
            "teams_per_iteration",
            self.teams_per_iteration,
            f"it must divide num_ippo_seeds = {self.num_ippo_seeds}",
        )
        batch = self.teammate_num_envs * self.teammate_rollout_length
        require(
            self.teammate_timesteps >= batch,
            "teammate_timesteps",
            self.teammate_timesteps,
            f"one IPPO update takes teammate_num_envs x teammate_rollout_length = {batch} "
            "timesteps",
        )
        require(
            batch % self.teammate_ppo.num_minibatches == 0,
            "teammate_ppo.num_minibatches",
            self.teammate_ppo.num_minibatches,
            f"it must divide the {batch} transitions (teammate_num_envs x "
            "teammate_rollout_length) of an IPPO update",
        )
        updates = self.teammate_timesteps // batch
        require(
            self.num_checkpoints <= updates + 1,
            "num_checkpoints",
            self.num_checkpoints,
            f"an IPPO run has {updates} updates, so at most {updates + 1} distinct snapshots "
            "(update 0 included); raise teammate_timesteps or keep fewer",
        )
        ego_batch = self.ego_num_envs * self.ego_rollout_length
        require(
            self.ego_timesteps >= ego_batch,
            "ego_timesteps",
            self.ego_timesteps,
            f"one ego update takes ego_num_envs x ego_rollout_length = {ego_batch} timesteps",
        )
        require(
            self.ego_num_envs % self.ego_ppo.num_minibatches == 0,
            "ego_ppo.num_minibatches",
            self.ego_ppo.num_minibatches,
            f"the recurrent ego's minibatches split the {self.ego_num_envs} env sequences; "
            "it must divide ego_num_envs",
        )
        ego_updates = self.ego_timesteps // ego_batch
        require(
            self.ego_iterations <= ego_updates,
            "ego_iterations",
            self.ego_iterations,
            f"use 1..{ego_updates} (the ego stage has {ego_updates} PPO updates)",
        )

    @property
    def ippo_config(self) -> IPPOConfig:
        """One IPPO run of the teammate-generation stage (what `ippo.init`/`ippo.update` take)."""
        return IPPOConfig(
            task_id=self.task_id,
            total_timesteps=self.teammate_timesteps,
            num_envs=self.teammate_num_envs,
            rollout_length=self.teammate_rollout_length,
            ppo=self.teammate_ppo,
            shaped_reward_coef=self.shaped_reward_coef,
            shaping=self.shaping,
            hidden=self.teammate_hidden,
        )

    @property
    def ego_config(self) -> EgoConfig:
        """The whole ego stage (what `two_stage`/`ego` take)."""
        return EgoConfig(
            task_id=self.task_id,
            total_timesteps=self.ego_timesteps,
            num_envs=self.ego_num_envs,
            rollout_length=self.ego_rollout_length,
            ppo=self.ego_ppo,
            shaped_reward_coef=self.shaped_reward_coef,
            shaping=self.shaping,
            hidden=self.ego_hidden,
            learner_seat=self.ego_seat,
        )

    @property
    def checkpoint_updates(self) -> tuple[int, ...]:
        """The IPPO update numbers whose params join the pool (0: the initial params)."""
        updates = self.ippo_config.num_updates
        if self.num_checkpoints == 1:
            return (updates,)
        last = self.num_checkpoints - 1
        return tuple(i * updates // last for i in range(self.num_checkpoints))

    @property
    def pool_size(self) -> int:
        """Members of the final pool: `num_ippo_seeds * num_checkpoints`."""
        return self.num_ippo_seeds * self.num_checkpoints

    @property
    def generation_iterations(self) -> int:
        """Run iterations of the teammate-generation stage."""
        return self.num_ippo_seeds // self.teams_per_iteration

    @property
    def iterations(self) -> int:
        """Run iterations in all: generation, then ego."""
        return self.generation_iterations + self.ego_iterations

    @property
    def env_steps_per_team(self) -> int:
        """Joint env steps one IPPO run takes (whole updates only)."""
        ippo_config = self.ippo_config
        return ippo_config.num_updates * ippo_config.batch_size

    @property
    def env_steps_per_iteration(self) -> int:
        """Mean joint env steps per run iteration (run.json; iterations differ in size,
        `env_steps_after` gives the exact totals)."""
        return self.env_steps_after(self.iterations) // self.iterations

    def env_steps_after(self, done: int) -> int:
        """Cumulative joint env steps per seed after `done` run iterations."""
        generation = min(done, self.generation_iterations)
        steps = generation * self.teams_per_iteration * self.env_steps_per_team
        ego_done = max(0, done - self.generation_iterations)
        if ego_done:
            chunks = two_stage.env_steps_of_chunks(self.ego_config, self.ego_iterations)
            steps += int(chunks[ego_done])
        return steps


# ------------------------------------------------------------------------------------ networks


class Networks(NamedTuple):
    teammate: MLPActorCritic  # every IPPO agent and pool member (one value head)
    ego: RecurrentEgo


@functools.lru_cache(maxsize=32)
def networks(config: FCPConfig) -> Networks:
    """The architectures of a run: IPPO's agents (the pool's members) and the ego."""
    env = make_env(config.task_id, config.shaping)
    if env.num_agents != 2:
        raise ValueError(
            f"task_id={config.task_id!r} has {env.num_agents} seats; FCP here is for "
            "two-player tasks (one ego, one teammate)"
        )
    return Networks(teammate=ippo.network(config.ippo_config), ego=ego.network(config.ego_config))


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


@functools.lru_cache(maxsize=32)
def _member_shapes(config: FCPConfig) -> Any:
    return jax.eval_shape(networks(config).teammate.init, jax.random.PRNGKey(0))


def init(key: jax.Array, config: FCPConfig) -> FCPState:
    """A fresh run for one seed: a random ego, an empty pool and the IPPO runs' seed keys."""
    nets = networks(config)
    key_ego, key_teams, key = jax.random.split(key, 3)
    slots = jax.tree.map(
        lambda x: jnp.zeros((config.pool_size,) + x.shape, x.dtype), _member_shapes(config)
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


def train_team(team: IPPOState, config: FCPConfig) -> tuple[Params, dict[str, jax.Array]]:
    """One whole IPPO run from `team` (`ippo.init`'s state), `ippo.update` scanned over all its
    updates. Returns the teammate seat's params at each of `config.checkpoint_updates` (leaves
    (num_checkpoints, ...)) and IPPO's per-update metrics (leaves (U,))."""
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


def team_states(state: FCPState, config: FCPConfig, teams: range) -> IPPOState:
    """Fresh IPPO states (`ippo.init` with each run's seed key) of `teams` for every seed:
    leaves (num_seeds, len(teams), ...). Built seed by seed outside jit, as `ippo.train` does."""
    keys = np.asarray(jax.device_get(state.buffer.team_keys))
    per_seed = [
        jax.tree.map(
            lambda *xs: jnp.stack(xs), *[ippo.init(keys[s, t], config.ippo_config) for t in teams]
        )
        for s in range(keys.shape[0])
    ]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *per_seed)


@functools.partial(jax.jit, static_argnames="config")
def _generation_seeds(
    state: FCPState, teams: IPPOState, config: FCPConfig
) -> tuple[FCPState, dict[str, jax.Array]]:
    """Train the IPPO runs `teams` (leaves (num_seeds, k, ...)) of every seed; their snapshots
    join the pool."""

    def _one_seed(state: FCPState, teams: IPPOState):
        kept, metrics = map_seeds(lambda t: train_team(t, config), teams)  # leaves (k, C, ...)
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


@functools.partial(jax.jit, static_argnames="config")
def _hand_over_seeds(state: FCPState, config: FCPConfig) -> FCPState:
    """The full pool becomes the ego's (uniform weights); the ego's envs are reset."""

    def _one_seed(state: FCPState) -> FCPState:
        key, key_reset = jax.random.split(state.key)
        members = Population(networks(config).teammate, state.buffer.teammates)
        ego_state = two_stage.with_population(
            state.ego, members, pool_weights(config), config.ego_config, key_reset
        )
        return state._replace(ego=ego_state, key=key)

    return map_seeds(_one_seed, state)


# ------------------------------------------------------------------------------ one iteration


def step(state: FCPState, config: FCPConfig, done: int) -> tuple[FCPState, dict[str, Any]]:
    """Iteration `done + 1` of every seed (leading seed axis): the next `teams_per_iteration`
    IPPO runs while the pool is being built (the last of them hands the pool to the ego), one
    chunk of the ego's PPO updates after that. Metrics: see the module docstring."""
    if done < config.generation_iterations:
        k = config.teams_per_iteration
        teams = team_states(state, config, range(done * k, (done + 1) * k))
        state, metrics = _generation_seeds(state, teams, config)
        if done + 1 == config.generation_iterations:
            state = _hand_over_seeds(state, config)
    else:
        sizes = two_stage.chunk_sizes(config.ego_config, config.ego_iterations)
        ego_state, metrics = two_stage.ego_chunk_seeds(
            state.ego, config.ego_config, sizes[done - config.generation_iterations]
        )
        state = state._replace(ego=ego_state)
    return state._replace(iteration=state.iteration + 1), metrics


def population(state: FCPState, config: FCPConfig, seed: int | None = 0) -> Population:
    """The pool of one seed as a `Population` (host arrays; team by team, each team's snapshots
    oldest first), ready for `aht_bench.policies.io.save_population`. `seed=None` for an
    unbatched state."""
    return buffer_population(state.buffer, "teammates", networks(config).teammate, seed, "pool")


REPORT = IterationReport(
    generation_curves=(("sp_return", "SP return of each IPPO team (last quarter)", "C0"),),
    progress_metrics=(("sp", "sp_return"), ("ego", "ego_return")),
    diverged_fix="Lower teammate_ppo.learning_rate or ego_ppo.learning_rate",
)
"""How `aht_bench.runs.train` drives FCP (`aht-bench train fcp`)."""


# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table fcp-tg-hyperparams, per task (columns LBF, CR, AA, CC = counter_circuit,
# CoR = coord_ring, FC): (timesteps per agent, num seeds, num checkpoints, num envs, lr, epochs,
# minibatches, ent-coef, eps-clip, anneal lr); the selected (bold) values of the search grid
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (2e6, 23, 5, 8, 1e-5, 15, 4, 0.005, 0.5, True),
        "overcooked-cramped_room-v1": (2e6, 23, 5, 8, 1e-4, 15, 16, 0.01, 0.2, True),
        "overcooked-asymm_advantages-v1": (2e6, 23, 5, 8, 1e-5, 15, 16, 0.1, 0.2, True),
        "overcooked-counter_circuit-v1": (4e6, 22, 5, 8, 1e-3, 15, 16, 0.03, 0.05, True),
        "overcooked-coord_ring-v1": (4e6, 22, 5, 8, 1e-3, 15, 16, 0.01, 0.3, True),
        "overcooked-forced_coord-v1": (4e6, 22, 5, 8, 5e-4, 15, 16, 0.005, 0.2, True),
    }
)
# Not in the table (ours): the ego stage in chunks of about 2M env steps (30 of the 6e7 ego
# steps on LBF, CR, AA; 60 of 1.2e8 on CC, CoR, FC); IPPO's rollout length, network and the
# PPO settings no table gives are the IPPO preset's (see `aht_bench.training.presets`).
_PAPER_EGO_CHUNK_STEPS = 2_000_000


def _paper(task_id: str) -> FCPConfig:
    steps, seeds, checkpoints, envs, lr, epochs, minibatches, ent, clip, anneal = _PAPER_ROWS[
        task_id
    ]
    ippo_preset = presets.get("ippo", "paper", task_id)
    ego_preset = presets.get("ego", "paper", task_id)
    assert isinstance(ippo_preset, IPPOConfig) and isinstance(ego_preset, EgoConfig)
    return FCPConfig(
        task_id=task_id,
        num_ippo_seeds=seeds,
        num_checkpoints=checkpoints,
        teammate_timesteps=int(steps),
        teammate_num_envs=envs,
        teammate_rollout_length=ippo_preset.rollout_length,
        teammate_ppo=dataclasses.replace(
            ippo_preset.ppo,
            learning_rate=lr,
            anneal_lr=anneal,
            num_epochs=epochs,
            num_minibatches=minibatches,
            clip_eps=clip,
            ent_coef=ent,
        ),
        teammate_hidden=ippo_preset.hidden,
        ego_timesteps=ego_preset.total_timesteps,
        ego_num_envs=ego_preset.num_envs,
        ego_rollout_length=ego_preset.rollout_length,
        ego_ppo=ego_preset.ppo,
        ego_hidden=ego_preset.hidden,
        ego_iterations=ego_preset.total_timesteps // _PAPER_EGO_CHUNK_STEPS,
        shaped_reward_coef=ippo_preset.shaped_reward_coef,
    )


# quick: two CPU cores, a few minutes per task; docs/baselines/fcp.md gives the measured times
# and returns. IPPO and the ego use the quick presets' PPO settings (64 envs x 128 steps,
# 4 epochs x 4 minibatches, lr 1e-3 annealed); the budgets are ours.
# task -> (IPPO runs, joint env steps per IPPO run, ego env steps, ego iterations)
_QUICK_BUDGET = presets.with_v2(
    {
        "lbf-v1": (4, 1_000_000, 3_000_000, 4),
        "overcooked-cramped_room-v1": (3, 800_000, 1_600_000, 4),
        "overcooked-asymm_advantages-v1": (3, 1_000_000, 2_000_000, 4),
        "overcooked-counter_circuit-v1": (3, 2_000_000, 3_000_000, 4),
        "overcooked-coord_ring-v1": (3, 2_000_000, 3_000_000, 4),
        "overcooked-forced_coord-v1": (3, 2_000_000, 3_000_000, 4),
    }
)


def _quick(task_id: str) -> FCPConfig:
    teams, team_steps, ego_steps, ego_iterations = _QUICK_BUDGET[task_id]
    ippo_quick = presets.get("ippo", "quick", task_id)
    ego_quick = presets.get("ego", "quick", task_id)
    return FCPConfig(
        task_id=task_id,
        num_ippo_seeds=teams,
        num_checkpoints=5,
        teammate_timesteps=team_steps,
        teammate_num_envs=ippo_quick.num_envs,
        teammate_rollout_length=ippo_quick.rollout_length,
        teammate_ppo=ippo_quick.ppo,
        ego_timesteps=ego_steps,
        ego_num_envs=ego_quick.num_envs,
        ego_rollout_length=ego_quick.rollout_length,
        ego_ppo=ego_quick.ppo,
        ego_iterations=ego_iterations,
        shaping=presets.quick_method_shaping(task_id),
    )


PRESETS: dict[str, dict[str, FCPConfig]] = {
    "paper": {t: _paper(t) for t in PAPER_TASKS},
    "quick": {t: _quick(t) for t in PAPER_TASKS},
}
"""preset name -> task id -> config."""


METHOD: Method[FCPConfig, FCPState] = Method(
    name="FCP",
    presets=PRESETS,
    init=init,
    step=step,
    networks=networks,
    population=population,
    report=REPORT,
    exhausted=("raise ego_iterations or ego_timesteps in a new run to train longer"),
    ego=two_stage.ego_of,
)
"""FCP as a `Method`: what `aht-bench train fcp` drives."""
init_seeds = METHOD.init_seeds
iterate = METHOD.iterate
run = METHOD.run
train = METHOD.train
ego_params = METHOD.ego_params
preset = METHOD.preset
