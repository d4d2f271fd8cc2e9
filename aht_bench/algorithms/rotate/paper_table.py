"""ROTATE's row of the paper's hyperparameter tables (App. "Hyperparameters"), transcribed once:
task id -> a row of named columns, the selected (bold) values where the table searched a grid;
`presets.py` reads it by column name. Keyed as every table (`training.paper_tables.with_v2`).

May import aht_bench.training.paper_tables only.
"""

from __future__ import annotations

from typing import NamedTuple

from aht_bench.training.paper_tables import OpenEndedRow, PPORow, with_v2


class RotateRow(NamedTuple):
    """A row of Table rotate_hyperparams (one Minibatches column for both learners)."""

    iterations: int
    envs: int
    lambda_1: float  # competence weight on XP states (Eq. constrained_state_based_regret_obj)
    lambda_2: float  # competence weight on SP states
    ego_timesteps: float
    ego_ppo: PPORow
    teammate_timesteps: float
    teammate_ppo: PPORow

    @property
    def open_ended(self) -> OpenEndedRow:
        return OpenEndedRow(
            self.iterations,
            self.envs,
            self.teammate_timesteps,
            self.teammate_ppo,
            self.ego_timesteps,
            self.ego_ppo,
        )


# Table rotate_hyperparams
ROTATE = with_v2(
    {
        "lbf-v1": RotateRow(
            iterations=30,
            envs=16,
            lambda_1=4,
            lambda_2=4,
            ego_timesteps=2e6,
            ego_ppo=PPORow(5e-5, 10, 4, 1e-4, 0.1, False),
            teammate_timesteps=1e7,
            teammate_ppo=PPORow(1e-4, 20, 4, 0.01, 0.1, True),
        ),
        "overcooked-cramped_room-v1": RotateRow(
            iterations=30,
            envs=16,
            lambda_1=4,
            lambda_2=4,
            ego_timesteps=2e6,
            ego_ppo=PPORow(5e-5, 10, 8, 0.001, 0.1, False),
            teammate_timesteps=6e6,
            teammate_ppo=PPORow(1e-4, 20, 8, 0.01, 0.2, True),
        ),
        "overcooked-asymm_advantages-v1": RotateRow(
            iterations=30,
            envs=16,
            lambda_1=9,
            lambda_2=0,
            ego_timesteps=2e6,
            ego_ppo=PPORow(5e-5, 10, 8, 0.001, 0.1, False),
            teammate_timesteps=6e6,
            teammate_ppo=PPORow(5e-5, 20, 8, 0.05, 0.5, False),
        ),
        "overcooked-counter_circuit-v1": RotateRow(
            iterations=20,
            envs=16,
            lambda_1=2,
            lambda_2=4,
            ego_timesteps=6e6,
            ego_ppo=PPORow(5e-5, 10, 8, 0.001, 0.1, False),
            teammate_timesteps=1.6e7,
            teammate_ppo=PPORow(1e-3, 20, 8, 0.05, 0.1, False),
        ),
        "overcooked-coord_ring-v1": RotateRow(
            iterations=20,
            envs=16,
            lambda_1=10,
            lambda_2=10,
            ego_timesteps=6e6,
            ego_ppo=PPORow(3e-5, 10, 8, 0.001, 0.1, False),
            teammate_timesteps=1.6e7,
            teammate_ppo=PPORow(1e-3, 20, 8, 0.01, 0.5, False),
        ),
        "overcooked-forced_coord-v1": RotateRow(
            iterations=20,
            envs=16,
            lambda_1=3,
            lambda_2=4,
            ego_timesteps=6e6,
            ego_ppo=PPORow(1e-5, 5, 8, 1e-4, 0.1, False),
            teammate_timesteps=1.6e7,
            teammate_ppo=PPORow(1e-3, 20, 8, 0.05, 0.1, False),
        ),
    }
)
