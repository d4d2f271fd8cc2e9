"""Diagnostics of a trained run of ROTATE or a baseline (`aht-bench diagnose RUN`): the ego's
learning curve (its training return per iteration and, where the run kept its egos with
`--keep-every`, its score against a development set per kept iteration), what the method
generated per iteration (its `Report.generation_curves`: the generated teammates'
self-play return and the method's other generation metrics), and the ego's return per seat with
each member of a scored set (from a result record), in one figure and one JSON.

    report = diagnose(Path("runs/rotate-cr"), record=Path("runs/rotate-cr/result.json"),
                      dev="dev", episodes=16)
    write(report, Path("runs/rotate-cr/diagnostics"))   # diagnostics.png, diagnostics.json

`still_rising` says whether the ego's curve was still going up at the end (`RISING_RULE`): a
card states it so that a reader knows a longer run would likely score more.

May import numpy, matplotlib, the standard library, aht_bench.files, aht_bench.evaluation and
aht_bench.runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.runs.folder import read_metrics

DEV_RECORD = "dev.json"
"""The development-set record of a kept iteration (`policies/iteration-NNNNNN/dev.json`)."""
RISING_RULE = (
    "still rising: the ego's last point is more than 5% (relative) above the mean of the points "
    "in the third of the curve before it (the development-set curve where the egos were kept, "
    "else the training return)"
)


@dataclasses.dataclass(frozen=True)
class Diagnostics:
    """What `diagnose` found in a run folder."""

    run: str
    method: str
    task_id: str
    preset: str
    iterations: list[int]
    env_steps: list[int]
    ego_return: list[float]
    """The ego's training return per iteration (mean over seeds; NaN where none ended)."""
    generation: dict[str, dict[str, Any]]
    """metric -> {"label", "values"}: each generation curve per iteration (mean over seeds)."""
    dev: list[dict[str, Any]]
    """Per kept iteration: {"iteration", "env_steps", "score", "ci", "return", "set_id"}."""
    per_seat: dict[str, Any] | None
    """From the result record: {"set_id", "seatings", "members", "returns"} (members x
    seatings mean base return over seeds and episodes)."""
    still_rising: bool | None
    """`RISING_RULE` (None: fewer than 3 points)."""
    rising_from: str
    """Which curve `still_rising` read: "development set" or "training return"."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"rising_rule": RISING_RULE}


def _mean(values: Any) -> float:
    finite = [float(v) for v in (values or []) if v is not None and math.isfinite(float(v))]
    return float(np.mean(finite)) if finite else math.nan


def rising(points: list[float]) -> bool | None:
    """`RISING_RULE` on a curve (NaNs dropped); None with fewer than 3 points."""
    values = [p for p in points if math.isfinite(p)]
    if len(values) < 3:
        return None
    before = values[:-1][-max(1, len(values) // 3) :]
    base = float(np.mean(before))
    last = values[-1]
    return bool(last > base + 0.05 * abs(base)) if base != 0 else bool(last > 0)


def kept_iterations(run: Path) -> list[tuple[int, Path]]:
    """(iteration, folder) of every iteration whose egos the run kept (`--keep-every`)."""
    out = []
    for folder in sorted((run / "policies").glob("iteration-*")):
        try:
            out.append((int(folder.name.split("-", 1)[1]), folder))
        except ValueError:
            continue
    return out


def ego_stage_start(run: Path) -> int:
    """The first iteration in which the run's ego trains: after the generation stage of a
    two-stage method (FCP, BRDiv, CoMeDi: `generation_iterations`), else 1."""
    from aht_bench.runs import RunSpec, get

    spec = RunSpec.from_json(json.loads((run / "run.json").read_text())["spec"])
    config = get(spec.algorithm).config(spec)
    return int(getattr(config, "generation_iterations", 0)) + 1


def score_kept(
    run: Path, dev: str, episodes: int, *, log: Callable[[str], None] = lambda m: None
) -> None:
    """Score each kept iteration's egos (all seeds together) on the task's teammate set `dev`
    (a development set: never use the heldout set for this) with `episodes` episodes per member
    and seating, into its folder's `dev.json`; folders already scored, and iterations before
    the ego trains (`ego_stage_start`), are skipped."""
    from aht_bench.evaluation import evaluate_agent_files, load_set, write_record

    spec = json.loads((run / "run.json").read_text())["spec"]
    eval_set = load_set(spec["task_id"], dev)
    first = ego_stage_start(run)
    for iteration, folder in kept_iterations(run):
        egos = sorted(folder.glob("seed*-ego.safetensors"))
        if iteration < first or not egos or (folder / DEV_RECORD).is_file():
            continue
        log(f"{run.name}: iteration {iteration} against {eval_set.set_id}")
        record = evaluate_agent_files(egos, eval_set, num_episodes=episodes)
        write_record(folder / DEV_RECORD, record)


def _dev_points(run: Path, env_steps: dict[int, int]) -> list[dict[str, Any]]:
    from aht_bench.evaluation import read_record

    points = []
    for iteration, folder in kept_iterations(run):
        path = folder / DEV_RECORD
        if not path.is_file():
            continue
        payload = read_record(path)["payload"]
        mean = payload["aggregates"]["mean"]
        returns = [m["mean_return"] for m in payload["members"]]
        points.append(
            {
                "iteration": iteration,
                "env_steps": env_steps.get(iteration),
                "score": mean["value"],
                "ci": list(mean["ci"]),
                "return": float(np.mean(returns)),
                "set_id": payload["teammate_set"]["id"],
            }
        )
    return points


def _per_seat(record: Path) -> dict[str, Any]:
    from aht_bench.evaluation.record import mean_returns_per_seating, read_record

    payload = read_record(record)["payload"]
    table = mean_returns_per_seating(payload)
    return {
        "set_id": payload["teammate_set"]["id"],
        "seatings": [list(s) for s in payload["protocol"]["seatings"]],
        "members": [m["name"] for m in payload["members"]],
        "returns": np.asarray(table).round(6).tolist(),
    }


def diagnose(run: Path, *, record: Path | None = None) -> Diagnostics:
    """The diagnostics of the run folder `run` (an iteration method's: ROTATE or a baseline)
    from its metrics, its kept iterations' `dev.json` records (`score_kept`) and, for the
    return per seat, the result record `record`."""
    from aht_bench.runs.registry import get

    held = json.loads((run / "run.json").read_text())
    spec = held["spec"]
    algo = get(spec["algorithm"])
    report = algo.loop.report
    if algo.loop.unit != "iteration":  # ippo, br, ego: PPO updates, no generated partners
        raise ValueError(
            f"{run} is a run of {spec['algorithm']}, which has no iterations to diagnose; "
            "diagnose runs of ROTATE and the baselines"
        )
    rows = read_metrics(run / "metrics.jsonl")
    if not rows:
        raise ValueError(f"{run}/metrics.jsonl has no iteration yet")
    iterations = [int(r["iteration"]) for r in rows]
    env_steps = [int(r["env_steps"]) for r in rows]
    generation = {
        c.metric: {"label": c.label, "values": [_mean(r.get(c.metric)) for r in rows]}
        for c in report.generation_curves
        if any(c.metric in r for r in rows)
    }
    ego = [_mean(r.get("ego_return")) for r in rows]
    dev = _dev_points(run, dict(zip(iterations, env_steps, strict=True)))
    curve, source = (
        ([p["score"] for p in dev], "development set")
        if len(dev) >= 3
        else (ego, "training return")
    )
    return Diagnostics(
        run=str(run),
        method=spec["algorithm"],
        task_id=spec["task_id"],
        preset=spec["preset"],
        iterations=iterations,
        env_steps=env_steps,
        ego_return=ego,
        generation=generation,
        dev=dev,
        per_seat=None if record is None else _per_seat(record),
        still_rising=rising(curve),
        rising_from=source,
    )


def _nan_to_none(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


def plot(d: Diagnostics, path: Path) -> Path:
    """One figure: ego curves, generation curves, return per seat with each member."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 3 if d.per_seat is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4))
    steps = np.asarray(d.env_steps) / 1e6
    ax = axes[0]
    ax.plot(steps, d.ego_return, marker="o", ms=3, color="C2", label="training return")
    ax.set(xlabel="env steps per seed (M)", ylabel="ego training return (mean over seeds)")
    if d.dev:
        twin = ax.twinx()
        x = [p["env_steps"] / 1e6 for p in d.dev]
        twin.plot(x, [p["score"] for p in d.dev], marker="s", ms=3, color="C3")
        twin.fill_between(
            x, [p["ci"][0] for p in d.dev], [p["ci"][1] for p in d.dev], color="C3", alpha=0.2
        )
        twin.set_ylabel(f"score vs {d.dev[0]['set_id']} (95% CI over seeds)", color="C3")
    rise = {True: "still rising", False: "flat or falling", None: "too short to tell"}
    ax.set_title(f"ego: {rise[d.still_rising]} ({d.rising_from})", fontsize=10)
    ax.grid(alpha=0.3)
    ax = axes[1]
    for curve in d.generation.values():
        ax.plot(steps, curve["values"], marker="o", ms=3, label=curve["label"])
    ax.set(xlabel="env steps per seed (M)", ylabel="return (mean over seeds)")
    ax.set_title("what the method generated, per iteration", fontsize=10)
    if d.generation:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    if d.per_seat is not None:
        ax = axes[2]
        table = np.asarray(d.per_seat["returns"], dtype=float)
        width = 0.8 / max(1, table.shape[1])
        x = np.arange(table.shape[0])
        for s, seating in enumerate(d.per_seat["seatings"]):
            seats = ",".join(str(i) for i in seating)
            ax.bar(x + s * width, table[:, s], width, label=f"ego in seat {seats}")
        ax.set_xticks(x + width * (table.shape[1] - 1) / 2)
        ax.set_xticklabels(d.per_seat["members"], rotation=60, ha="right", fontsize=7)
        ax.set(ylabel="mean base return")
        ax.set_title(f"return per seat, {d.per_seat['set_id']}", fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle(f"{d.method} ({d.preset}) on {d.task_id}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(d: Diagnostics, folder: Path) -> list[Path]:
    """`diagnostics.json` and `diagnostics.png` into `folder`."""
    from aht_bench.files import atomic_write_bytes

    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "diagnostics.json"
    atomic_write_bytes(data, (json.dumps(_nan_to_none(d.to_json()), indent=1) + "\n").encode())
    return [data, plot(d, folder / "diagnostics.png")]
