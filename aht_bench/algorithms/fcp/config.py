"""The config of FCP (`aht_bench.algorithms.fcp`): its fields, their checks and the loss
terms they set.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms import two_stage
from aht_bench.algorithms.api import TaskConfig
from aht_bench.algorithms.common import (
    require_at_least,
    require_divides,
    require_ego_stage,
    require_one_update,
)
from aht_bench.training.config import EgoConfig, IPPOConfig, PPOConfig, check_hidden, require

# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class FCPConfig(TaskConfig):
    """An FCP run (paper Table fcp-tg-hyperparams for stage 1, ppo_ego_tm_hyperparams for the
    ego)."""

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

    def __post_init__(self) -> None:
        super().__post_init__()  # task_id, shaping, shaped_reward_coef
        check_hidden(self, "teammate_hidden")
        require_at_least(
            self,
            1,
            *("num_ippo_seeds", "num_checkpoints", "teams_per_iteration", "ego_iterations"),
            *("teammate_num_envs", "teammate_rollout_length"),
        )
        require(
            self.num_ippo_seeds % self.teams_per_iteration == 0,
            "teams_per_iteration",
            self.teams_per_iteration,
            f"it must divide num_ippo_seeds = {self.num_ippo_seeds}",
        )
        batch = self.teammate_num_envs * self.teammate_rollout_length
        update = "one IPPO update takes teammate_num_envs x teammate_rollout_length"
        require_one_update("teammate_timesteps", self.teammate_timesteps, batch, update)
        stream = "an IPPO update (teammate_num_envs x teammate_rollout_length)"
        require_divides(
            "teammate_ppo.num_minibatches", self.teammate_ppo.num_minibatches, batch, stream
        )
        updates = self.teammate_timesteps // batch
        require(
            self.num_checkpoints <= updates + 1,
            "num_checkpoints",
            self.num_checkpoints,
            f"an IPPO run has {updates} updates, so at most {updates + 1} distinct snapshots "
            "(update 0 included); raise teammate_timesteps or keep fewer",
        )
        require_ego_stage(self)

    @property
    def ippo_config(self) -> IPPOConfig:
        """One IPPO run of the teammate-generation stage (what `ippo.init`/`ippo.update` take)."""
        return IPPOConfig(
            total_timesteps=self.teammate_timesteps,
            num_envs=self.teammate_num_envs,
            rollout_length=self.teammate_rollout_length,
            ppo=self.teammate_ppo,
            hidden=self.teammate_hidden,
            **self.task_fields,
        )

    @property
    def ego_config(self) -> EgoConfig:
        """The whole ego stage (what `two_stage`/`ego` take)."""
        return self.ego_stage(self.ego_num_envs, self.ego_rollout_length, self.ego_seat)

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
