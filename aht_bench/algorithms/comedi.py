"""CoMeDi (Sarkar et al. 2023; paper App. "Baselines Overview", "Relationship To CoMeDi and
Mixed Play", Table comedi-tg-hyperparams) over the shared PPO core: a two-stage method.

**Stage 1, teammate generation** trains `population_size` teammates one at a time, one per
iteration of the run loop. Teammate n (`MLPActorCritic`, seat 1) trains together with its own
best response (`MLPActorCritic`, seat 0, the "self-play" partner as in ROTATE's framing) and
maximises (paper Eq. mp_regret_obj with CoMeDi's weights alpha and beta)

    J_SP(pi^n, BR) - alpha J_XP(pi^n, pi^comp) + beta J_MP(pi^n, BR)

Every PPO update collects four rollouts of `num_envs` x `rollout_length` steps:

- SP: teammate x BR from p0;
- XP: teammate x the earlier teammates from p0, the envs split among them (env e plays earlier
  teammate `e mod (n - 1)`, `EarlierTeammates`). Each earlier teammate's compatibility, the
  paper's E_{s0~p0}[V(s0 | pi^n, pi^j)], is estimated from its envs as the teammate's mean
  training reward per step in this rollout, and pi^comp is the argmax (ties: the earliest).
  The paper's complexity section ("evaluation rollouts of the currently trained agent against
  all previously generated teammates at each RL update step") is met at the cost of one
  rollout: the XP stream of the loss is this same rollout masked to pi^comp's envs. Splitting
  the envs rather than running one rollout per earlier teammate keeps the cost of an update
  flat in the population size; each estimate then rests on `num_envs / (n - 1)` envs (5 or 6
  with the paper's 48 envs and 9 earlier teammates);
- mixed: teammate x a partner that plays pi^comp's or the BR's action with probability 1/2
  each step (`MixedPartner`, Eq. mixed_play_start); only its visited states are kept (p_MSTART);
- MP: teammate x BR from start states drawn uniformly from the mixed rollout's states
  (Eq. mixed_play_data, `StoredStates`).

The teammate's loss is three streams (`teammate_loss_terms`, `training.streams.LossTerm`,
`ppo_update`), the entropy term once over all three:

| data | weight | sign | teammate value head |
|------|--------|------|---------------------|
| SP   | 1      | +1   | 0 (with its BR)     |
| XP, pi^comp's envs only | alpha | -1 | 1 + comp (with earlier teammate comp) |
| MP   | beta   | +1   | 0 (with its BR)     |

The BR trains on SP + MP (unit weights, its own critic). The paper's CoMeDi teammates use "a
critic that conditions on the agent ID of a candidate partner"; here that is one value head per
earlier teammate (`population_size` heads: head 0 for the BR, head 1 + j for teammate j), the
same parameter sharing over a shared torso. The first teammate has no earlier one: its
iteration trains SP only (teammate and BR on SP, plain self-play), with the same number of PPO
updates as the others and a quarter of their env steps.

**Stage 2, the ego** (`two_stage`, Table ppo_ego_tm_hyperparams): the recurrent PPO ego (seat 0)
trains against the population, a member drawn uniformly per episode, in `ego_iterations`
chunks, each one iteration of the run loop (checkpointed; exact resume).

Open in the paper and chosen here:
- Seats: the teammate plays seat 1 (as in ROTATE); its BR, the earlier teammates (in XP) and the
  mixed partner play seat 0; the ego plays seat 0 against the teammates in the seat they were
  trained in. An earlier teammate in XP thus plays the seat it was not trained in (observations
  are agent-centric in LBF, Overcooked and the matrix games).
- pi^comp is re-chosen at every update, from the rewards (training reward, shaping included) of
  that update's XP rollout; "Timesteps Per Iteration" counts all four rollouts, so the table's
  3.3e7 (LBF) per teammate is 3.3e7 // (4 x 48 x 128) = 1342 updates.
- The table's totals (10 x 3.3e7 + 6e7 = 3.9e8 on LBF) exceed the 3.6e8 budget of App.
  "Training Compute"; the table is followed.
- The rollout length (128 on LBF, 400 on Overcooked), networks (MLP 64-64, GRU 64), gamma, GAE
  lambda and the shaped reward follow `aht_bench.training.presets`; the paper's ego is S5, ours a
  GRU (`RecurrentEgo`). The paper preset's ego stage runs in 10 checkpointed chunks.

    config = comedi.preset("quick", "lbf")
    result = comedi.train(jax.random.PRNGKey(0), config, num_seeds=1)
    result.metrics["sp_return"]          # (num_seeds, iterations); NaN in the ego iterations
    save_population("pop.safetensors", comedi.population(result.state, config, seed=0))

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from aht_bench.algorithms import ego as ego_module
from aht_bench.algorithms import two_stage
from aht_bench.algorithms.api import Method, TaskConfig, buffer_population, fresh_params
from aht_bench.algorithms.common import (
    check_hidden,
    check_task_id,
    require,
)
from aht_bench.algorithms.fixed_partner import FixedPartnerState
from aht_bench.policies.core import Carry, Extras, Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population
from aht_bench.training import presets
from aht_bench.training.buffer import TeammateBuffer, empty_buffer, insert
from aht_bench.training.config import EgoConfig, PPOConfig, normalise_shaping
from aht_bench.training.driver import map_seeds
from aht_bench.training.partners import MixedPartner
from aht_bench.training.ppo import LearnerState, Stream, make_optimizer, ppo_update
from aht_bench.training.report import IterationReport
from aht_bench.training.rollout import (
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    make_env,
    reset_rollout,
    rollout,
)
from aht_bench.training.streams import LossTerm, branch_rollout, loss_streams, phase_summary

TEAMMATE_SEAT = 1
"""The seat of the teammate being trained (and of every teammate in the population)."""
PARTNER_SEAT = 0
"""The seat of its partners: its BR, the earlier teammates, the mixed partner, the ego."""
BR_HEAD = 0
"""The teammate's value head for returns with its best response (SP, MP)."""
XP_HEAD = 1
"""The teammate's value head for returns with earlier teammate j is `XP_HEAD + j`."""
ROLLOUTS_PER_UPDATE = 4
"""SP, XP, mixed and MP."""


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class CoMeDiConfig(TaskConfig):
    """A CoMeDi run (Table comedi-tg-hyperparams; the ego stage Table ppo_ego_tm_hyperparams)."""

    task_id: str
    """Registered task id or alias of a two-player task."""
    population_size: int
    """Teammates generated, one per generation iteration (table: Population Size)."""
    teammate_timesteps: int
    """Joint env steps of one teammate's training, all four rollouts counted (table:
    Timesteps Per Iteration); the first teammate runs as many updates on SP alone."""
    num_envs: int
    """Parallel envs of every teammate-generation rollout (table: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two PPO updates (both stages; not in the tables)."""
    teammate_ppo: PPOConfig
    """PPO hyperparameters of the teammates and their best responses (table: LR ... Anneal)."""
    xp_coef: float
    """alpha: weight of the XP return with pi^comp, minimised (table: alpha)."""
    mp_coef: float
    """beta: weight of the mixed-play return, maximised (table: beta)."""
    ego_timesteps: int
    """Joint env steps of the whole ego stage (ego table: Total Timesteps)."""
    ego_num_envs: int
    """Parallel envs of the ego stage (ego table: Num Envs)."""
    ego_ppo: PPOConfig
    """PPO hyperparameters of the ego agent (ego table: LR ... Anneal LR)."""
    ego_iterations: int
    """Run-loop iterations (checkpoints) the ego stage is split into."""
    teammate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the teammates' actor and critic MLPs."""
    best_response_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the best responses' actor and critic MLPs."""
    ego_hidden: int = 64
    """GRU state size of the ego agent."""
    shaped_reward_coef: float = 1.0
    """Training reward is `base + shaped_reward_coef * shaped` for every learner."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients that replace the paper's for every learner
    (as `RunConfig.shaping`, e.g. (("counter_pickup", 0.0),)); () keeps the paper's."""

    def __post_init__(self) -> None:
        check_task_id(self.task_id)
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        check_hidden(self, "teammate_hidden", "best_response_hidden")
        require(self.population_size >= 1, "population_size", self.population_size, "use >= 1")
        require(self.rollout_length >= 1, "rollout_length", self.rollout_length, "use >= 1")
        require(
            self.num_envs >= max(self.population_size - 1, 1),
            "num_envs",
            self.num_envs,
            f"the XP rollout gives each earlier teammate at least one env: use at least "
            f"population_size - 1 = {self.population_size - 1} (and at least 1)",
        )
        require(self.ego_num_envs >= 1, "ego_num_envs", self.ego_num_envs, "use at least 1")
        require(self.ego_hidden >= 1, "ego_hidden", self.ego_hidden, "use a GRU size >= 1")
        for name in ("xp_coef", "mp_coef", "shaped_reward_coef"):
            value = getattr(self, name)
            require(value >= 0, name, value, "use a value >= 0")
        require(
            self.teammate_timesteps >= self.teammate_batch_size,
            "teammate_timesteps",
            self.teammate_timesteps,
            f"one teammate update takes {ROLLOUTS_PER_UPDATE} rollouts x num_envs x "
            f"rollout_length = {self.teammate_batch_size} timesteps",
        )
        transitions = self.num_envs * self.rollout_length
        require(
            transitions % self.teammate_ppo.num_minibatches == 0,
            "teammate_ppo.num_minibatches",
            self.teammate_ppo.num_minibatches,
            f"it must divide the {transitions} transitions (num_envs x rollout_length) of "
            "each teammate stream",
        )
        require(
            self.ego_timesteps >= self.ego_num_envs * self.rollout_length,
            "ego_timesteps",
            self.ego_timesteps,
            f"one ego update takes ego_num_envs x rollout_length = "
            f"{self.ego_num_envs * self.rollout_length} timesteps",
        )
        require(
            self.ego_num_envs % self.ego_ppo.num_minibatches == 0,
            "ego_ppo.num_minibatches",
            self.ego_ppo.num_minibatches,
            f"the recurrent ego's minibatches split the {self.ego_num_envs} env sequences; "
            "it must divide ego_num_envs",
        )
        ego_updates = self.ego_timesteps // (self.ego_num_envs * self.rollout_length)
        require(
            1 <= self.ego_iterations <= ego_updates,
            "ego_iterations",
            self.ego_iterations,
            f"use 1..{ego_updates} (the ego stage has {ego_updates} PPO updates)",
        )

    @property
    def iterations(self) -> int:
        """Run-loop iterations: `population_size` generation iterations, then the ego chunks."""
        return self.population_size + self.ego_iterations

    @property
    def teammate_batch_size(self) -> int:
        """Joint env steps of one teammate update, all four rollouts counted."""
        return ROLLOUTS_PER_UPDATE * self.num_envs * self.rollout_length

    @property
    def teammate_updates(self) -> int:
        """PPO updates of each teammate (and its BR)."""
        return self.teammate_timesteps // self.teammate_batch_size

    @property
    def ego_config(self) -> EgoConfig:
        """The ego stage as an `EgoConfig` (drives `two_stage` and `ego`)."""
        return EgoConfig(
            task_id=self.task_id,
            total_timesteps=self.ego_timesteps,
            num_envs=self.ego_num_envs,
            rollout_length=self.rollout_length,
            ppo=self.ego_ppo,
            shaped_reward_coef=self.shaped_reward_coef,
            shaping=self.shaping,
            hidden=self.ego_hidden,
            learner_seat=PARTNER_SEAT,
        )

    def generation_env_steps(self, teammate: int) -> int:
        """Joint env steps of generating teammate `teammate` (0-based; the first is SP only)."""
        rollouts = 1 if teammate == 0 else ROLLOUTS_PER_UPDATE
        return self.teammate_updates * rollouts * self.num_envs * self.rollout_length

    def env_steps_after(self, done: int) -> int:
        """Cumulative joint env steps per seed after `done` run-loop iterations."""
        generated = min(done, self.population_size)
        steps = sum(self.generation_env_steps(i) for i in range(generated))
        if done > self.population_size:
            chunks = two_stage.env_steps_of_chunks(self.ego_config, self.ego_iterations)
            steps += int(chunks[done - self.population_size])
        return steps

    @property
    def env_steps_per_iteration(self) -> int:
        """Joint env steps of one generation iteration after the first (for run.json; iterations
        differ in size, `env_steps_after` gives the exact totals)."""
        return self.generation_env_steps(1)


