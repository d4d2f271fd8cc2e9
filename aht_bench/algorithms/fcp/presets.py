"""The presets of FCP (`aht_bench.algorithms.fcp`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses

from aht_bench.algorithms.fcp.config import (
    FCPConfig,
)
from aht_bench.algorithms.fcp.paper_table import FCP
from aht_bench.training import presets
from aht_bench.training.config import EgoConfig, IPPOConfig

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Not in the table (ours): the ego stage in chunks of about 2M env steps (30 of the 6e7 ego
# steps on LBF, CR, AA; 60 of 1.2e8 on CC, CoR, FC); IPPO's rollout length, network and the
# PPO settings no table gives are the IPPO preset's (see `aht_bench.training.presets`).
_PAPER_EGO_CHUNK_STEPS = 2_000_000
_EGO_FIELDS = ("total_timesteps", "num_envs", "rollout_length", "ppo", "hidden")
"""The ego preset's fields FCP's paper preset takes (the ego's seat is FCP's default)."""


def _paper(task_id: str) -> FCPConfig:
    row = FCP[task_id]
    ippo_preset = presets.get("ippo", "paper", task_id)
    ego_preset = presets.get("ego", "paper", task_id)
    assert isinstance(ippo_preset, IPPOConfig) and isinstance(ego_preset, EgoConfig)
    return FCPConfig(
        task_id=task_id,
        num_ippo_seeds=row.seeds,
        num_checkpoints=row.checkpoints,
        teammate_timesteps=int(row.timesteps_per_agent),
        teammate_num_envs=row.envs,
        teammate_rollout_length=ippo_preset.rollout_length,
        teammate_ppo=presets.paper_ppo(row.ppo),
        teammate_hidden=ippo_preset.hidden,
        **presets.flat_ego(ego_preset, *_EGO_FIELDS),
        ego_iterations=ego_preset.total_timesteps // _PAPER_EGO_CHUNK_STEPS,
        shaped_reward_coef=ippo_preset.shaped_reward_coef,
    )


# quick: two CPU cores, a few minutes per task; docs/baselines/fcp.md gives the measured times
# and returns. IPPO and the ego use the quick presets' PPO settings (64 envs x 128 steps,
# 4 epochs x 4 minibatches, lr 1e-3 annealed); the budgets are ours.
# task -> (IPPO runs, joint env steps per IPPO run, ego env steps, ego iterations)
_QUICK_BUDGET = presets.with_v2(
    {
        "lbf-v1": (4, 1_000_000, 3_000_000, 4),
        "overcooked-cramped_room-v1": (3, 800_000, 1_600_000, 4),
        "overcooked-asymm_advantages-v1": (3, 1_000_000, 2_000_000, 4),
        "overcooked-counter_circuit-v1": (3, 2_000_000, 3_000_000, 4),
        "overcooked-coord_ring-v1": (3, 2_000_000, 3_000_000, 4),
        "overcooked-forced_coord-v1": (3, 2_000_000, 3_000_000, 4),
    }
)


def _quick(task_id: str) -> FCPConfig:
    teams, team_steps, ego_steps, ego_iterations = _QUICK_BUDGET[task_id]
    ippo_quick = presets.get("ippo", "quick", task_id)
    ego_quick = presets.get("ego", "quick", task_id)
    assert isinstance(ego_quick, EgoConfig)
    return FCPConfig(
        task_id=task_id,
        num_ippo_seeds=teams,
        num_checkpoints=5,
        teammate_timesteps=team_steps,
        teammate_num_envs=ippo_quick.num_envs,
        teammate_rollout_length=ippo_quick.rollout_length,
        teammate_ppo=ippo_quick.ppo,
        **presets.flat_ego(ego_quick, "num_envs", "rollout_length", "ppo"),
        ego_timesteps=ego_steps,
        ego_iterations=ego_iterations,
        shaping=presets.quick_method_shaping(task_id),
    )


_MEDIUM_EGO_ITERATIONS = 8  # ours: the ego stage in 8 chunks (checkpoints, --keep-every curves)


def _medium(task_id: str) -> FCPConfig:
    """As many IPPO teams of quick's size as a tenth of the paper's team steps buys
    (`presets.medium_units`; a tenth of the paper's 2-4M-step team is below quick's), the
    paper's 5 checkpoints each, and the medium ego stage (`presets.medium_ego`)."""
    quick = _quick(task_id)
    row = FCP[task_id]
    teams, _ = presets.medium_units(row.seeds, row.timesteps_per_agent, quick.teammate_timesteps)
    ego = presets.medium_ego(task_id)
    return dataclasses.replace(
        quick,
        num_ippo_seeds=teams,
        num_checkpoints=row.checkpoints,
        **presets.flat_ego(ego, "total_timesteps", "ppo"),
        ego_iterations=_MEDIUM_EGO_ITERATIONS,
    )


PRESETS: dict[str, dict[str, FCPConfig]] = presets.per_task(
    {"paper": _paper, "quick": _quick, "medium": _medium}
)
"""preset name -> task id -> config."""
