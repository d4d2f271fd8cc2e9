"""The config of PAIRED (`aht_bench.algorithms.paired`): its fields, their checks and the loss
terms they set.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms.api import BR_HEAD, TeammateBRConfig
from aht_bench.algorithms.common import (
    require_at_least,
    require_seat,
    require_teammate_and_ego_minibatches,
)
from aht_bench.algorithms.rotate import EGO_HEAD
from aht_bench.training.config import PPOConfig, require
from aht_bench.training.streams import LossTerm

# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairedConfig(TeammateBRConfig):
    """A PAIRED run (paper Table paired_hyperparams)."""

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
    ego_seat: int = 0
    """The seat of the ego agent and of the best response; the teammate plays the other."""

    def __post_init__(self) -> None:
        super().__post_init__()  # task fields, architectures
        require_at_least(self, 1, "iterations", "num_envs", "rollout_length")
        require_seat("ego_seat", self.ego_seat)
        require(
            self.total_timesteps >= self.iterations * self.batch_size,
            "total_timesteps",
            self.total_timesteps,
            f"each of the {self.iterations} iterations needs at least one update of 2 rollouts "
            f"x num_envs x rollout_length = {self.batch_size} timesteps; raise it to at least "
            f"{self.iterations * self.batch_size} or lower iterations",
        )
        require_teammate_and_ego_minibatches(self, "each stream", "num_envs")

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
