"""COLE's row of the paper's hyperparameter tables (App. "Hyperparameters"), transcribed once:
task id -> a row of named columns, the selected (bold) values where the table searched a grid;
`presets.py` reads it by column name. Keyed as every table (`training.paper_tables.with_v2`).

May import aht_bench.training.paper_tables only.
"""

from __future__ import annotations

from typing import NamedTuple

from aht_bench.training.paper_tables import PPORow, with_v2


class ColeRow(NamedTuple):
    """A row of Table cole_hyperparams (it bolds only the values it searched: LBF, CR, CoR)."""

    timesteps_per_iteration: float
    population_size: int
    envs: int
    ppo: PPORow
    alpha: float
    c_uct: float


# Table cole_hyperparams
COLE = with_v2(
    {
        "lbf-v1": ColeRow(1.8e7, 20, 64, PPORow(1e-3, 15, 8, 0.05, 0.05, False), 1.5, 0.4),
        "overcooked-cramped_room-v1": ColeRow(
            1.85e7, 13, 64, PPORow(1e-3, 15, 8, 0.05, 0.05, False), 0.1, 0.1
        ),
        "overcooked-asymm_advantages-v1": ColeRow(
            1.85e7, 13, 64, PPORow(1e-3, 15, 8, 0.01, 0.3, False), 0.1, 0.3
        ),
        "overcooked-counter_circuit-v1": ColeRow(
            3.38e7, 13, 64, PPORow(1e-3, 15, 8, 0.01, 0.01, False), 0.1, 0.3
        ),
        "overcooked-coord_ring-v1": ColeRow(
            3.38e7, 13, 64, PPORow(1e-3, 15, 8, 0.01, 0.1, False), 0.1, 0.3
        ),
        "overcooked-forced_coord-v1": ColeRow(
            3.38e7, 13, 64, PPORow(1e-3, 15, 8, 0.01, 0.05, False), 0.1, 0.3
        ),
    }
)
