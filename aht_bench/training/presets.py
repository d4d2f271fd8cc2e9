"""Presets as data: the paper's hyperparameter tables and quick settings, per algorithm and task.

    presets.get("ippo", "paper", "cramped_room")   # -> IPPOConfig
    presets.get("ego", "quick", "lbf-v1")          # -> EgoConfig

`paper` (App. "Hyperparameters"; bold = selected values; the rows are in `paper_tables`):

- `ippo`: Table ippo_hyperparams (Timesteps, Number envs, Epochs, Minibatches, Clip-Eps,
  Ent-Coef, LR, Anneal LR).
- `ego`: Table ppo_ego_tm_hyperparams, the PPO ego agent shared by all teammate generation
  methods (Total Timesteps, Num Envs, LR, Epochs, Minibatches, Ent-Coef, Clip-Eps, Anneal LR).
- `br`: the paper gives no best-response table; the IPPO table (the base algorithm of every
  method) is used.

What the tables do not give is ours and the same in every preset: rollout length (registered
with the task, `envs.TrainingDefaults`: 128 steps on LBF, one 400-step episode on Overcooked),
gamma 0.99 and GAE lambda 0.95 (from the paper's text), value-loss weight 0.5, gradient-norm
clip 0.5 and per-minibatch advantage normalisation (PureJaxRL's), network sizes (MLP 64-64; GRU
64), shaped reward on with coefficient 1.

`quick`: minutes on two CPU cores, tuned here for the learning checks in
tests/algorithms/test_quick_presets.py (IPPO: cramped_room base return >= 150, LBF >= 0.4;
BR to `independent_agent_0` on cramped_room >= 100); not the paper's settings.

May import aht_bench.envs, aht_bench.training.config and aht_bench.training.paper_tables only.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from aht_bench.training import paper_tables
from aht_bench.training.config import (
    EGO_STAGE_FIELDS,
    BRConfig,
    EgoConfig,
    IPPOConfig,
    PPOConfig,
    RunConfig,
)
from aht_bench.training.paper_tables import OpenEndedRow, PPORow, StageRow, with_v2

if TYPE_CHECKING:
    from aht_bench.envs import Task

T = TypeVar("T")
C = TypeVar("C")

PAPER_TASKS_V1 = (
    "lbf-v1",
    "overcooked-cramped_room-v1",
    "overcooked-asymm_advantages-v1",
    "overcooked-counter_circuit-v1",
    "overcooked-coord_ring-v1",
    "overcooked-forced_coord-v1",
)
"""The paper's six tasks under protocol v1."""
PAPER_TASKS_V2 = ("lbf-v1", *(t.replace("-v1", "-v2") for t in PAPER_TASKS_V1[1:]))
"""The paper's six tasks under protocol v2 (LBF is unchanged: its v2 is a new heldout set)."""
PAPER_TASKS = PAPER_TASKS_V1 + PAPER_TASKS_V2[1:]
"""Every task id with presets: the paper's tables are per layout, so an
`overcooked-<layout>-v2` preset has its v1 layout's hyperparameters."""


def lbf_and_layouts(lbf: T, overcooked: T) -> dict[str, T]:
    """A per-task table with one row for LBF and one shared by every Overcooked layout (v1 and
    v2), as the methods' quick budgets are."""
    return with_v2({"lbf-v1": lbf, **{t: overcooked for t in PAPER_TASKS_V1[1:]}})


def paper_rollout_length(task_id: str) -> int:
    """Env steps per env and rollout of every `paper` preset (not in the paper's tables): the
    task's registered `rollout_length` (`envs.training_defaults`: 128 on LBF, one 400-step
    episode on Overcooked)."""
    from aht_bench.envs import training_defaults

    return training_defaults(task_id).rollout_length


def paper_rollouts(task_id: str, num_envs: int) -> dict[str, Any]:
    """The task fields of a `paper` preset on `task_id` with the table's `num_envs`."""
    return {
        "task_id": task_id,
        "num_envs": num_envs,
        "rollout_length": paper_rollout_length(task_id),
    }


