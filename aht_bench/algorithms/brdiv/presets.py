"""The presets of BRDiv (`aht_bench.algorithms.brdiv`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aht_bench.algorithms.brdiv.config import (
    BRDivConfig,
)
from aht_bench.algorithms.brdiv.paper_table import BRDIV
from aht_bench.training import paper_tables, presets
from aht_bench.training.config import EgoConfig
from aht_bench.training.paper_tables import PPORow

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Not in the table: epochs, minibatches and annealing, taken from Table ippo_hyperparams (IPPO
# is the base algorithm of every method): 15 epochs; 4 minibatches on LBF, 16 on Overcooked;
# annealed LR. 30 + 30 iterations (checkpoints) are ours.
_PAPER_EPOCHS = 15
_PAPER_ITERATIONS = 30


def _ego_stage(name: str, task_id: str, **overrides: Any) -> dict[str, Any]:
    """The shared ego stage (`presets.get("ego", name, task_id)`) as BRDiv's `ego_*` fields."""
    config = presets.get("ego", name, task_id, **overrides)
    assert isinstance(config, EgoConfig)
    return presets.flat_ego(config)


def _paper(task_id: str) -> BRDivConfig:
    row = BRDIV[task_id]
    minibatches = paper_tables.IPPO[task_id].ppo.minibatches  # 4 on LBF, 16 on Overcooked
    return BRDivConfig(
        population_size=row.population_size,
        xp_coef=row.xp_coef,
        generation_timesteps=int(row.timesteps),
        **presets.paper_rollouts(task_id, row.envs),
        generation_ppo=presets.paper_ppo(
            PPORow(row.lr, _PAPER_EPOCHS, minibatches, row.ent, row.clip, True)
        ),
        **_ego_stage("paper", task_id),
        generation_iterations=_PAPER_ITERATIONS,
        ego_iterations=_PAPER_ITERATIONS,
    )


# quick: two CPU cores, see docs/baselines/brdiv.md for the measured runs.
_QUICK_PPO = presets.QUICK_PPO
# task -> (population size, generation updates, ego updates); 32 envs x 128 steps per pair and
# update, 64 x 128 per ego update (the `ego` quick preset). The XP coefficient is the paper's.
# LBF keeps the paper's 3 pairs; Overcooked steps cost about 3x LBF's on CPU, so its layouts
# use 2 pairs (4 rollouts per update, not 9) to fit the time.
_QUICK_BUDGET = presets.lbf_and_layouts(lbf=(3, 128, 240), overcooked=(2, 120, 120))
_QUICK_ENVS = 32


def _quick(task_id: str) -> BRDivConfig:
    size, generation_updates, ego_updates = _QUICK_BUDGET[task_id]
    shaping = presets.quick_method_shaping(task_id)
    return BRDivConfig(
        task_id=task_id,
        population_size=size,
        xp_coef=BRDIV[task_id].xp_coef,
        generation_timesteps=size**2 * _QUICK_ENVS * 128 * generation_updates,
        num_envs=_QUICK_ENVS,
        rollout_length=128,
        generation_ppo=_QUICK_PPO,
        **_ego_stage("quick", task_id, total_timesteps=64 * 128 * ego_updates, shaping=shaping),
        generation_iterations=4,
        ego_iterations=4,
        shaping=shaping,
    )


_MEDIUM_ITERATIONS = 8  # ours: each stage in 8 iterations (checkpoints, --keep-every curves)


def _medium(task_id: str) -> BRDivConfig:
    """The paper's population size and a tenth of its generation steps (whole updates of quick's
    32 envs x 128 steps per pair), quick's PPO settings, the medium ego stage
    (`presets.medium_ego`)."""
    quick = _quick(task_id)
    row = BRDIV[task_id]
    n = row.population_size
    batch = n * n * quick.num_envs * quick.rollout_length
    return dataclasses.replace(
        quick,
        population_size=n,
        generation_timesteps=presets.whole(presets.MEDIUM_FRACTION * row.timesteps, batch),
        **presets.flat_ego(presets.medium_ego(task_id)),
        generation_iterations=_MEDIUM_ITERATIONS,
        ego_iterations=_MEDIUM_ITERATIONS,
    )


PRESETS: dict[str, dict[str, BRDivConfig]] = presets.per_task(
    {"paper": _paper, "quick": _quick, "medium": _medium}
)
"""preset name -> task id -> config."""
