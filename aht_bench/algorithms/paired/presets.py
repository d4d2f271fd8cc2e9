"""The presets of PAIRED (`aht_bench.algorithms.paired`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms.paired.config import (
    PairedConfig,
)
from aht_bench.algorithms.paired.paper_table import PAIRED
from aht_bench.training import presets
from aht_bench.training.paper_tables import PPORow

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS


def _paper(task_id: str) -> PairedConfig:
    row = PAIRED[task_id]
    # one set of PPO hyperparameters for all three learners (module docstring)
    ppo = presets.paper_ppo(PPORow(row.lr, 15, row.minibatches, row.ent, row.clip, False))
    return PairedConfig(
        total_timesteps=int(row.timesteps),
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


def _medium(task_id: str) -> PairedConfig:
    """A tenth of the paper's steps in its 10 iterations (`presets.medium_units`: more than
    quick's iteration), whole lockstep updates of 2 x 64 envs x 128 steps, quick's settings."""
    quick = _quick(task_id)
    paper = _paper(task_id)
    iterations, steps = presets.medium_units(
        paper.iterations,
        paper.total_timesteps / paper.iterations,
        quick.total_timesteps / quick.iterations,
    )
    per_iteration = presets.whole(steps, 2 * quick.num_envs * quick.rollout_length)
    return dataclasses.replace(
        quick, iterations=iterations, total_timesteps=iterations * per_iteration
    )


PRESETS: dict[str, dict[str, PairedConfig]] = presets.per_task(
    {"paper": _paper, "quick": _quick, "medium": _medium}
)
"""preset name -> task id -> config."""