def paper_ppo(row: PPORow) -> PPOConfig:
    """The `PPOConfig` of the PPO columns of a row of the paper's tables (`paper_tables.PPORow`);
    the rest is what every preset shares (module docstring)."""
    return PPOConfig(
        learning_rate=row.lr,
        anneal_lr=row.anneal,
        num_epochs=row.epochs,
        num_minibatches=row.minibatches,
        clip_eps=row.clip,
        ent_coef=row.ent,
    )


def paper_open_ended(task_id: str, row: OpenEndedRow) -> dict[str, Any]:
    """The fields the `paper` presets of open-ended methods share (an `OpenEndedRow`), from
    their table's row on `task_id`: iterations, both learners' timesteps and PPO settings, and
    `paper_rollouts`."""
    return {
        "iterations": row.iterations,
        "teammate_timesteps": int(row.teammate_timesteps),
        "ego_timesteps": int(row.ego_timesteps),
        "teammate_ppo": paper_ppo(row.teammate_ppo),
        "ego_ppo": paper_ppo(row.ego_ppo),
        **paper_rollouts(task_id, row.envs),
    }


def flat_ego(ego: EgoConfig, *fields: str) -> dict[str, Any]:
    """The ego stage `ego` (an `ego` preset) as a method config's flat `ego_*` keyword
    arguments (`EGO_STAGE_FIELDS`): the `EgoConfig` fields named in `fields`, or all of them."""
    chosen = fields or tuple(EGO_STAGE_FIELDS)
    return {EGO_STAGE_FIELDS[name]: getattr(ego, name) for name in chosen}


def per_task(makers: dict[str, Callable[[str], T]]) -> dict[str, dict[str, T]]:
    """preset name -> task id -> `makers[name](task id)`, over every task id with presets
    (`PAPER_TASKS`)."""
    return {name: {t: make(t) for t in PAPER_TASKS} for name, make in makers.items()}


def _paper_config(cls: type[RunConfig], task_id: str, row: StageRow) -> RunConfig:
    return cls(
        task_id=task_id,
        total_timesteps=int(row.timesteps),
        num_envs=row.envs,
        rollout_length=paper_rollout_length(task_id),
        ppo=paper_ppo(row.ppo),
    )


def _paper_ippo(cls: type[IPPOConfig] | type[BRConfig], task_id: str) -> RunConfig:
    return _paper_config(cls, task_id, paper_tables.IPPO[task_id])


def _paper_ego(task_id: str) -> RunConfig:
    return _paper_config(EgoConfig, task_id, paper_tables.EGO[task_id])


# quick: 64 envs, 128-step rollouts, 4 epochs x 4 minibatches (PureJaxRL's), lr 1e-3 annealed
# (2.5e-4 reached only 0.30 on LBF in 3M steps; 2 epochs only 0.27); budgets sized for minutes
# on two CPU cores. Measured (one seed): LBF 0.48 after 3M steps; cramped_room 236 after 1.8M.
QUICK_PPO = PPOConfig(
    learning_rate=1e-3, anneal_lr=True, num_epochs=4, num_minibatches=4, clip_eps=0.2, ent_coef=0.01
)
"""The PPO settings of every `quick` preset (the methods' too)."""
QUICK_EGO_PPO = dataclasses.replace(QUICK_PPO, learning_rate=5e-4, anneal_lr=False)
"""The recurrent ego's PPO settings in the open-ended methods' `quick` presets
(`quick_open_ended`): a lower constant learning rate, the ego's partners changing under it."""
_QUICK_BUDGET = with_v2(
    {
        "lbf-v1": 3_000_000,
        "overcooked-cramped_room-v1": 2_500_000,
        "overcooked-asymm_advantages-v1": 4_000_000,
        "overcooked-counter_circuit-v1": 6_000_000,
        "overcooked-coord_ring-v1": 6_000_000,
        "overcooked-forced_coord-v1": 6_000_000,
        "sabotage-v1": 200_000,
    }
)


