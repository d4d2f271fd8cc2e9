"""FCP's row of the paper's hyperparameter tables (App. "Hyperparameters"), transcribed once:
task id -> a row of named columns, the selected (bold) values where the table searched a grid;
`presets.py` reads it by column name. Keyed as every table (`training.paper_tables.with_v2`).

May import aht_bench.training.paper_tables only.
"""

from __future__ import annotations

from typing import NamedTuple

from aht_bench.training.paper_tables import PPORow, with_v2


class FCPRow(NamedTuple):
    """A row of Table fcp-tg-hyperparams."""

    timesteps_per_agent: float  # joint env steps of one IPPO run (`aht_bench.algorithms.fcp`)
    seeds: int  # IPPO runs
    checkpoints: int  # snapshots kept per run
    envs: int
    ppo: PPORow


# Table fcp-tg-hyperparams
FCP = with_v2(
    {
        "lbf-v1": FCPRow(2e6, 23, 5, 8, PPORow(1e-5, 15, 4, 0.005, 0.5, True)),
        "overcooked-cramped_room-v1": FCPRow(2e6, 23, 5, 8, PPORow(1e-4, 15, 16, 0.01, 0.2, True)),
        "overcooked-asymm_advantages-v1": FCPRow(
            2e6, 23, 5, 8, PPORow(1e-5, 15, 16, 0.1, 0.2, True)
        ),
        "overcooked-counter_circuit-v1": FCPRow(
            4e6, 22, 5, 8, PPORow(1e-3, 15, 16, 0.03, 0.05, True)
        ),
        "overcooked-coord_ring-v1": FCPRow(4e6, 22, 5, 8, PPORow(1e-3, 15, 16, 0.01, 0.3, True)),
        "overcooked-forced_coord-v1": FCPRow(4e6, 22, 5, 8, PPORow(5e-4, 15, 16, 0.005, 0.2, True)),
    }
)
