"""The config of COLE (`aht_bench.algorithms.cole`): its fields, their checks and the loss
terms they set.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms.api import TaskConfig
from aht_bench.algorithms.common import (
    require_at_least,
    require_one_update,
    require_stream_minibatches,
)
from aht_bench.training.config import PPOConfig, check_hidden, require
from aht_bench.training.rollout import (
    make_env,
)

MAX_POPULATION = 21
"""Shapley values enumerate the 2^(n-1) coalitions of the earlier members: n <= 21."""


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class ColeConfig(TaskConfig):
    """A COLE run (paper Table cole_hyperparams)."""

    population_size: int
    """Members generated, one per iteration (tables: Population Size)."""
    timesteps_per_iteration: int
    """Training joint env steps per member, both seats' rollouts counted (tables: Timesteps Per
    Iteration); the cross-play rollouts come on top."""
    num_envs: int
    """Parallel envs of each of an update's two rollouts (tables: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two PPO updates (not in the paper's tables)."""
    ppo: PPOConfig
    """PPO hyperparameters of every member (tables: LR, Epochs, Minibatches, Ent-Coef, Eps-Clip,
    Anneal LR)."""
    alpha: float
    """Inverse temperature of the incompatibility softmax; 0 = uniform (tables: alpha)."""
    c_uct: float
    """Weight of the UCB exploration bonus (tables: c_UCT)."""
    eval_envs: int = 64
    """Episodes per seat order for each cross-play entry (not in the paper's tables)."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of every member's actor and critic MLPs."""

    def __post_init__(self) -> None:
        super().__post_init__()  # task_id, shaping, shaped_reward_coef
        check_hidden(self, "hidden")
        require(
            1 <= self.population_size <= MAX_POPULATION,
            "population_size",
            self.population_size,
            f"use 1..{MAX_POPULATION} (exact Shapley values enumerate all coalitions of the "
            "earlier members)",
        )
        require_at_least(self, 1, "num_envs", "rollout_length", "eval_envs")
        require_at_least(self, 0, "alpha", "c_uct")
        require_one_update(
            "timesteps_per_iteration",
            self.timesteps_per_iteration,
            self.batch_size,
            "one update takes 2 rollouts (one per seat) x num_envs x rollout_length",
        )
        require_stream_minibatches(self, "ppo", "each seat's stream")

    @property
    def iterations(self) -> int:
        """Iterations of the run: one member each."""
        return self.population_size

    @property
    def batch_size(self) -> int:
        """Joint env steps of one training update: two rollouts (one per seat)."""
        return 2 * self.num_envs * self.rollout_length

    @property
    def updates_per_iteration(self) -> int:
        """PPO updates of each member."""
        return self.timesteps_per_iteration // self.batch_size

    @property
    def train_steps_per_iteration(self) -> int:
        """Training joint env steps per iteration (whole updates only)."""
        return self.updates_per_iteration * self.batch_size

    @property
    def eval_length(self) -> int:
        """Steps of a cross-play rollout: the task's horizon (one whole episode per env)."""
        return int(make_env(self.task_id, self.shaping).horizon)

    def eval_steps(self, iteration: int) -> int:
        """Cross-play joint env steps of iteration `iteration` (0-based): member `iteration`
        plays members 0..iteration, two seat orders each."""
        return (iteration + 1) * 2 * self.eval_envs * self.eval_length

    def env_steps_after(self, done: int) -> int:
        """Joint env steps per seed after `done` iterations, training and cross-play."""
        return done * self.train_steps_per_iteration + sum(self.eval_steps(i) for i in range(done))

    @property
    def env_steps_per_iteration(self) -> int:
        """Mean joint env steps per iteration (they grow with the population: see
        `env_steps_after`)."""
        return self.env_steps_after(self.iterations) // self.iterations
