"""BRDiv's row of the paper's hyperparameter tables (App. "Hyperparameters"), transcribed once:
task id -> a row of named columns, the selected (bold) values where the table searched a grid;
`presets.py` reads it by column name. Keyed as every table (`training.paper_tables.with_v2`).

May import aht_bench.training.paper_tables only.
"""

from __future__ import annotations

from typing import NamedTuple

from aht_bench.training.paper_tables import with_v2


class BRDivRow(NamedTuple):
    """A row of Table brdiv_hyperparams (no Epochs, Minibatches or Anneal LR columns)."""

    timesteps: float
    xp_coef: float
    population_size: int
    envs: int
    lr: float
    ent: float
    clip: float


# Table brdiv_hyperparams
BRDIV = with_v2(
    {
        "lbf-v1": BRDivRow(3.3e8, 0.1, 3, 64, 5e-5, 0.005, 0.2),
        "overcooked-cramped_room-v1": BRDivRow(2.1e8, 0.5, 4, 64, 1e-5, 0.05, 0.3),
        "overcooked-asymm_advantages-v1": BRDivRow(2.1e8, 0.5, 3, 64, 1e-3, 0.05, 0.05),
        "overcooked-counter_circuit-v1": BRDivRow(3.8e8, 0.01, 3, 128, 1e-5, 0.01, 0.01),
        "overcooked-coord_ring-v1": BRDivRow(3.8e8, 0.005, 3, 128, 1e-5, 0.05, 0.1),
        "overcooked-forced_coord-v1": BRDivRow(3.8e8, 0.01, 3, 128, 5e-4, 0.01, 0.05),
    }
)