def teammate_loss_terms(config: CoMeDiConfig) -> tuple[LossTerm, ...]:
    """The streams of a teammate's loss (module docstring's table): SP (1, +1, BR head), XP with
    pi^comp (alpha, -1, head `XP_HEAD` + comp: `with_xp_head` sets it per update), MP (beta, +1,
    BR head). The first teammate's is `first_teammate_loss_terms`."""
    return (
        LossTerm("sp", 1.0, False, 1.0, BR_HEAD),
        LossTerm("xp", config.xp_coef, False, -1.0, XP_HEAD),
        LossTerm("mp", config.mp_coef, False, 1.0, BR_HEAD),
    )


def first_teammate_loss_terms() -> tuple[LossTerm, ...]:
    """The first teammate has no earlier one: SP only."""
    return (LossTerm("sp", 1.0, False, 1.0, BR_HEAD),)


def best_response_loss_terms(first: bool) -> tuple[LossTerm, ...]:
    """The BR's loss: SP + MP with unit weights on its own critic (SP alone for the first)."""
    return tuple(LossTerm(d, 1.0, False, 1.0, 0) for d in (("sp",) if first else ("sp", "mp")))


def with_xp_head(terms: tuple[LossTerm, ...], comp: jax.Array | int) -> tuple[LossTerm, ...]:
    """`terms` with the XP term on the value head of earlier teammate `comp` (may be traced)."""
    return tuple(t._replace(value_head=XP_HEAD + comp) if t.data == "xp" else t for t in terms)


