"""The presets of CoMeDi (`aht_bench.algorithms.comedi`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms.comedi.config import (
    ROLLOUTS_PER_UPDATE,
    CoMeDiConfig,
)
from aht_bench.algorithms.comedi.paper_table import COMEDI
from aht_bench.training import presets
from aht_bench.training.config import EgoConfig
from aht_bench.training.paper_tables import PPORow
from aht_bench.training.report import Curve, Report

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

_EGO_FIELDS = ("total_timesteps", "num_envs", "ppo", "hidden")
"""The ego preset's fields CoMeDi's config holds (its ego stage shares `rollout_length` with the
teammates and plays `PARTNER_SEAT`)."""
_PAPER_EGO_ITERATIONS = 10  # not the paper's: checkpoints of the ego stage (one per 10%)


def _paper(task_id: str) -> CoMeDiConfig:
    row = COMEDI[task_id]
    ego = presets.get("ego", "paper", task_id)
    assert isinstance(ego, EgoConfig)
    return CoMeDiConfig(
        task_id=task_id,
        population_size=10,
        teammate_timesteps=int(row.timesteps_per_iteration),
        num_envs=48,
        rollout_length=ego.rollout_length,  # 128 on LBF, 400 on Overcooked (presets.py)
        teammate_ppo=presets.paper_ppo(PPORow(row.lr, 15, 8, row.ent, row.clip, False)),
        xp_coef=row.alpha,
        mp_coef=row.beta,
        ego_iterations=_PAPER_EGO_ITERATIONS,
        **presets.flat_ego(ego, *_EGO_FIELDS),
    )


# quick: two CPU cores, minutes per seed (docs/baselines/comedi.md has the measured runs). Not
# the paper's settings: 3 teammates, 32 envs x 128 steps, 4 epochs x 4 minibatches, lr 1e-3
# constant (the paper's CoMeDi does not anneal), clip 0.2, ent 0.01, the paper's alpha and beta;
# the ego is the `ego` quick preset's PPO on a smaller budget. With 64 envs, 64 updates per
# teammate and lr annealed, LBF teammates barely learned (SP return 0.05); 32 envs and 128
# updates on the same env steps gave 0.20 and 0.27 (docs/baselines/comedi.md).
_QUICK_PPO = dataclasses.replace(presets.QUICK_PPO, anneal_lr=False)
# task -> (teammate updates, ego timesteps); 32 envs x 128 steps
_QUICK_BUDGET = presets.lbf_and_layouts(lbf=(128, 128 * 8_192), overcooked=(64, 64 * 8_192))


def _quick(task_id: str) -> CoMeDiConfig:
    updates, ego_steps = _QUICK_BUDGET[task_id]
    row = COMEDI[task_id]
    ego = presets.get("ego", "quick", task_id)
    assert isinstance(ego, EgoConfig)
    rollouts = presets.quick_rollouts(task_id, num_envs=32)
    return CoMeDiConfig(
        population_size=3,
        teammate_timesteps=updates * ROLLOUTS_PER_UPDATE * rollouts["num_envs"] * 128,
        teammate_ppo=_QUICK_PPO,
        xp_coef=row.alpha,
        mp_coef=row.beta,
        ego_iterations=2,
        **rollouts,
        **presets.flat_ego(dataclasses.replace(ego, total_timesteps=ego_steps), *_EGO_FIELDS),
    )


def _medium(task_id: str) -> CoMeDiConfig:
    """The paper's 10 teammates with a tenth of its steps each (`presets.medium_units`: more
    than quick's teammate), whole updates of quick's rollouts, quick's PPO settings; the
    medium ego stage (`presets.medium_ego`) in the paper preset's 10 chunks."""
    quick = _quick(task_id)
    row = COMEDI[task_id]
    teammates, steps = presets.medium_units(
        10, row.timesteps_per_iteration, quick.teammate_timesteps
    )
    batch = ROLLOUTS_PER_UPDATE * quick.num_envs * quick.rollout_length
    ego = presets.medium_ego(task_id)
    return dataclasses.replace(
        quick,
        population_size=teammates,
        teammate_timesteps=presets.whole(steps, batch),
        **presets.flat_ego(ego, "total_timesteps", "ppo"),
        ego_iterations=_PAPER_EGO_ITERATIONS,
    )


PRESETS: dict[str, dict[str, CoMeDiConfig]] = presets.per_task(
    {"paper": _paper, "quick": _quick, "medium": _medium}
)
"""preset name -> task id -> config."""


REPORT = Report(
    generation_curves=(
        Curve("sp_return", "SP return (teammate x its BR)", "C0", progress="sp"),
        Curve("xp_return", "XP return (teammate x pi^comp)", "C1", progress="xp"),
        Curve("mp_return", "MP return (teammate x BR from mixed-play states)", "C4"),
    ),
)
"""How `aht_bench.runs.train` drives CoMeDi (`aht-bench train comedi`): one
generation iteration per teammate, then the ego chunks; the curves of curve.png."""
