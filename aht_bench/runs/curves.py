"""curve.png of a run: the learning curve of an update run (`plot_curve`) and the two panels
of an iteration run (`plot_iterations`: what the method generated, the ego's curve).

May import numpy, matplotlib, the standard library and aht_bench.runs and aht_bench.training.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.runs.folder import CURVE_METRIC, RunDir, _column, read_metrics
from aht_bench.training.report import EGO_CURVES, Curve


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save_figure(fig: Any, path: Path) -> Path:
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.tight_layout()
    fig.savefig(tmp)
    _pyplot().close(fig)
    os.replace(tmp, path)
    return path


def _seed_mean(values: np.ndarray) -> np.ndarray:
    """(rows,) mean over the seeds of `values` (rows, num_seeds) that are finite; NaN where
    none is."""
    ok = np.isfinite(values)
    count = ok.sum(axis=1)
    return np.where(count > 0, np.where(ok, values, 0.0).sum(axis=1) / np.maximum(count, 1), np.nan)


def plot_curve(run: RunDir, title: str, metric: str = CURVE_METRIC) -> Path | None:
    """Draw `metric` against env steps (each seed and their mean) into `run.curve`."""
    rows = [r for r in read_metrics(run.metrics) if metric in r]
    if not rows:
        return None
    steps = np.array([r["env_steps"] for r in rows], dtype=np.float64)
    values = _column(rows, metric)
    fig, ax = _pyplot().subplots(figsize=(6.4, 4.0), dpi=100)
    for s in range(values.shape[1]):
        ok = np.isfinite(values[:, s])
        ax.plot(steps[ok], values[ok, s], lw=0.8, alpha=0.45, label=f"seed {s}")
    if values.shape[1] > 1:
        mean = _seed_mean(values)
        ok = np.isfinite(mean)
        ax.plot(steps[ok], mean[ok], lw=2.0, color="black", label="mean")
    ax.set_xlabel("environment steps (per seed)")
    ax.set_ylabel(f"{metric} (base, seat 0)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _save_figure(fig, run.curve)


def plot_iterations(
    run: RunDir,
    title: str,
    generation: tuple[Curve, ...],
    ego: tuple[Curve, ...] = EGO_CURVES,
) -> Path | None:
    """An iteration run's curves into `run.curve`, against the iteration: the `generation`
    curves (ROTATE: SP and XP returns of each new teammate and the regret estimate SP - XP) on
    the left, the `ego` curves (its return with the population) on the right. Each seed is a
    thin line, the mean over seeds a thick one with markers."""
    rows = read_metrics(run.metrics)
    if not rows:
        return None
    from matplotlib.ticker import MaxNLocator

    x = np.array([r["iteration"] for r in rows])
    fig, axes = _pyplot().subplots(1, 2, figsize=(11.0, 4.0), dpi=100)
    panels = (
        (axes[0], generation, "return per episode (base), regret", "teammate generation"),
        (axes[1], ego, "return per episode (base)", "ego update"),
    )
    for ax, curves, ylabel, subtitle in panels:
        for metric, label, colour, _ in curves:
            if not any(metric in r for r in rows):
                continue
            values = _column(rows, metric)
            for s in range(values.shape[1] if values.shape[1] > 1 else 0):
                ok = np.isfinite(values[:, s])
                ax.plot(x[ok], values[ok, s], lw=0.8, alpha=0.35, color=colour)
            mean = _seed_mean(values)
            ok = np.isfinite(mean)
            ax.plot(x[ok], mean[ok], lw=2.0, marker="o", ms=3, color=colour, label=label)
        ax.axhline(0.0, color="grey", lw=0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}: {subtitle}", fontsize=9)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a stage that has not run yet has no curves
            ax.legend(fontsize=7, loc="best")
    if max((len(v) for v in rows[0].values() if isinstance(v, list)), default=1) > 1:
        fig.text(0.01, 0.01, "thin: seeds, thick: mean over seeds", fontsize=7, color="grey")
    return _save_figure(fig, run.curve)