# ------------------------------------------------------------------------------------ networks


class Networks(NamedTuple):
    teammate: MLPActorCritic  # population_size value heads: BR_HEAD, then XP_HEAD + j
    best_response: MLPActorCritic  # one value head
    ego: RecurrentEgo


@functools.lru_cache(maxsize=32)
def networks(config: CoMeDiConfig) -> Networks:
    """The three architectures of a run."""
    env = make_env(config.task_id, config.shaping)
    if env.num_agents != 2:
        raise ValueError(
            f"task_id={config.task_id!r} has {env.num_agents} seats; CoMeDi here is for "
            "two-player tasks (one ego, one teammate)"
        )
    return Networks(
        teammate=MLPActorCritic(
            env.obs_dim,
            env.num_actions,
            num_value_heads=config.population_size,
            hidden=config.teammate_hidden,
        ),
        best_response=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.best_response_hidden
        ),
        ego=ego_module.network(config.ego_config),
    )


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


class _Pairings(NamedTuple):
    sp: Pairing  # roles (BR, teammate); learners (teammate, BR)
    xp: Pairing  # roles (EarlierTeammates, teammate); learners (teammate,)
    mixed: Pairing  # roles (MixedPartner, teammate); no learners


@functools.lru_cache(maxsize=32)
def _pairings(config: CoMeDiConfig) -> _Pairings:
    nets = networks(config)
    seats = (PARTNER_SEAT, TEAMMATE_SEAT)
    coef = config.shaped_reward_coef
    return _Pairings(
        sp=Pairing((nets.best_response, nets.teammate), (1, 0), seats, coef),
        xp=Pairing((EarlierTeammates(nets.teammate), nets.teammate), (1,), seats, coef),
        mixed=Pairing((MixedPartner(nets.teammate, nets.best_response), nets.teammate), (), seats),
    )


