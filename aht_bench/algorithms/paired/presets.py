"""The presets of PAIRED (`aht_bench.algorithms.paired`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.paired.config import (
    PairedConfig,
)
from aht_bench.training import presets

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table paired_hyperparams, per task (bold values where the table searched):
# (timesteps, lr, minibatches, ent-coef, eps-clip). Every task: Num Seeds 3 (`--seeds 3`),
# Num Checkpoints 10, Num Envs 16, Epochs 15, Anneal LR false.
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (3.6e8, 1e-4, 4, 0.03, 0.2),
        "overcooked-cramped_room-v1": (2.4e8, 5e-4, 8, 0.005, 0.05),
        "overcooked-asymm_advantages-v1": (2.4e8, 1e-5, 8, 0.05, 0.1),
        "overcooked-counter_circuit-v1": (4.4e8, 5e-5, 8, 0.01, 0.05),
        "overcooked-coord_ring-v1": (4.4e8, 1e-4, 8, 0.005, 0.05),
        "overcooked-forced_coord-v1": (4.4e8, 5e-5, 8, 0.1, 0.3),
    }
)


def _paper(task_id: str) -> PairedConfig:
    timesteps, lr, minibatches, ent, clip = _PAPER_ROWS[task_id]
    # one set of PPO hyperparameters for all three learners (module docstring)
    ppo = presets.paper_ppo(
        lr=lr, epochs=15, minibatches=minibatches, ent=ent, clip=clip, anneal=False
    )
    return PairedConfig(
        total_timesteps=int(timesteps),
        iterations=10,
        teammate_ppo=ppo,
        ego_ppo=ppo,
        **presets.paper_rollouts(task_id, 16),
    )


# quick: two CPU cores, one seed: 4-5 CPU-minutes a task, measured (under load) on LBF and
# cramped_room (docs/baselines/paired.md). ROTATE's quick PPO settings; 4 iterations of
# lockstep updates of 2 x 64 envs x 128 steps: 64 updates an iteration on LBF (4.2M steps in
# all), 32 on the Overcooked layouts, whose steps cost about three times as much (2.1M).


def _quick(task_id: str) -> PairedConfig:
    updates_per_iteration = 64 if task_id == "lbf-v1" else 32
    return PairedConfig(
        total_timesteps=4 * updates_per_iteration * 2 * 64 * 128,
        iterations=4,
        **presets.quick_open_ended(task_id),
    )


PRESETS: dict[str, dict[str, PairedConfig]] = presets.per_task({"paper": _paper, "quick": _quick})
"""preset name -> task id -> config."""
