"""The report of the v2 budget study (`benchmarks/budget_study.py report`): per run and
iteration the generated teammates' self-play return, the ego's score against the development
set and the wall time, as markdown tables and one figure per task.

Everything is read from the run folders: `metrics.jsonl` (one line per iteration: `env_steps`,
`time_s`, per seed `sp_return` and `ego_return`) and the development-set records that `score`
wrote (`policies/iteration-NNNNNN/dev.json`: the three seeds' egos scored together, the mean
normalised return with its 95% stratified bootstrap CI over seeds).
"""

from __future__ import annotations

import json
import math
import platform
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from aht_bench.evaluation.record import read_record  # noqa: E402

DECISION = "<!-- decision: written by hand, kept when the tables are regenerated -->"


def _metrics(run: Path) -> list[dict[str, Any]]:
    rows = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line from a kill
            continue
    return rows


def _mean(values: list[float | None] | None) -> float:
    finite = [v for v in values or [] if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _dev(run: Path, iteration: int) -> dict[str, Any] | None:
    path = run / "policies" / f"iteration-{iteration:06d}" / "dev.json"
    if not path.is_file():
        return None
    payload = read_record(path)["payload"]
    mean = payload["aggregates"]["mean"]
    returns = [m["mean_return"] for m in payload["members"]]
    return {
        "score": mean["value"],
        "ci": mean["ci"],
        "base_return": sum(returns) / len(returns),
        "set": payload["teammate_set"]["id"],
        "episodes": payload["protocol"]["episodes"],
    }


def run_rows(run: Path) -> list[dict[str, Any]]:
    """One row per iteration of the run folder `run`."""
    config = json.loads((run / "run.json").read_text())["config"]
    generation = int(config.get("num_ippo_seeds", 0))  # FCP: its IPPO teams come first
    rows = []
    for line in _metrics(run):
        it = int(line["iteration"])
        rows.append(
            {
                "iteration": it,
                "stage": "teammates" if it <= generation else "ego",
                "env_steps": int(line["env_steps"]),
                "time_s": float(line["time_s"]),
                "sp_return": _mean(line.get("sp_return")),
                "ego_return": _mean(line.get("ego_return")),
                "dev": _dev(run, it),
            }
        )
    return rows


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _table(name: str, rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"### {name}",
        "",
        "| iteration | stage | env steps / seed | wall s (3 seeds) | teammate SP return | "
        "ego training return | ego vs dev set: score [95% CI] | ego vs dev set: return |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        dev = r["dev"]
        score = (
            "-" if dev is None else f"{dev['score']:.3f} [{dev['ci'][0]:.3f}, {dev['ci'][1]:.3f}]"
        )
        base = "-" if dev is None else _fmt(dev["base_return"], 2)
        lines.append(
            f"| {r['iteration']} | {r['stage']} | {r['env_steps']:,} | {r['time_s']:.0f} | "
            f"{_fmt(r['sp_return'])} | {_fmt(r['ego_return'])} | {score} | {base} |"
        )
    return [*lines, ""]


def _plot(task: str, runs: dict[str, list[dict[str, Any]]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_dev, ax_sp) = plt.subplots(1, 2, figsize=(11, 4))
    for name, rows in runs.items():
        dev = [(r["env_steps"] / 1e6, r["dev"]) for r in rows if r["dev"] is not None]
        if dev:
            x = [d[0] for d in dev]
            (line,) = ax_dev.plot(x, [d[1]["score"] for d in dev], marker="o", ms=3, label=name)
            ax_dev.fill_between(
                x,
                [d[1]["ci"][0] for d in dev],
                [d[1]["ci"][1] for d in dev],
                alpha=0.2,
                color=line.get_color(),
            )
        sp = [(r["env_steps"] / 1e6, r["sp_return"]) for r in rows if math.isfinite(r["sp_return"])]
        if sp:
            ax_sp.plot([s[0] for s in sp], [s[1] for s in sp], marker="o", ms=3, label=name)
    ax_dev.set(
        title=f"{task}: ego vs development set",
        xlabel="env steps per seed (M)",
        ylabel="mean normalised return (95% CI over 3 seeds)",
    )
    ax_sp.set(
        title=f"{task}: generated teammates' self-play return",
        xlabel="env steps per seed (M)",
        ylabel="mean over seeds",
    )
    for ax in (ax_dev, ax_sp):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = out.with_name(f"{out.stem}-{task}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(runs: Path, study: list[tuple[str, list[str]]], out: Path) -> int:
    """Write the study's markdown `out` and its figures (`out` stem + task + .png)."""
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    missing = []
    for name, args in study:
        task = args[args.index("--task") + 1]
        folder = runs / name
        if not (folder / "metrics.jsonl").is_file():
            missing.append(name)
            continue
        by_task.setdefault(task, {})[name] = run_rows(folder)
    if not by_task:
        print(f"no run of the study has metrics yet under {runs}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Budget study on v2 (issue 51)",
        "",
        "Generated by `python benchmarks/budget_study.py report` from the run folders of "
        "`python benchmarks/budget_study.py train` and the development-set records of "
        "`... score` (commands and what each run is: the script's docstring). Machine: "
        f"{platform.machine()}, 2 CPU cores, no GPU; wall times are the training calls of "
        "the three vmapped seeds together (compile included), while other work shared the "
        "machine.",
        "",
    ]
    for task, runs_of_task in by_task.items():
        figure = _plot(task, runs_of_task, out)
        lines += [f"## {task}", "", f"![{task}]({figure.name})", ""]
        for name, rows in runs_of_task.items():
            lines += _table(name, rows)
    if missing:
        lines += ["Runs without metrics yet: " + ", ".join(missing), ""]
    kept = out.read_text().split(DECISION, 1) if out.is_file() else []
    if len(kept) == 2:  # the written conclusion below the marker stays
        lines += [DECISION + kept[1].rstrip("\n"), ""]
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    return 0