# ---------------------------------------------------------------------------------------- state


class CoMeDiState(NamedTuple):
    """Everything a CoMeDi run needs to continue exactly, between two iterations. A teammate,
    its BR and their Adam states live only inside its generation iteration."""

    ego: FixedPartnerState  # the ego stage's whole learner state (`two_stage`)
    buffer: TeammateBuffer  # the teammates generated so far
    key: jax.Array  # PRNG key of the next generation iteration
    iteration: jax.Array  # () int32: iterations done


@functools.lru_cache(maxsize=32)
def _param_shapes(config: CoMeDiConfig) -> tuple[Any, Any]:
    nets = networks(config)
    key = jax.random.PRNGKey(0)
    return jax.eval_shape(nets.teammate.init, key), jax.eval_shape(nets.best_response.init, key)


def _empty_buffer(config: CoMeDiConfig) -> TeammateBuffer:
    return empty_buffer(config.population_size, *_param_shapes(config))


def init(key: jax.Array, config: CoMeDiConfig) -> CoMeDiState:
    """A fresh run for one seed: an empty buffer and a fresh ego whose pool is still empty."""
    key_ego, key = jax.random.split(key)
    buffer = _empty_buffer(config)
    slots = Population(networks(config).teammate, buffer.teammates)
    return CoMeDiState(
        ego=two_stage.ego_start(key_ego, config.ego_config, slots),
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
    carry: GenerationState, buffer: TeammateBuffer, config: CoMeDiConfig, first: bool
) -> tuple[GenerationState, dict[str, jax.Array]]:
    """One PPO update of the teammate and of its BR (module docstring)."""
    nets, pairings = networks(config), _pairings(config)
    env = make_env(config.task_id, config.shaping)
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
        mp = branch_rollout(pairings.sp, (br, tm), mixed.states, k_mp, config)
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
    optimizer = make_optimizer(config.teammate_ppo, config.teammate_updates)
    teammate, tm_metrics = ppo_update(
        nets.teammate, carry.teammate, tm_streams, k_tm, config.teammate_ppo, optimizer
    )
    best_response, br_metrics = ppo_update(
        nets.best_response, carry.best_response, br_streams, k_br, config.teammate_ppo, optimizer
    )
    metrics |= {f"teammate_{k}": v for k, v in tm_metrics.items()}
    metrics |= {f"best_response_{k}": v for k, v in br_metrics.items()}
    sp_stats = episode_stats(sp, seat=PARTNER_SEAT)
    metrics["sp_return"], metrics["sp_episodes"] = sp_stats["episode_return"], sp_stats["episodes"]
    return GenerationState(teammate, best_response, sp_state, xp_state, mixed_state, key), metrics


