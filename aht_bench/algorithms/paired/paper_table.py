"""PAIRED's row of the paper's hyperparameter tables (App. "Hyperparameters"), transcribed once:
task id -> a row of named columns, the selected (bold) values where the table searched a grid;
`presets.py` reads it by column name. Keyed as every table (`training.paper_tables.with_v2`).

May import aht_bench.training.paper_tables only.
"""

from __future__ import annotations

from typing import NamedTuple

from aht_bench.training.paper_tables import with_v2


class PairedRow(NamedTuple):
    """A row of Table paired_hyperparams; every task: Num Seeds 3, Num Checkpoints 10, Num Envs
    16, Epochs 15, Anneal LR false."""

    timesteps: float
    lr: float
    minibatches: int
    ent: float
    clip: float


# Table paired_hyperparams (bold values where the table searched)
PAIRED = with_v2(
    {
        "lbf-v1": PairedRow(3.6e8, 1e-4, 4, 0.03, 0.2),
        "overcooked-cramped_room-v1": PairedRow(2.4e8, 5e-4, 8, 0.005, 0.05),
        "overcooked-asymm_advantages-v1": PairedRow(2.4e8, 1e-5, 8, 0.05, 0.1),
        "overcooked-counter_circuit-v1": PairedRow(4.4e8, 5e-5, 8, 0.01, 0.05),
        "overcooked-coord_ring-v1": PairedRow(4.4e8, 1e-4, 8, 0.005, 0.05),
        "overcooked-forced_coord-v1": PairedRow(4.4e8, 5e-5, 8, 0.1, 0.3),
    }
)