# The methods' quick presets train every learner on coord_ring,
# forced_coord and counter_circuit with pickups off a counter unpaid. With the paper's shaping
# (counter_pickup 1) the methods' quick runs on coord_ring and forced_coord kept a sparse
# training return of 0 (0.05 at best over 14 runs): the learners settle on dropping an item on
# a counter and picking it up again (+0.1 every second step) and their entropy collapses
# (benchmarks/results/hard_layout_quick_shaping.md). The `ippo`, `br` and `ego` quick presets
# keep the paper's shaping: the heldout v1 recipes are built from them and a published recipe
# never changes. The v2 tasks pay no counter pickup in the task itself (V2_SHAPING), so they
# need no entry here.
QUICK_METHOD_SHAPING: dict[str, tuple[tuple[str, float], ...]] = {
    "overcooked-counter_circuit-v1": (("counter_pickup", 0.0),),
    "overcooked-coord_ring-v1": (("counter_pickup", 0.0),),
    "overcooked-forced_coord-v1": (("counter_pickup", 0.0),),
}
"""task id -> `shaping` of every method's `quick` preset on it (absent: the paper's)."""


def quick_method_shaping(task_id: str) -> tuple[tuple[str, float], ...]:
    """The shaped-reward coefficients the methods' `quick` presets use on `task_id`."""
    return QUICK_METHOD_SHAPING.get(task_id, ())


def quick_rollouts(task_id: str, num_envs: int = 64) -> dict[str, Any]:
    """The task fields of a method's `quick` preset on `task_id`: `num_envs` x 128-step
    rollouts and the methods' quick shaping."""
    shaping = quick_method_shaping(task_id)
    return {"task_id": task_id, "num_envs": num_envs, "rollout_length": 128, "shaping": shaping}


def quick_open_ended(task_id: str) -> dict[str, Any]:
    """The fields the open-ended methods' `quick` presets share (teammate, ego and rollouts):
    `quick_rollouts`, `QUICK_PPO` for the teammate and `QUICK_EGO_PPO` for the ego."""
    return {**quick_rollouts(task_id), "teammate_ppo": QUICK_PPO, "ego_ppo": QUICK_EGO_PPO}


# medium: sized to two CPU cores for the reference agents on v2 (issue 51; the budget study in
# benchmarks/results/budget_study_v2.md): quick's per-step settings, the paper's structure as
# far as a tenth of its env steps allows. Every method's medium preset trains MEDIUM_FRACTION
# of its paper preset's env steps per seed (each card states the exact fraction).
MEDIUM_FRACTION = 0.1
"""The env steps per seed of every `medium` preset, as a fraction of the method's `paper`
preset on the same task."""


def medium_units(
    paper_units: int, paper_unit_steps: float, quick_unit_steps: float
) -> tuple[int, float]:
    """(units, env steps per unit) of a method's `medium` preset, a unit being what the method
    repeats (an open-ended iteration, a generated teammate, a population member): the paper's
    `paper_units` units of `MEDIUM_FRACTION` x `paper_unit_steps` each when that is at least
    quick's `quick_unit_steps` (what the quick presets found a unit needs on two cores), else
    as many units of quick's size as `MEDIUM_FRACTION` of the paper's steps buys (at least 1)."""
    unit = MEDIUM_FRACTION * paper_unit_steps
    if unit >= quick_unit_steps:
        return paper_units, unit
    total = MEDIUM_FRACTION * paper_units * paper_unit_steps
    return max(1, round(total / quick_unit_steps)), quick_unit_steps


def whole(steps: float, batch: int) -> int:
    """`steps` rounded to whole updates of `batch` env steps (at least one)."""
    return max(1, round(steps / batch)) * batch


