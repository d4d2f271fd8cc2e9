"""The config of CoMeDi (`aht_bench.algorithms.comedi`): its fields, their checks and the loss
terms they set.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

import jax

from aht_bench.algorithms import two_stage
from aht_bench.algorithms.api import BR_HEAD, TeammateBRConfig
from aht_bench.algorithms.common import (
    require_at_least,
    require_chunks,
    require_one_update,
    require_teammate_and_ego_minibatches,
)
from aht_bench.training.config import EgoConfig, PPOConfig, require
from aht_bench.training.streams import LossTerm

TEAMMATE_SEAT = 1
"""The seat of the teammate being trained (and of every teammate in the population)."""
PARTNER_SEAT = 0
"""The seat of its partners: its BR, the earlier teammates, the mixed partner, the ego."""
XP_HEAD = 1
"""The teammate's value head for returns with earlier teammate j is `XP_HEAD + j`."""
ROLLOUTS_PER_UPDATE = 4
"""SP, XP, mixed and MP."""


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class CoMeDiConfig(TeammateBRConfig):
    """A CoMeDi run (Table comedi-tg-hyperparams; the ego stage Table ppo_ego_tm_hyperparams)."""

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

    def __post_init__(self) -> None:
        super().__post_init__()  # task fields, architectures
        require_at_least(self, 1, "population_size", "rollout_length", "ego_num_envs")
        require(
            self.num_envs >= max(self.population_size - 1, 1),
            "num_envs",
            self.num_envs,
            f"the XP rollout gives each earlier teammate at least one env: use at least "
            f"population_size - 1 = {self.population_size - 1} (and at least 1)",
        )
        require_at_least(self, 0, "xp_coef", "mp_coef")
        require_one_update(
            "teammate_timesteps",
            self.teammate_timesteps,
            self.teammate_batch_size,
            f"one teammate update takes {ROLLOUTS_PER_UPDATE} rollouts x num_envs x rollout_length",
        )
        require_teammate_and_ego_minibatches(self, "each teammate stream", "ego_num_envs")
        ego_batch = self.ego_num_envs * self.rollout_length
        update = "one ego update takes ego_num_envs x rollout_length"
        require_one_update("ego_timesteps", self.ego_timesteps, ego_batch, update)
        ego_updates = self.ego_timesteps // ego_batch
        require_chunks("ego_iterations", self.ego_iterations, ego_updates, "ego")

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
        return self.ego_stage(self.ego_num_envs, self.rollout_length, PARTNER_SEAT)

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
