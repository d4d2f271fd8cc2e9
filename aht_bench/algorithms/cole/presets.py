"""The presets of COLE (`aht_bench.algorithms.cole`): the paper's tables and the quick budgets.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.cole.config import (
    ColeConfig,
)
from aht_bench.training import presets

# -------------------------------------------------------------------------------------- presets

PAPER_TASKS = presets.PAPER_TASKS

# Table cole_hyperparams, per task: (timesteps per iteration, population size, num envs, lr,
# epochs, minibatches, ent-coef, eps-clip, anneal lr, alpha, c_UCT). The table bolds only the
# values it searched (LBF, CR, CoR); the others are its single values.
_PAPER_ROWS = presets.with_v2(
    {
        "lbf-v1": (1.8e7, 20, 64, 1e-3, 15, 8, 0.05, 0.05, False, 1.5, 0.4),
        "overcooked-cramped_room-v1": (1.85e7, 13, 64, 1e-3, 15, 8, 0.05, 0.05, False, 0.1, 0.1),
        "overcooked-asymm_advantages-v1": (1.85e7, 13, 64, 1e-3, 15, 8, 0.01, 0.3, False, 0.1, 0.3),
        "overcooked-counter_circuit-v1": (3.38e7, 13, 64, 1e-3, 15, 8, 0.01, 0.01, False, 0.1, 0.3),
        "overcooked-coord_ring-v1": (3.38e7, 13, 64, 1e-3, 15, 8, 0.01, 0.1, False, 0.1, 0.3),
        "overcooked-forced_coord-v1": (3.38e7, 13, 64, 1e-3, 15, 8, 0.01, 0.05, False, 0.1, 0.3),
    }
)


def _paper(task_id: str) -> ColeConfig:
    steps, size, envs, lr, epochs, minibatches, ent, clip, anneal, alpha, c_uct = _PAPER_ROWS[
        task_id
    ]
    # not in the table: rollout length (presets' 128 on LBF, one 400-step episode on
    # Overcooked), eval_envs 64, MLP 64-64, gamma/GAE lambda/value and gradient clips as in
    # every preset (aht_bench.training.presets)
    return ColeConfig(
        population_size=size,
        timesteps_per_iteration=int(steps),
        **presets.paper_rollouts(task_id, envs),
        ppo=presets.paper_ppo(
            lr=lr, epochs=epochs, minibatches=minibatches, ent=ent, clip=clip, anneal=anneal
        ),
        alpha=alpha,
        c_uct=c_uct,
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
    alpha, c_uct = _PAPER_ROWS[task_id][9:]
    return ColeConfig(
        population_size=size,
        timesteps_per_iteration=steps,
        ppo=_QUICK_PPO,
        alpha=alpha,
        c_uct=c_uct,
        eval_envs=32,
        **presets.quick_rollouts(task_id),
    )


PRESETS: dict[str, dict[str, ColeConfig]] = presets.per_task({"paper": _paper, "quick": _quick})
"""preset name -> task id -> config."""
