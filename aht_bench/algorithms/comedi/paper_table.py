"""CoMeDi's row of the paper's hyperparameter tables (App. "Hyperparameters"), transcribed once:
task id -> a row of named columns, the selected (bold) values where the table searched a grid;
`presets.py` reads it by column name. Keyed as every table (`training.paper_tables.with_v2`).

May import aht_bench.training.paper_tables only.
"""

from __future__ import annotations

from typing import NamedTuple

from aht_bench.training.paper_tables import with_v2


class CoMeDiRow(NamedTuple):
    """A row of Table comedi-tg-hyperparams; every task: Population Size 10, Num Envs 48,
    Epochs 15, Minibatches 8, Anneal LR false."""

    timesteps_per_iteration: float
    lr: float
    ent: float
    clip: float
    alpha: float  # weight of the XP term (minimised)
    beta: float  # weight of the mixed-play term


# Table comedi-tg-hyperparams (ROTATE's `mixed_play` variant uses its alpha and beta: "the
# same hyperparameters as ROTATE and CoMeDi's tuned mixed-play weights", App.
# teammate_gen_ablations)
COMEDI = with_v2(
    {
        "lbf-v1": CoMeDiRow(3.3e7, 5e-4, 0.03, 0.3, 0.6, 1.0),
        "overcooked-cramped_room-v1": CoMeDiRow(2.1e7, 5e-4, 0.005, 0.3, 0.4, 0.7),
        "overcooked-asymm_advantages-v1": CoMeDiRow(2.1e7, 5e-5, 0.1, 0.1, 0.4, 0.4),
        "overcooked-counter_circuit-v1": CoMeDiRow(3.8e7, 1e-3, 0.03, 0.5, 0.1, 0.1),
        "overcooked-coord_ring-v1": CoMeDiRow(3.8e7, 1e-3, 0.005, 0.3, 0.7, 0.4),
        "overcooked-forced_coord-v1": CoMeDiRow(3.8e7, 5e-4, 0.01, 0.5, 0.3, 0.4),
    }
)
