"""What a sweep costs before it runs: each run's env steps and an estimated time from measured
throughput (`estimate`), and the dry-run table (`dry_run_lines`).

The rates (`throughput.json`, written by `benchmarks/sweep_throughput.py`) are the bundled
reference runs' own measurements: env steps per second per seed of each method on each task at
the quick preset, on the machine their cards name (two CPU cores). An estimate is a run's env
steps at that rate: on such a machine a one-seed run is somewhat faster, a paper-scale run on a
GPU far faster; a method or task without a measured rate gets no estimate, never a guess.

May import the standard library, aht_bench.sweeps and (lazily) aht_bench.envs.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from aht_bench.sweeps.spec import Sweep, SweepRun


@functools.cache
def _throughput() -> dict[str, Any]:
    text = (resources.files("aht_bench.sweeps") / "throughput.json").read_text()
    return json.loads(text)


def rates() -> dict[str, dict[str, Any]]:
    """ "method/task id" -> the bundled quick run's rate (`throughput.json`)."""
    return _throughput()["rates"]


def measured() -> dict[str, dict[str, Any]]:
    """ "method/kind/preset" -> a short run's rate at that preset's per-step settings
    (`benchmarks/sweep_throughput.py --measure PRESET`; kind "lbf" or "overcooked")."""
    return _throughput().get("measured", {})


QUICK_SETTINGS = ("quick", "medium")
"""Presets with quick's per-step settings: the bundled quick runs' rates fit them."""


def rate_of(method: str, task_id: str, preset: str = "quick") -> tuple[float, str] | None:
    """(env steps per second per seed, where it was measured) for `method` on `task_id` at
    `preset`: a preset with quick's per-step settings at the bundled run's rate on the task (or
    on the same layout's v1 task), else the rate measured for the preset on the task's kind
    (LBF or Overcooked); None without a measurement (an estimate is never a guess)."""
    if preset in QUICK_SETTINGS:
        table = rates()
        for key, note in ((task_id, ""), (task_id.replace("-v2", "-v1"), " (its v1 layout)")):
            entry = table.get(f"{method}/{key}")
            if entry is not None:
                via = "" if preset == "quick" else " (quick's per-step settings)"
                return float(entry["env_steps_per_second_per_seed"]), entry["source"] + note + via
    from aht_bench.envs import NoTrainingDefaultsError, training_defaults  # jax: only here

    try:
        kind = training_defaults(task_id).family  # "lbf" or "overcooked"
    except NoTrainingDefaultsError:  # e.g. the sabotage game: its own preset, no measured rate
        return None
    entry = measured().get(f"{method}/{kind}/{preset}")
    if entry is not None:
        where = f"{preset} measured on {kind} (sweep_throughput.py --measure {preset})"
        return float(entry["env_steps_per_second_per_seed"]), where
    return None


def estimate(run: SweepRun) -> float | None:
    """Estimated seconds of `run` at its method's measured rate on its task and preset (None:
    no rate)."""
    rate = rate_of(run.method, run.task_id, run.preset)
    return None if rate is None else run.env_steps / rate[0]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _preset_note(presets: set[str]) -> str:
    """What the quick rates mean for the presets of a sweep."""
    notes = []
    if "medium" in presets:
        notes.append("medium runs at quick's per-step settings, so at quick's rates")
    if "paper" in presets:
        notes.append(
            "a paper-preset IPPO team took as long on an H200 GPU machine as on these cores "
            "(benchmarks/results/heldout_v2_device_units.txt): do not expect a GPU to shorten "
            "paper runs by much"
        )
    return "".join(f"; {n}" for n in notes)


def dry_run_lines(sweep: Sweep, workers: int) -> list[str]:
    """The grid of `sweep` (one row per method, task and variant, its seeds together) with
    each run's env steps and estimated time, and the totals."""
    rows: dict[tuple[str, str, str], list[SweepRun]] = {}
    for run in sweep.runs:
        rows.setdefault((run.method, run.task_id, run.variant), []).append(run)
    head = ("method", "task", "variant", "seeds", "env steps/run", "est./run", "rate from")
    table: list[tuple[str, ...]] = [head]
    total_steps, total_s, unknown = 0, 0.0, 0
    for (method, task_id, variant), runs in rows.items():
        first = runs[0]
        rate = rate_of(method, task_id, first.preset)
        seconds = None if rate is None else first.env_steps / rate[0]
        total_steps += sum(r.env_steps * r.num_seeds for r in runs)
        if seconds is None:
            unknown += len(runs)
        else:
            total_s += seconds * len(runs)
        table.append(
            (
                method,
                task_id,
                variant,
                ",".join(str(s) for r in runs for s in r.seeds)
                + (" (vmapped)" if first.num_seeds > 1 else ""),
                f"{first.env_steps:,}",
                _duration(seconds),
                rate[1] if rate else "no measured rate",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]
    lines.append("")
    lines.append(
        f"{len(sweep.runs)} runs ({'/'.join(dict.fromkeys(r.preset for r in sweep.runs))} "
        f"preset), {total_steps:,} env steps in "
        f"all; scored on heldout {sweep.heldout} with {sweep.episodes} episodes per teammate "
        "and seat"
    )
    known = len(sweep.runs) - unknown
    lines.append(
        f"estimated: {_duration(total_s)} of run time for the {known} runs with a measured rate "
        f"({_duration(total_s / max(workers, 1))} on {workers} worker(s)), at the rates "
        "measured on 2 CPU cores for each run's preset (the column 'rate from'; "
        "aht_bench/sweeps/throughput.json)"
        + _preset_note({r.preset for r in sweep.runs})
        + (f"; {unknown} runs have no measured rate" if unknown else "")
    )
    return lines
