"""The report of a sweep (`aht-bench sweep report FOLDER`): the comparison table and the
paper-style figures, from the records the sweep's runs left.

For each method variant and task, the records of its seeds give a (seeds, members) matrix:
seed i's mean BRProx with member m (over its episodes and seatings). A cell is the mean over
members of the mean over seeds, with a 95% stratified bootstrap CI that resamples seeds within
each member: the paper's Fig. core-result ("95% stratified bootstrap confidence intervals over
six training seeds, treating each evaluation teammate as a separate evaluation setting"). The
same is done with the base return (the paper's table of unnormalised returns).

Every record is checked before it counts: its payload hash (`read_record`), that it scores
the run's own ego file on the run's task, and that all records of a task were scored against
the same teammate set (same manifest). A run without a record yet is listed, not guessed.

Writes into OUT (default FOLDER/report):

    report.md               both tables, the runs without a record, how it was made
    report.json             every cell: seeds, per-seed member scores, estimates and CIs
    comparison.png          per task, one bar per method variant with its CI
    grid-METHOD-TASK.png    for a method whose variants vary two fields (e.g. the
                            competence weights of RQ3): its mean score over that grid

May import numpy, the standard library, aht_bench.files, aht_bench.evaluation and
aht_bench.sweeps.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.evaluation import scores
from aht_bench.evaluation.record import (
    ResultFileError,
    agent_files,
    is_multi_seed,
    read_record,
    returns_of,
    score_matrix_of,
)
from aht_bench.files import atomic_write_bytes
from aht_bench.sweeps.execute import EGO_FILE, RECORD, SWEEP_FORMAT, SweepError

REPORT_FORMAT = "aht-bench-sweep-report"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One method variant on one task: its seeds' scores and their estimates."""

    method: str
    variant: str
    grid: tuple[tuple[str, str], ...]
    """The variant's grid values (field, value), in the spec's order."""
    task_id: str
    seeds: tuple[int, ...]
    members: tuple[str, ...]
    normalized: np.ndarray
    """(seeds, members) mean BRProx."""
    base_return: np.ndarray
    """(seeds, members) mean base return."""

    @property
    def label(self) -> str:
        return self.method if self.variant == "base" else f"{self.method} [{self.variant}]"


@dataclasses.dataclass(frozen=True)
class Report:
    """A sweep's cells (seeds with a record only) and the runs without a record."""

    name: str
    source: str
    cells: tuple[Cell, ...]
    missing: tuple[str, ...]
    runs: int
    reps: int
    seed: int

    def tasks(self) -> list[str]:
        return list(dict.fromkeys(c.task_id for c in self.cells))

    def labels(self) -> list[str]:
        return list(dict.fromkeys(c.label for c in self.cells))

    def cell(self, label: str, task_id: str) -> Cell | None:
        return next((c for c in self.cells if (c.label, c.task_id) == (label, task_id)), None)


def read_sweep(folder: Path) -> dict[str, Any]:
    """The sweep.json of the sweep folder `folder`."""
    path = folder / "sweep.json"
    try:
        held = json.loads(path.read_text())
    except FileNotFoundError:
        raise SweepError(
            f"{folder} holds no sweep (no sweep.json): give the --out folder of `aht-bench "
            "sweep SPEC`"
        ) from None
    except (OSError, ValueError) as e:
        raise SweepError(f"{path} is not readable JSON ({e})") from None
    if not isinstance(held, dict) or held.get("format") != SWEEP_FORMAT:
        raise SweepError(f'{path} is not a sweep file (no "format": "{SWEEP_FORMAT}")')
    return held