def generation_phase(
    buffer: TeammateBuffer,
    teammate: Params,
    best_response: Params,
    key: jax.Array,
    config: CoMeDiConfig,
    first: bool,
) -> tuple[Params, Params, dict[str, jax.Array]]:
    """Train one new teammate and its BR (fresh params, one seed) for `config.teammate_updates`
    updates against the earlier teammates in `buffer` (none if `first`).

    Returns the trained teammate and BR params and the per-update metrics (leaves (U,)).
    """
    pairings = _pairings(config)
    env = make_env(config.task_id, config.shaping)
    optimizer = make_optimizer(config.teammate_ppo, config.teammate_updates)
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
        lambda c, _: _generation_update(c, buffer, config, first),
        start,
        None,
        length=config.teammate_updates,
    )
    return final.teammate.params, final.best_response.params, metrics


@functools.partial(jax.jit, static_argnames=("config", "first"))
def _generation_seeds(
    state: CoMeDiState,
    teammate: Params,
    best_response: Params,
    key: jax.Array,
    config: CoMeDiConfig,
    first: bool,
) -> tuple[CoMeDiState, dict[str, jax.Array]]:
    """One generation iteration of every seed: the new teammate and its BR join the buffer."""

    def _one_seed(state: CoMeDiState, teammate: Params, best_response: Params, key: jax.Array):
        buf = state.buffer
        teammate, best_response, metrics = generation_phase(
            buf, teammate, best_response, key, config, first
        )

        buffer = insert(buf, teammate, best_response)
        comp = metrics.pop("comp", None)
        summary = phase_summary(metrics)
        if comp is not None:
            summary["comp_teammate"] = comp[-1].astype(jnp.float32)  # pi^comp at the last update
        next_state = state._replace(buffer=buffer, iteration=state.iteration + 1)
        return next_state, summary

    return map_seeds(_one_seed, state, teammate, best_response, key)