def medium_ego(task_id: str) -> EgoConfig:
    """The ego stage of the two-stage methods' `medium` presets: the
    `ego` quick preset's per-step settings at `MEDIUM_FRACTION` of the paper's ego steps, with
    the open-ended methods' constant ego learning rate (`QUICK_EGO_PPO`: the paper's egos do not
    anneal, Table ppo_ego_tm_hyperparams)."""
    quick = _quick_ego(task_id)
    steps = MEDIUM_FRACTION * paper_tables.EGO[task_id].timesteps
    return dataclasses.replace(
        quick, total_timesteps=whole(steps, quick.batch_size), ppo=QUICK_EGO_PPO
    )


def _quick(cls: type[RunConfig], task_id: str) -> RunConfig:
    return cls(
        task_id=task_id,
        total_timesteps=_QUICK_BUDGET[task_id],
        num_envs=64,
        rollout_length=128,
        ppo=QUICK_PPO,
    )


def _quick_ego(task_id: str) -> EgoConfig:
    config = _quick(EgoConfig, task_id)
    assert isinstance(config, EgoConfig)
    return config


PRESETS: dict[tuple[str, str], dict[str, RunConfig]] = {
    ("ippo", "paper"): {t: _paper_ippo(IPPOConfig, t) for t in PAPER_TASKS},
    ("br", "paper"): {t: _paper_ippo(BRConfig, t) for t in PAPER_TASKS},
    ("ego", "paper"): {t: _paper_ego(t) for t in PAPER_TASKS},
    ("ippo", "quick"): {t: _quick(IPPOConfig, t) for t in _QUICK_BUDGET},
    ("br", "quick"): {t: _quick(BRConfig, t) for t in _QUICK_BUDGET},
    ("ego", "quick"): {t: _quick_ego(t) for t in _QUICK_BUDGET},
}
"""(algorithm, preset) -> task id -> config."""


def _choose(kind: str, name: str, known: list[str]) -> None:
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"no {kind} {name!r}.{hint} Known: {', '.join(known)}")


def lookup(
    owner: str,
    presets: Mapping[str, Mapping[str, C]],
    name: str,
    task: str | Task,
    **overrides: Any,
) -> C:
    """`presets[name][task id of task]` (`task`: a `Task`, or an id or alias) with keyword
    `overrides` replacing top-level fields (validated like any config): the one preset lookup
    of the suite (`get` here, `Method.preset` of every method). A KeyError that lists what
    exists, naming `owner` (the algorithm or method), if the preset or the task is unknown."""
    from aht_bench import envs

    if name not in presets:
        close = difflib.get_close_matches(name, list(presets), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no {owner} preset {name!r}.{hint} Known: {', '.join(presets)}")
    task_id = envs.task(task).id
    if task_id not in presets[name]:
        raise KeyError(
            f"the {name!r} {owner} preset has no {task_id!r}; it covers "
            f"{', '.join(sorted(presets[name]))}"
        )
    config = presets[name][task_id]
    return dataclasses.replace(config, **overrides) if overrides else config  # type: ignore[type-var]


def get(algorithm: str, preset: str, task: str | Task, **overrides: object) -> RunConfig:
    """The `preset` ("paper" or "quick") config of `algorithm` (ippo, br or ego) on `task` (a
    `Task`, or an id or alias), through `lookup`.

    Keyword `overrides` replace top-level fields (`total_timesteps=...`, `ppo=...`); the result
    is validated like any config.
    """
    _choose("algorithm", algorithm, sorted({a for a, _ in PRESETS}))
    return lookup(algorithm, tables(algorithm), preset, task, **overrides)


def tables(algorithm: str) -> dict[str, Any]:
    """preset name -> task id -> config of `algorithm` (ippo, br or ego), quick first (as every
    method lists its presets): what `get` looks up and each PPO stage's `Method` holds."""
    found = {p: table for (a, p), table in PRESETS.items() if a == algorithm}
    return dict(sorted(found.items(), key=lambda item: item[0] != "quick"))


def names() -> list[tuple[str, str, str]]:
    """Every (algorithm, preset, task id) that `get` knows."""
    return sorted((a, p, t) for (a, p), table in PRESETS.items() for t in table)
