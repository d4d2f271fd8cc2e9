"""The paper's hyperparameter tables (App. "Hyperparameters") of the stages every method shares,
transcribed once: per table, task id -> a row of named columns, the selected (bold) values where
the table searched a grid; and the column types the methods' own tables use.

    paper_tables.IPPO["lbf-v1"].ppo.minibatches      # 4
    paper_tables.EGO["overcooked-coord_ring-v1"].timesteps   # 1.2e8

Each method's table lives with the method (`aht_bench/algorithms/<method>/paper_table.py`, e.g.
`<method>.paper_table.<TABLE>["lbf-v1"].teammate_ppo.lr`): the
training core knows no method. Rows are keyed by the v1 task ids and repeated for each Overcooked
layout's v2 id (`with_v2`: a row belongs to the layout, not the protocol). Only what a table gives
is here; what the presets add (rollout lengths, network sizes, the settings a table leaves out)
is in `aht_bench.training.presets` and each method's presets, which read the rows by column name.

May import nothing of aht_bench.
"""

from __future__ import annotations

from typing import NamedTuple, TypeVar

T = TypeVar("T")


def with_v2(rows: dict[str, T]) -> dict[str, T]:
    """`rows` (keyed by v1 task ids) plus each `overcooked-<layout>-v1` row again under
    `overcooked-<layout>-v2`: a hyperparameter row belongs to the layout, not the protocol."""
    extra = {t.replace("-v1", "-v2"): r for t, r in rows.items() if t.startswith("overcooked-")}
    return {**rows, **extra}


class PPORow(NamedTuple):
    """The PPO columns of a table: LR, Epochs, Minibatches, Ent-Coef, Clip-Eps, Anneal LR."""

    lr: float
    epochs: int
    minibatches: int
    ent: float
    clip: float
    anneal: bool


class StageRow(NamedTuple):
    """A row of Table ippo_hyperparams or Table ppo_ego_tm_hyperparams."""

    timesteps: float  # Timesteps (IPPO) / Total Timesteps (ego)
    envs: int  # Number envs / Num Envs
    ppo: PPORow


class OpenEndedRow(NamedTuple):
    """The columns an open-ended method's row shares:
    `aht_bench.training.presets.paper_open_ended` turns them into config fields."""

    iterations: int  # OEL Iterations
    envs: int  # Num Envs
    teammate_timesteps: float  # Timesteps per Iter (T)
    teammate_ppo: PPORow  # the (T) rows
    ego_timesteps: float  # Timesteps per Iter (Ego)
    ego_ppo: PPORow  # the (Ego) rows


# Table ippo_hyperparams: IPPO, the base algorithm of every method (also the `br` preset's)
IPPO = with_v2(
    {
        "lbf-v1": StageRow(5e5, 8, PPORow(1e-4, 15, 4, 0.01, 0.03, True)),
        "overcooked-cramped_room-v1": StageRow(1e6, 8, PPORow(1e-4, 15, 16, 0.01, 0.2, True)),
        "overcooked-asymm_advantages-v1": StageRow(1e6, 8, PPORow(1e-4, 15, 16, 0.01, 0.3, True)),
        "overcooked-counter_circuit-v1": StageRow(3e6, 8, PPORow(1e-3, 15, 16, 0.05, 0.1, True)),
        "overcooked-coord_ring-v1": StageRow(3e6, 8, PPORow(1e-3, 15, 16, 0.05, 0.1, True)),
        "overcooked-forced_coord-v1": StageRow(3e6, 8, PPORow(1e-3, 15, 16, 0.05, 0.1, True)),
    }
)

# Table ppo_ego_tm_hyperparams: the PPO ego agent of every teammate generation method
EGO = with_v2(
    {
        "lbf-v1": StageRow(6e7, 8, PPORow(5e-5, 10, 4, 1e-4, 0.1, False)),
        "overcooked-cramped_room-v1": StageRow(6e7, 8, PPORow(5e-5, 10, 8, 0.001, 0.1, False)),
        "overcooked-asymm_advantages-v1": StageRow(6e7, 8, PPORow(5e-5, 10, 8, 0.001, 0.1, False)),
        "overcooked-counter_circuit-v1": StageRow(1.2e8, 8, PPORow(5e-5, 10, 8, 0.001, 0.1, False)),
        "overcooked-coord_ring-v1": StageRow(1.2e8, 8, PPORow(3e-5, 10, 8, 0.001, 0.1, False)),
        "overcooked-forced_coord-v1": StageRow(1.2e8, 8, PPORow(1e-5, 5, 8, 1e-4, 0.1, False)),
    }
)