def grid_of(run: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The grid values of a run of sweep.json: the trailing overrides its variant names (after
    the preset a spec with parts puts first)."""
    pairs = [tuple(kv) for kv in run["overrides"]]
    variant = str(run["variant"])
    tag = f"{run['preset']},"
    names = {variant, variant[len(tag) :]} if variant.startswith(tag) else {variant}
    for k in range(len(pairs), 0, -1):
        if ",".join(f"{f}={v}" for f, v in pairs[-k:]) in names:
            return tuple((str(f), str(v)) for f, v in pairs[-k:])
    return ()


def seeds_of(run: dict[str, Any]) -> tuple[int, ...]:
    """The seed labels of a run of sweep.json: its seed, or S .. S + K - 1 for K vmapped seeds."""
    first = int(run["seed"])
    return tuple(range(first, first + int(run.get("num_seeds", 1))))


def _checked_record(folder: Path, run: dict[str, Any]) -> dict[str, Any]:
    """The record of `run`, checked to score the run's own ego on the run's task."""
    path = folder / run["name"] / RECORD
    try:
        record = read_record(path)
    except ResultFileError as e:
        raise SweepError(f"{run['name']}: {e}") from None
    payload = record["payload"]
    if payload.get("task_id") != run["task_id"]:
        raise SweepError(
            f"{path} scores task {payload.get('task_id')!r}, not the run's {run['task_id']!r}: "
            "delete it and run the sweep again to evaluate the run"
        )
    final = folder / run["name"] / Path(EGO_FILE).parent
    egos = [final / f"seed{k}-ego.safetensors" for k in range(len(seeds_of(run)))]
    scored = [f.get("sha256") for f in agent_files(payload)]
    if len(scored) != len(egos):
        raise SweepError(
            f"{path} scores {len(scored)} agent file(s), not the run's {len(egos)} ego(s): "
            "delete the record and run the sweep again to evaluate the run"
        )
    for ego, sha in zip(egos, scored, strict=True):
        if not ego.is_file() or hashlib.sha256(ego.read_bytes()).hexdigest() != sha:
            raise SweepError(
                f"{path} does not score the run's ego ({ego}: "
                f"{'missing' if not ego.is_file() else 'another sha256'}): delete the record "
                "and run the sweep again to evaluate the run"
            )
    return record


def _cell(runs: list[dict[str, Any]], records: list[dict[str, Any]]) -> Cell:
    """The cell of one method variant on one task from its runs with a record."""
    first = runs[0]
    names = [tuple(m["name"] for m in r["payload"]["members"]) for r in records]
    if len(set(names)) != 1:
        raise SweepError(
            f"{first['method']} [{first['variant']}] on {first['task_id']}: the seeds' "
            "records name different teammates; evaluate every run on the same set"
        )
    normalized = np.concatenate([_seed_rows(r, score_matrix_of(r)) for r in records])
    base = np.concatenate([_base_rows(r) for r in records])
    return Cell(
        first["method"],
        first["variant"],
        grid_of(first),
        first["task_id"],
        tuple(s for r in runs for s in seeds_of(r)),
        names[0],
        normalized,
        base,
    )


def _seed_rows(record: dict[str, Any], matrix: np.ndarray) -> np.ndarray:
    """(seeds, members) of a record's score matrix: its rows are seeds already when it scores
    several (vmapped) seeds, else episodes, averaged into the one seed's row."""
    return matrix if is_multi_seed(record["payload"]) else matrix.mean(axis=0, keepdims=True)


def _base_rows(record: dict[str, Any]) -> np.ndarray:
    """(seeds, members) mean base return of a record (one row per agent file)."""
    return returns_of(record["payload"]).mean(axis=(2, 3))


def _check_one_set_per_task(found: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    sets: dict[str, dict[str, str]] = {}
    for run, record in found:
        digest = str(record["payload"]["teammate_set"]["manifest_sha256"])
        sets.setdefault(run["task_id"], {}).setdefault(digest, run["name"])
    for task_id, digests in sets.items():
        if len(digests) > 1:
            runs = ", ".join(digests.values())
            raise SweepError(
                f"the records of {task_id} were scored against {len(digests)} different "
                f"teammate sets (e.g. {runs}): scores against different sets do not compare"
            )


def build_report(folder: Path, reps: int = scores.DEFAULT_REPS, seed: int = 0) -> Report:
    """The report of the sweep folder `folder`: every run's record read and checked, grouped
    into cells. Raises `SweepError` if no run has a record or the records disagree."""
    held = read_sweep(folder)
    runs = held["runs"]
    found, missing = [], []
    for run in runs:
        if (folder / run["name"] / RECORD).is_file():
            found.append((run, _checked_record(folder, run)))
        else:
            missing.append(run["name"])
    if not found:
        raise SweepError(
            f"none of the {len(runs)} runs in {folder} has a record yet: run the sweep "
            f"(aht-bench sweep {held.get('source', 'SPEC')} --out {folder}) first"
        )
    _check_one_set_per_task(found)
    groups: dict[tuple[str, str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for run, record in found:
        groups.setdefault((run["method"], run["variant"], run["task_id"]), []).append((run, record))
    cells = [_cell([r for r, _ in g], [rec for _, rec in g]) for g in groups.values()]
    return Report(
        held.get("name", folder.name),
        held.get("source", "?"),
        tuple(cells),
        tuple(missing),
        len(runs),
        reps,
        seed,
    )


def estimate(report: Report, cell: Cell, what: str) -> dict[str, Any]:
    """The mean over members of `cell`'s `what` ("normalized" or "base_return") with its
    stratified bootstrap CI over seeds: {"value", "ci"}."""
    matrix = getattr(cell, what)
    return scores.interval_estimates(matrix, reps=report.reps, seed=report.seed)["aggregates"][
        "mean"
    ]


def estimates(report: Report) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(label, task) -> {"normalized": {value, ci}, "base_return": {value, ci}}."""
    return {
        (c.label, c.task_id): {w: estimate(report, c, w) for w in ("normalized", "base_return")}
        for c in report.cells
    }


def _table(report: Report, est: dict, what: str, fmt: str) -> list[str]:
    tasks = report.tasks()
    lines = ["| method | " + " | ".join(tasks) + " |", "|---" * (len(tasks) + 1) + "|"]
    for label in report.labels():
        row = []
        for task_id in tasks:
            cell = report.cell(label, task_id)
            if cell is None:
                row.append("n/a")
                continue
            e = est[(label, task_id)][what]
            lo, hi = e["ci"]
            row.append(f"{e['value']:{fmt}} [{lo:{fmt}}, {hi:{fmt}}] ({len(cell.seeds)})")
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return lines


def report_lines(report: Report, est: dict) -> list[str]:
    """The Markdown of report.md."""
    conf = int(round(100 * scores.DEFAULT_CONFIDENCE))
    lines = [
        f"# Sweep {report.name} ({report.source})",
        "",
        f"{len(report.cells)} method/task cells from {report.runs - len(report.missing)} of "
        f"{report.runs} runs' records. Each cell reads `mean [CI] (seeds)`: the mean over the "
        f"heldout members of the mean over seeds, its {conf}% stratified bootstrap CI "
        f"(resampling seeds within each member, {report.reps} resamples, bootstrap seed "
        f"{report.seed}) and the number of seeds with a record.",
        "",
        "## Normalised return (BRProx)",
        "",
        *_table(report, est, "normalized", ".3f"),
        "",
        "## Base return",
        "",
        *_table(report, est, "base_return", ".4g"),
    ]
    if report.missing:
        lines += ["", f"## Runs without a record ({len(report.missing)})", ""]
        lines += [f"- {name}" for name in report.missing]
    return lines


def report_json(report: Report, est: dict) -> dict[str, Any]:
    return {
        "format": REPORT_FORMAT,
        "sweep": report.name,
        "source": report.source,
        "bootstrap": {"reps": report.reps, "seed": report.seed, "confidence": 0.95},
        "missing": list(report.missing),
        "cells": [
            {
                "method": c.method,
                "variant": c.variant,
                "grid": [list(kv) for kv in c.grid],
                "task_id": c.task_id,
                "seeds": list(c.seeds),
                "members": list(c.members),
                "normalized_per_seed": c.normalized.tolist(),
                "base_return_per_seed": c.base_return.tolist(),
                **est[(c.label, c.task_id)],
            }
            for c in report.cells
        ],
    }


def _grids(report: Report) -> dict[tuple[str, str], list[Cell]]:
    """(method, task) -> its cells, for methods whose variants vary exactly two grid fields."""
    out: dict[tuple[str, str], list[Cell]] = {}
    for c in report.cells:
        out.setdefault((c.method, c.task_id), []).append(c)
    return {
        k: v
        for k, v in out.items()
        if len(v) > 1 and all(len(c.grid) == 2 for c in v)
        and len({tuple(f for f, _ in c.grid) for c in v}) == 1
    }  # fmt: skip


def _sorted_values(values: set[str]) -> list[str]:
    def key(v: str) -> tuple[int, float, str]:
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return sorted(values, key=key)


def _plot(report: Report, est: dict, out: Path) -> list[Path]:
    """comparison.png and one grid-METHOD-TASK.png per two-field grid; the files written."""
    from aht_bench.evaluation.plots import plot_grouped_bars, plot_heatmap

    tasks, labels = report.tasks(), report.labels()
    value = np.full((len(labels), len(tasks)), np.nan)
    ci = np.full((len(labels), len(tasks), 2), np.nan)
    for (label, task_id), e in est.items():
        i, j = labels.index(label), tasks.index(task_id)
        value[i, j], ci[i, j] = e["normalized"]["value"], e["normalized"]["ci"]
    written = [out / "comparison.png"]
    plot_grouped_bars(tasks, labels, value, ci, f"sweep {report.name}", written[0])
    for (method, task_id), cells in _grids(report).items():
        (f_row, _), (f_col, _) = cells[0].grid
        rows = _sorted_values({c.grid[0][1] for c in cells})
        cols = _sorted_values({c.grid[1][1] for c in cells})
        matrix = np.full((len(rows), len(cols)), np.nan)
        for c in cells:
            e = est[(c.label, task_id)]["normalized"]["value"]
            matrix[rows.index(c.grid[0][1]), cols.index(c.grid[1][1])] = e
        path = out / f"grid-{method}-{task_id}.png"
        title = f"{method} on {task_id}: mean normalised return"
        plot_heatmap(matrix, rows, cols, title, path, axis_names=(f_row, f_col))
        written.append(path)
    return written


def write_report(report: Report, est: dict, out: Path, plot: bool = True) -> list[Path]:
    """report.md, report.json and (with `plot`) the figures in `out` (`est`: `estimates`);
    the files written."""
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "report.md", out / "report.json"
    atomic_write_bytes(md, ("\n".join(report_lines(report, est)) + "\n").encode())
    atomic_write_bytes(js, (json.dumps(report_json(report, est), indent=1) + "\n").encode())
    return [md, js, *(_plot(report, est, out) if plot else [])]


__all__ = [
    "Cell",
    "REPORT_FORMAT",
    "Report",
    "build_report",
    "estimate",
    "estimates",
    "grid_of",
    "read_sweep",
    "report_json",
    "report_lines",
    "write_report",
]
