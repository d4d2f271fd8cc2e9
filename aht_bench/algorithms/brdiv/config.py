"""The config of BRDiv (`aht_bench.algorithms.brdiv`): its fields, their checks and the loss
terms they set.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from aht_bench.algorithms import two_stage
from aht_bench.algorithms.api import TaskConfig
from aht_bench.algorithms.common import (
    legacy_ego_stage,
    require_at_least,
    require_chunks,
    require_ego_stage,
    require_one_update,
    require_stream_minibatches,
)
from aht_bench.training.config import EgoConfig, PPOConfig, check_hidden, require
from aht_bench.training.streams import LossTerm

CONFEDERATE = 0
"""Index of the confederate's data in a pair rollout's `Trajectory.learners`."""
BEST_RESPONSE = 1
"""Index of the best response's data in a pair rollout's `Trajectory.learners`."""


def _split(total: int, parts: int) -> tuple[int, ...]:
    """`total` split into `parts` sizes as even as possible (larger ones first)."""
    base, extra = divmod(total, parts)
    return tuple(base + (1 if i < extra else 0) for i in range(parts))


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class BRDivConfig(TaskConfig):
    """A BRDiv run (paper Table brdiv_hyperparams; the ego stage: Table ppo_ego_tm_hyperparams)."""

    population_size: int
    """n: confederate/best-response pairs (tables: Population size)."""
    xp_coef: float
    """w: weight of each XP return; the SP return's is 1 + 2w (tables: XP Coefficient)."""
    generation_timesteps: int
    """Joint env steps of the generation stage, all n x n pair rollouts counted (tables:
    Timesteps)."""
    num_envs: int
    """Parallel envs of each pair's rollout (tables: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two updates (not in the paper's tables)."""
    generation_ppo: PPOConfig
    """PPO hyperparameters of the confederates and BRs (tables: LR, Ent-Coef, Clip-Eps)."""
    ego_timesteps: int
    """Joint env steps of the whole ego stage (Table ppo_ego_tm_hyperparams: Total
    Timesteps)."""
    ego_num_envs: int
    """Parallel envs of the ego stage (ego table: Num Envs)."""
    ego_rollout_length: int
    """Env steps per env between two ego updates (not in the paper's tables)."""
    ego_ppo: PPOConfig
    """PPO hyperparameters of the ego agent (ego table)."""
    generation_iterations: int = 10
    """Run-loop iterations (checkpoints) the generation stage is split into (ours)."""
    ego_iterations: int = 10
    """Run-loop iterations (checkpoints) the ego stage is split into (ours)."""
    confederate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of each confederate's actor and critic MLPs."""
    best_response_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of each best response's actor and critic MLPs."""
    ego_hidden: int = 64
    """GRU state size of the ego agent."""
    ego_seat: int = 0
    """The seat of the ego agent and of the BRs; the confederates play the other."""

    def __post_init__(self) -> None:
        super().__post_init__()  # task_id, shaping, shaped_reward_coef
        require(
            self.population_size >= 2,
            "population_size",
            self.population_size,
            "use at least 2 (BRDiv needs cross-play pairs)",
        )
        require_at_least(self, 0, "xp_coef")
        require_at_least(self, 1, "num_envs", "rollout_length")
        check_hidden(self, "confederate_hidden", "best_response_hidden")
        require_ego_stage(self)
        require_one_update(
            "generation_timesteps",
            self.generation_timesteps,
            self.generation_batch_size,
            "one update takes population_size^2 x num_envs x rollout_length",
        )
        require_stream_minibatches(self, "generation_ppo", "each pair's rollout")
        iterations, updates = self.generation_iterations, self.generation_updates
        require_chunks("generation_iterations", iterations, updates, "generation")

    @staticmethod
    def upgrade_legacy(fields: dict[str, Any]) -> dict[str, Any]:
        """`fields` (a card's or run's config, or `--set` overrides as strings) in today's
        names: the nested ego stage older aht-bench wrote (`ego={...}`, `ego.num_envs=8`) as
        the flat `ego_*` fields. An old `ego` entry with no flat home (`task_id`, `shaping`,
        ...) is kept as `ego.<name>`, so that a value that mattered is refused, not dropped."""
        return legacy_ego_stage(fields)

    @property
    def ego_config(self) -> EgoConfig:
        """The whole ego stage (what `two_stage`/`ego` take)."""
        return self.ego_stage(self.ego_num_envs, self.ego_rollout_length, self.ego_seat)

    @property
    def sp_coef(self) -> float:
        """Weight of the SP return: 1 + 2 * xp_coef (paper App. "Baselines Overview")."""
        return 1.0 + 2.0 * self.xp_coef

    @property
    def generation_batch_size(self) -> int:
        """Joint env steps of one generation update: every pair's rollout."""
        return self.population_size**2 * self.num_envs * self.rollout_length

    @property
    def generation_updates(self) -> int:
        """Joint PPO updates (of every confederate and BR) in the generation stage."""
        return self.generation_timesteps // self.generation_batch_size

    @property
    def generation_chunks(self) -> tuple[int, ...]:
        """Generation updates per generation iteration."""
        return _split(self.generation_updates, self.generation_iterations)

    @property
    def ego_chunks(self) -> tuple[int, ...]:
        """Ego PPO updates per ego iteration."""
        return two_stage.chunk_sizes(self.ego_config, self.ego_iterations)

    @property
    def iterations(self) -> int:
        """Run-loop iterations of the whole run: generation, then ego."""
        return self.generation_iterations + self.ego_iterations

    def env_steps_after(self, done: int) -> int:
        """Cumulative joint env steps per seed after `done` iterations."""
        gen = np.concatenate([[0], np.cumsum(self.generation_chunks)]) * self.generation_batch_size
        if done <= self.generation_iterations:
            return int(gen[done])
        ego_steps = two_stage.env_steps_of_chunks(self.ego_config, self.ego_iterations)
        return int(gen[-1] + ego_steps[done - self.generation_iterations])

    @property
    def env_steps_per_iteration(self) -> int:
        """Mean joint env steps per iteration (iterations differ: see `env_steps_after`)."""
        return self.env_steps_after(self.iterations) // self.iterations


# ---------------------------------------------------------------------------------- loss terms


def pair_name(confederate: int, best_response: int) -> str:
    """The data name of the rollout of confederate `confederate` with BR `best_response`."""
    return f"c{confederate}-br{best_response}"


def confederate_loss_terms(config: BRDivConfig, i: int) -> tuple[LossTerm, ...]:
    """Confederate `i`'s streams, one per BR `j`: SP (j = i) with weight 1 + 2w and sign +1,
    XP (j != i) with weight w and sign -1; value head j (its return with BR j)."""
    return tuple(
        LossTerm(
            pair_name(i, j),
            config.sp_coef if i == j else config.xp_coef,
            False,
            1.0 if i == j else -1.0,
            j,
        )
        for j in range(config.population_size)
    )


def best_response_loss_terms(config: BRDivConfig, j: int) -> tuple[LossTerm, ...]:
    """BR `j`'s streams, one per confederate `i`: SP (i = j) with weight 1 + 2w and sign +1,
    XP (i != j) with weight w and sign -1; value head i (its return with confederate i)."""
    return tuple(
        LossTerm(
            pair_name(i, j),
            config.sp_coef if i == j else config.xp_coef,
            False,
            1.0 if i == j else -1.0,
            i,
        )
        for i in range(config.population_size)
    )
