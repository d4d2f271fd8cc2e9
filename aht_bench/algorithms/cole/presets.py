"""The presets of COLE (`aht_bench.algorithms.cole`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms.cole.config import (
    ColeConfig,
)
from aht_bench.algorithms.cole.paper_table import COLE
from aht_bench.training import presets

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS


def _paper(task_id: str) -> ColeConfig:
    row = COLE[task_id]
    # not in the table: rollout length (presets' 128 on LBF, one 400-step episode on
    # Overcooked), eval_envs 64, MLP 64-64, gamma/GAE lambda/value and gradient clips as in
    # every preset (aht_bench.training.presets)
    return ColeConfig(
        population_size=row.population_size,
        timesteps_per_iteration=int(row.timesteps_per_iteration),
        **presets.paper_rollouts(task_id, row.envs),
        ppo=presets.paper_ppo(row.ppo),
        alpha=row.alpha,
        c_uct=row.c_uct,
        eval_envs=64,
    )


# quick: two CPU cores; see docs/baselines/cole.md for the measured run times and returns.
_QUICK_PPO = presets.QUICK_PPO
# task -> (population size, training timesteps per iteration): 128 (LBF) and 48 (Overcooked)
# updates of 2 x 64 x 128 steps per member. A first LBF member reached self-play return 0.42 in
# 2M steps, a first cramped_room member 57 in 1M (docs/baselines/cole.md).
_QUICK_BUDGET = presets.lbf_and_layouts(lbf=(4, 2_097_152), overcooked=(4, 786_432))


def _quick(task_id: str) -> ColeConfig:
    size, steps = _QUICK_BUDGET[task_id]
    row = COLE[task_id]
    return ColeConfig(
        population_size=size,
        timesteps_per_iteration=steps,
        ppo=_QUICK_PPO,
        alpha=row.alpha,
        c_uct=row.c_uct,
        eval_envs=32,
        **presets.quick_rollouts(task_id),
    )


def _medium(task_id: str) -> ColeConfig:
    """The paper's population with a tenth of its steps per member where that is more than
    quick's member, else more members of quick's size (`presets.medium_units`); whole updates of
    2 x 64 envs x 128 steps, quick's settings."""
    quick = _quick(task_id)
    row = COLE[task_id]
    members, steps = presets.medium_units(
        row.population_size, row.timesteps_per_iteration, quick.timesteps_per_iteration
    )
    batch = 2 * quick.num_envs * quick.rollout_length
    return dataclasses.replace(
        quick, population_size=members, timesteps_per_iteration=presets.whole(steps, batch)
    )


PRESETS: dict[str, dict[str, ColeConfig]] = presets.per_task(
    {"paper": _paper, "quick": _quick, "medium": _medium}
)
"""preset name -> task id -> config."""
