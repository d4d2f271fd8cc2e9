"""Programmed (heuristic) teammates from the paper's evaluation set (App. "Evaluation Teammates").

    policy = make_heuristic("forced_coord", "independent_agent_0.6")
    carry = policy.init_carry(())
    action, carry, extras = policy.act(None, carry, obs, key)

`make_heuristic(task, name)` takes the paper's names:

- LBF (`lbf-v1`, `lbf-4p-v1`): `seq_agent_<order>` (or plain `<order>`) for the orders
  `LBF_HEURISTICS` (lexi, rlexi, col, rcol, nearest, farthest); see
  `aht_bench.policies.heuristics.lbf`.
- Overcooked (`overcooked-<layout>-v1` or the layout alias): `onion_agent_<p>`,
  `plate_agent_<p>`, `independent_agent_<p>` for any p in [0, 1], `random` and `static`; see
  `aht_bench.policies.heuristics.overcooked`.

`PAPER_HEURISTICS[task_id]` lists the heuristic teammates of the paper's evaluation set per task;
`heuristic_names(task)` what `make_heuristic` lists in its messages. docs/heuristics.md describes
them all.

May import jax, flax, numpy, aht_bench.envs and aht_bench.policies.core only.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from aht_bench.policies.core import Policy
from aht_bench.policies.heuristics.lbf import (
    LBF_HEURISTICS,
    SeqCarry,
    SequentialAgent,
    food_order,
    lbf_heuristic,
)
from aht_bench.policies.heuristics.overcooked import (
    P_ROLES,
    ROLES,
    SUBGOALS,
    OvercookedCarry,
    OvercookedHeuristic,
    RandomHeuristic,
    StaticHeuristic,
    overcooked_heuristic,
    overcooked_layout,
)

if TYPE_CHECKING:
    from aht_bench.envs import Task

_SEQ = tuple(f"seq_agent_{order}" for order in LBF_HEURISTICS)

PAPER_HEURISTICS: dict[str, tuple[str, ...]] = {
    "lbf-v1": _SEQ,
    "overcooked-cramped_room-v1": (
        "independent_agent_0.4",
        "independent_agent_0",
        "onion_agent_0.1",
        "plate_agent_0.1",
    ),
    "overcooked-asymm_advantages-v1": ("independent_agent_0", "onion_agent_0", "plate_agent_0"),
    "overcooked-counter_circuit-v1": (
        "independent_agent_0",
        "onion_agent_0",
        "plate_agent_0",
        "onion_agent_0.9",
        "plate_agent_0.9",
    ),
    "overcooked-coord_ring-v1": ("independent_agent_0", "onion_agent_0", "plate_agent_0"),
    "overcooked-forced_coord-v1": ("independent_agent_0.6",),
}
"""The heuristic teammates in the paper's evaluation sets (App. "Evaluation Teammates",
Table "normalization bounds"), per task id."""
# the paper's sets are per layout: each v2 Overcooked task lists its v1 layout's heuristics
PAPER_HEURISTICS.update(
    {t.replace("-v1", "-v2"): h for t, h in PAPER_HEURISTICS.items() if t.startswith("overcooked")}
)

_LBF_TASKS = {"lbf-v1": 2, "lbf-4p-v1": 4}  # task id -> players
_P_PATTERN = re.compile(r"(onion|plate|independent)_agent_(.+)")
_P_HINT = "or <onion|plate|independent>_agent_<p> for any p in [0, 1]"


def heuristic_names(task: str | Task) -> tuple[str, ...]:
    """The names `make_heuristic` lists for `task` (a `Task`, or an id or alias).

    LBF: every `seq_agent_<order>`; Overcooked: the paper's evaluation names for the layout,
    then `random` and `static` (any `<role>_agent_<p>` is accepted too).
    """
    from aht_bench import envs

    task_id = envs.task(task).id
    if task_id in _LBF_TASKS:
        return _SEQ
    if task_id.startswith("overcooked-"):
        return PAPER_HEURISTICS.get(task_id, ()) + ("random", "static")
    return ()


def _unknown(name: str, task_id: str, choices: tuple[str, ...], hint: str = "") -> ValueError:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    did_you_mean = f" Did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(choices) + (f", {hint}" if hint else "")
    return ValueError(
        f"unknown heuristic {name!r} for {task_id}; choose one of {listed}.{did_you_mean}"
    )


def make_heuristic(task: str | Task, name: str) -> Policy:
    """The heuristic teammate `name` (the paper's naming) for `task` (a `Task`, or an id or
    alias).

    LBF: "seq_agent_lexi" or "lexi", ...; Overcooked: "onion_agent_0.1", "plate_agent_0",
    "independent_agent_0.6", "random", "static". Unknown names raise a `ValueError` that lists
    the choices; unknown tasks raise `aht_bench.envs.UnknownTaskError`.
    """
    from aht_bench import envs

    task_id = envs.task(task).id
    if task_id in _LBF_TASKS:
        short = name.removeprefix("seq_agent_")
        if short not in LBF_HEURISTICS:
            raise _unknown(name, task_id, _SEQ)
        return lbf_heuristic(short, num_agents=_LBF_TASKS[task_id])
    if task_id.startswith("overcooked-"):
        if name in ("random", "static"):
            return overcooked_heuristic(task_id, name)
        match = _P_PATTERN.fullmatch(name)
        if match is None:
            raise _unknown(name, task_id, heuristic_names(task_id), _P_HINT)
        try:
            p = float(match.group(2))
        except ValueError:
            raise _unknown(name, task_id, heuristic_names(task_id), _P_HINT) from None
        if not 0.0 <= p <= 1.0:
            raise ValueError(
                f"heuristic {name!r} for {task_id}: the placement probability p = {p:g} must "
                "lie in [0, 1]"
            )
        return overcooked_heuristic(task_id, match.group(1), p)
    if task_id == "lbf-po-v1":
        raise ValueError(
            "no heuristic teammates for lbf-po-v1: the LBF heuristics read full-view "
            "observations (see aht_bench.policies.heuristics.lbf); use lbf-v1 or lbf-4p-v1"
        )
    raise ValueError(
        f"no heuristic teammates for {task_id}; they exist for "
        f"{', '.join(sorted(_LBF_TASKS))} and the Overcooked tasks"
    )


__all__ = [
    "LBF_HEURISTICS",
    "PAPER_HEURISTICS",
    "P_ROLES",
    "ROLES",
    "SUBGOALS",
    "OvercookedCarry",
    "OvercookedHeuristic",
    "RandomHeuristic",
    "SeqCarry",
    "SequentialAgent",
    "StaticHeuristic",
    "food_order",
    "heuristic_names",
    "lbf_heuristic",
    "make_heuristic",
    "overcooked_heuristic",
    "overcooked_layout",
]