@functools.partial(jax.jit, static_argnames="config")
def _ego_with_population(state: CoMeDiState, key: jax.Array, config: CoMeDiConfig) -> CoMeDiState:
    """Every seed's ego now trains against its whole population (uniform draws)."""

    def _one_seed(state: CoMeDiState, key: jax.Array) -> CoMeDiState:
        members = Population(networks(config).teammate, state.buffer.teammates)
        weights = jnp.ones((config.population_size,), jnp.float32)
        ego = two_stage.with_population(state.ego, members, weights, config.ego_config, key)
        return state._replace(ego=ego)

    return map_seeds(_one_seed, state, key)


# ------------------------------------------------------------------------------ one iteration


def step(state: CoMeDiState, config: CoMeDiConfig, done: int) -> tuple[CoMeDiState, dict[str, Any]]:
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
    if done < config.population_size:
        nets = networks(config)
        keys = jax.vmap(lambda k: jax.random.split(k, 5))(state.key)
        teammate = fresh_params(nets.teammate, keys[:, 1])
        best_response = fresh_params(nets.best_response, keys[:, 2])
        state = state._replace(key=keys[:, 0])
        state, out = _generation_seeds(
            state, teammate, best_response, keys[:, 3], config, first=done == 0
        )
        if done + 1 == config.population_size:
            state = _ego_with_population(state, keys[:, 4], config)
        return state, out
    ego_config = config.ego_config
    chunk = two_stage.chunk_sizes(ego_config, config.ego_iterations)[done - config.population_size]
    ego, out = two_stage.ego_chunk_seeds(state.ego, ego_config, chunk)
    return state._replace(ego=ego, iteration=state.iteration + 1), out


def population(state: CoMeDiState, config: CoMeDiConfig, seed: int | None = 0) -> Population:
    """The generated teammates of one seed as a `Population` (host arrays), in generation order,
    ready for `aht_bench.policies.io.save_population`. `seed=None` for an unbatched state."""
    return buffer_population(state.buffer, "teammates", networks(config).teammate, seed, "buffer")


# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table comedi-tg-hyperparams, selected (bold) values per task:
# (timesteps per iteration, lr, ent, clip, alpha, beta); for every task: population size 10,
# 48 envs, 15 epochs, 8 minibatches, anneal false.
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (3.3e7, 5e-4, 0.03, 0.3, 0.6, 1.0),
        "overcooked-cramped_room-v1": (2.1e7, 5e-4, 0.005, 0.3, 0.4, 0.7),
        "overcooked-asymm_advantages-v1": (2.1e7, 5e-5, 0.1, 0.1, 0.4, 0.4),
        "overcooked-counter_circuit-v1": (3.8e7, 1e-3, 0.03, 0.5, 0.1, 0.1),
        "overcooked-coord_ring-v1": (3.8e7, 1e-3, 0.005, 0.3, 0.7, 0.4),
        "overcooked-forced_coord-v1": (3.8e7, 5e-4, 0.01, 0.5, 0.3, 0.4),
    }
)
_PAPER_EGO_ITERATIONS = 10  # not the paper's: checkpoints of the ego stage (one per 10%)


def _from_ego_preset(ego: EgoConfig) -> dict[str, Any]:
    return {
        "ego_timesteps": ego.total_timesteps,
        "ego_num_envs": ego.num_envs,
        "ego_ppo": ego.ppo,
        "ego_hidden": ego.hidden,
    }


def _paper(task_id: str) -> CoMeDiConfig:
    steps, lr, ent, clip, alpha, beta = _PAPER_ROWS[task_id]
    ego = presets.get("ego", "paper", task_id)
    assert isinstance(ego, EgoConfig)
    return CoMeDiConfig(
        task_id=task_id,
        population_size=10,
        teammate_timesteps=int(steps),
        num_envs=48,
        rollout_length=ego.rollout_length,  # 128 on LBF, 400 on Overcooked (presets.py)
        teammate_ppo=PPOConfig(
            learning_rate=lr,
            anneal_lr=False,
            num_epochs=15,
            num_minibatches=8,
            clip_eps=clip,
            ent_coef=ent,
        ),
        xp_coef=alpha,
        mp_coef=beta,
        ego_iterations=_PAPER_EGO_ITERATIONS,
        **_from_ego_preset(ego),
    )


