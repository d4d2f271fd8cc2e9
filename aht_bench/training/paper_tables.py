"""The paper's hyperparameter tables (App. "Hyperparameters"), transcribed once: per table, task id
-> a row of named columns, the selected (bold) values where the table searched a grid.

    paper_tables.ROTATE["lbf-v1"].teammate_ppo.lr     # 1e-4
    paper_tables.COMEDI["lbf-v1"].alpha               # 0.6

Rows are keyed by the v1 task ids and repeated for each Overcooked layout's v2 id (`with_v2`: a
row belongs to the layout, not the protocol). Only what a table gives is here; what the presets
add (rollout lengths, network sizes, the settings a table leaves out) is in
`aht_bench.training.presets` and each method's presets, which read these rows by column name.

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


class FCPRow(NamedTuple):
    """A row of Table fcp-tg-hyperparams."""

    timesteps_per_agent: float  # joint env steps of one IPPO run (`aht_bench.algorithms.fcp`)
    seeds: int  # IPPO runs
    checkpoints: int  # snapshots kept per run
    envs: int
    ppo: PPORow


class OpenEndedRow(NamedTuple):
    """The columns an open-ended method's row shares (ROTATE, Minimax Return):
    `aht_bench.training.presets.paper_open_ended` turns them into config fields."""

    iterations: int  # OEL Iterations
    envs: int  # Num Envs
    teammate_timesteps: float  # Timesteps per Iter (T)
    teammate_ppo: PPORow  # the (T) rows
    ego_timesteps: float  # Timesteps per Iter (Ego)
    ego_ppo: PPORow  # the (Ego) rows


class MinimaxRow(NamedTuple):
    """A row of Table minimax_hyperparams: one set of PPO columns for the teammate and the ego."""

    iterations: int
    envs: int
    ego_timesteps: float
    teammate_timesteps: float
    ppo: PPORow

    @property
    def open_ended(self) -> OpenEndedRow:
        ppo = self.ppo
        return OpenEndedRow(
            self.iterations, self.envs, self.teammate_timesteps, ppo, self.ego_timesteps, ppo
        )


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


class CoMeDiRow(NamedTuple):
    """A row of Table comedi-tg-hyperparams; every task: Population Size 10, Num Envs 48,
    Epochs 15, Minibatches 8, Anneal LR false."""

    timesteps_per_iteration: float
    lr: float
    ent: float
    clip: float
    alpha: float  # weight of the XP term (minimised)
    beta: float  # weight of the mixed-play term


class BRDivRow(NamedTuple):
    """A row of Table brdiv_hyperparams (no Epochs, Minibatches or Anneal LR columns)."""

    timesteps: float
    xp_coef: float
    population_size: int
    envs: int
    lr: float
    ent: float
    clip: float


class PairedRow(NamedTuple):
    """A row of Table paired_hyperparams; every task: Num Seeds 3, Num Checkpoints 10, Num Envs
    16, Epochs 15, Anneal LR false."""

    timesteps: float
    lr: float
    minibatches: int
    ent: float
    clip: float


class ColeRow(NamedTuple):
    """A row of Table cole_hyperparams (it bolds only the values it searched: LBF, CR, CoR)."""

    timesteps_per_iteration: float
    population_size: int
    envs: int
    ppo: PPORow
    alpha: float
    c_uct: float


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

# Table minimax_hyperparams (bold values where the table searched)
MINIMAX = with_v2(
    {
        "lbf-v1": MinimaxRow(30, 16, 2e6, 1e7, PPORow(1e-3, 15, 4, 0.03, 0.03, False)),
        "overcooked-cramped_room-v1": MinimaxRow(
            30, 16, 2e6, 6e6, PPORow(1e-4, 15, 8, 0.1, 0.1, True)
        ),
        "overcooked-asymm_advantages-v1": MinimaxRow(
            30, 16, 2e6, 6e6, PPORow(1e-5, 15, 8, 0.05, 0.2, False)
        ),
        "overcooked-counter_circuit-v1": MinimaxRow(
            20, 16, 6e6, 1.6e7, PPORow(1e-5, 15, 8, 0.005, 0.05, False)
        ),
        "overcooked-coord_ring-v1": MinimaxRow(
            20, 16, 6e6, 1.6e7, PPORow(1e-4, 15, 8, 0.005, 0.1, False)
        ),
        "overcooked-forced_coord-v1": MinimaxRow(
            20, 16, 6e6, 1.6e7, PPORow(5e-5, 15, 8, 0.01, 0.05, False)
        ),
    }
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