# quick: two CPU cores, minutes per seed (docs/baselines/comedi.md has the measured runs). Not
# the paper's settings: 3 teammates, 32 envs x 128 steps, 4 epochs x 4 minibatches, lr 1e-3
# constant (the paper's CoMeDi does not anneal), clip 0.2, ent 0.01, the paper's alpha and beta;
# the ego is the `ego` quick preset's PPO on a smaller budget. With 64 envs, 64 updates per
# teammate and lr annealed, LBF teammates barely learned (SP return 0.05); 32 envs and 128
# updates on the same env steps gave 0.20 and 0.27 (docs/baselines/comedi.md).
_QUICK_PPO = PPOConfig(
    learning_rate=1e-3,
    anneal_lr=False,
    num_epochs=4,
    num_minibatches=4,
    clip_eps=0.2,
    ent_coef=0.01,
)
# task -> (teammate updates, ego timesteps); 32 envs x 128 steps
_QUICK_BUDGET = presets.with_v2(
    {
        "lbf-v1": (128, 128 * 8_192),
        "overcooked-cramped_room-v1": (64, 64 * 8_192),
        "overcooked-asymm_advantages-v1": (64, 64 * 8_192),
        "overcooked-counter_circuit-v1": (64, 64 * 8_192),
        "overcooked-coord_ring-v1": (64, 64 * 8_192),
        "overcooked-forced_coord-v1": (64, 64 * 8_192),
    }
)


def _quick(task_id: str) -> CoMeDiConfig:
    updates, ego_steps = _QUICK_BUDGET[task_id]
    _, _, _, _, alpha, beta = _PAPER_ROWS[task_id]
    ego = presets.get("ego", "quick", task_id)
    assert isinstance(ego, EgoConfig)
    envs, length = 32, 128
    return CoMeDiConfig(
        task_id=task_id,
        population_size=3,
        teammate_timesteps=updates * ROLLOUTS_PER_UPDATE * envs * length,
        num_envs=envs,
        rollout_length=length,
        teammate_ppo=_QUICK_PPO,
        xp_coef=alpha,
        mp_coef=beta,
        ego_iterations=2,
        shaping=presets.quick_method_shaping(task_id),
        **_from_ego_preset(dataclasses.replace(ego, total_timesteps=ego_steps)),
    )


PRESETS: dict[str, dict[str, CoMeDiConfig]] = {
    "paper": {t: _paper(t) for t in PAPER_TASKS},
    "quick": {t: _quick(t) for t in PAPER_TASKS},
}
"""preset name -> task id -> config."""


REPORT = IterationReport(
    generation_curves=(
        ("sp_return", "SP return (teammate x its BR)", "C0"),
        ("xp_return", "XP return (teammate x pi^comp)", "C1"),
        ("mp_return", "MP return (teammate x BR from mixed-play states)", "C4"),
    ),
    progress_metrics=(("sp", "sp_return"), ("xp", "xp_return"), ("ego", "ego_return")),
    diverged_fix="Lower teammate_ppo.learning_rate or ego_ppo.learning_rate",
)
"""How `aht_bench.runs.train` drives CoMeDi (`aht-bench train comedi`): one
generation iteration per teammate, then the ego chunks; the curves of curve.png."""


METHOD: Method[CoMeDiConfig, CoMeDiState] = Method(
    name="CoMeDi",
    presets=PRESETS,
    init=init,
    step=step,
    networks=networks,
    population=population,
    report=REPORT,
    exhausted=("raise ego_iterations or population_size in a new run to go on"),
    ego=two_stage.ego_of,
)
"""CoMeDi as a `Method`: what `aht-bench train comedi` drives."""
init_seeds = METHOD.init_seeds
iterate = METHOD.iterate
run = METHOD.run
train = METHOD.train
ego_params = METHOD.ego_params
preset = METHOD.preset
