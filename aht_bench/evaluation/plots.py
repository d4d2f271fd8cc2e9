"""PNG figures of evaluation results: per-member bars, comparisons, cross-play heatmaps.

Every figure is drawn with matplotlib's Agg backend into memory and written atomically.

May import numpy, matplotlib, the standard library, aht_bench.files and aht_bench.evaluation
(scores, record).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.evaluation.record import (
    agent_files,
    agent_label,
    count,
    is_multi_seed,
    mean_returns_per_seating,
    members_above_one,
    seating_label,
)
from aht_bench.evaluation.scores import AGGREGATES

_LABELS = {"mean": "Mean", "iqm": "IQM", "median": "Median", "worst_case": "Worst case"}


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    from aht_bench.files import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_result(record: dict[str, Any], path: Path) -> None:
    """Top: bars of each member's normalised score and of the aggregate mean, with 95% CIs
    (a member scoring above 1 in red: its upper bound is too low). Bottom: each member's mean
    base return per seating, next to its upper bound, so that an agent playing only one side of
    a divided layout shows."""
    plt = _pyplot()
    payload = record["payload"]
    members = payload["members"]
    above = {m["name"] for m in members_above_one(payload)}
    names = [m["name"] for m in members] + ["mean (all)"]
    values = [m["normalized"]["value"] for m in members]
    cis = [m["normalized"]["ci"] for m in members]
    agg = payload["aggregates"]["mean"]
    values.append(agg["value"])
    cis.append(agg["ci"])
    v = np.asarray(values)
    err = np.abs(np.asarray(cis).T - v)
    fig, (ax, ax_seat) = plt.subplots(
        2, 1, figsize=(max(4.0, 0.7 * len(names) + 1.5), 6.4), sharex=True,
        gridspec_kw={"height_ratios": [3, 2]},
    )  # fmt: skip
    colors = ["#c44e52" if m["name"] in above else "#4c72b0" for m in members] + ["#dd8452"]
    ax.bar(range(len(names)), v, yerr=err, color=colors, capsize=3)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel("normalised return (BRProx)")
    conf = int(round(100 * payload["protocol"]["bootstrap"]["confidence"]))
    episodes = payload["protocol"]["episodes"]
    if is_multi_seed(payload):
        seeds = len(agent_files(payload))
        protocol = (
            f"{seeds} seeds x {count(episodes, 'episode')} per seating, {conf}% bootstrap CIs "
            "over seeds"
        )
    else:
        protocol = f"{count(episodes, 'episode')} per seating, {conf}% bootstrap CIs"
    flagged = f"\nred: mean score above 1, the bound is too low ({', '.join(sorted(above))})"
    ax.set_title(
        f"{agent_label(payload)} on {payload['task_id']}\n"
        f"teammates {payload['teammate_set']['id']}, {protocol}" + (flagged if above else ""),
        fontsize=9,
    )
    ax.set_ylim(
        min(0.0, float(np.min(v - err[0])) - 0.05), max(1.1, float(np.max(v + err[1])) + 0.05)
    )

    seatings = payload["protocol"]["seatings"]
    per_seat = mean_returns_per_seating(payload)  # (members, seatings)
    slot = 0.8 / len(seatings)
    for i, seating in enumerate(seatings):
        x = np.arange(len(members)) - 0.4 + slot * (i + 0.5)
        ax_seat.bar(
            x, per_seat[:, i], width=slot, color=f"C{i}", label=f"ego {seating_label(seating)}"
        )
    upper = [m["upper"] for m in members]
    ax_seat.scatter(range(len(members)), upper, marker="_", s=300, color="k", label="upper bound")
    ax_seat.set_ylabel("mean base return")
    ax_seat.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax_seat.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    _save(fig, path)


def plot_compare(
    labels: Sequence[str],
    aggregates: Sequence[dict[str, Any]],
    title: str,
    path: Path,
) -> None:
    """One panel per aggregate: each result's point estimate and CI (rliable's interval plot)."""
    plt = _pyplot()
    fig, axes = plt.subplots(
        1, len(AGGREGATES), figsize=(3.0 * len(AGGREGATES), 0.5 * len(labels) + 1.4), sharey=True
    )
    y = np.arange(len(labels))
    ends = [v for agg in aggregates for name in AGGREGATES for v in agg[name]["ci"]]
    xlim = (min(0.0, min(ends) - 0.05), max(1.05, max(ends) + 0.05))
    for ax, name in zip(axes, AGGREGATES, strict=True):
        for i, agg in enumerate(aggregates):
            lo, hi = agg[name]["ci"]
            ax.barh(i, hi - lo, left=lo, height=0.6, color=f"C{i % 10}", alpha=0.75)
            ax.plot([agg[name]["value"]] * 2, [i - 0.3, i + 0.3], color="k", linewidth=1.5)
        ax.set_title(_LABELS[name], fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel("normalised return", fontsize=8)
        ax.set_xlim(*xlim)
    axes[0].set_yticks(y, labels, fontsize=8)
    fig.suptitle(title, fontsize=9, y=1.04)
    _save(fig, path)


def plot_improvement(
    pairs: Sequence[tuple[str, str, dict[str, Any]]], title: str, path: Path
) -> None:
    """P(X > Y) with its CI for each pair (X, Y), as in the paper's probability-of-improvement
    figure; the dashed line marks 0.5."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 0.5 * len(pairs) + 1.4))
    for i, (_, _, poi) in enumerate(pairs):
        lo, hi = poi["ci"]
        ax.barh(i, hi - lo, left=lo, height=0.6, color="C0", alpha=0.75)
        ax.plot([poi["value"]] * 2, [i - 0.3, i + 0.3], color="k", linewidth=1.5)
    ax.axvline(0.5, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(pairs)), [f"P({x} > {y})" for x, y, _ in pairs], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("probability of improvement")
    ax.set_title(title, fontsize=9)
    _save(fig, path)


def plot_heatmap(
    matrix: np.ndarray,
    row_names: Sequence[str],
    col_names: Sequence[str],
    title: str,
    path: Path,
    axis_names: tuple[str, str] | None = None,
) -> None:
    """A matrix (rows: the first set, columns: the second; e.g. a cross-play matrix) with
    values written in; NaN cells are left blank and marked "n/a". `axis_names`: (rows,
    columns) axis labels."""
    plt = _pyplot()
    matrix = np.asarray(matrix, np.float64)
    fig, ax = plt.subplots(figsize=(0.8 * len(col_names) + 2.5, 0.6 * len(row_names) + 1.8))
    image = ax.imshow(matrix, cmap="viridis", aspect="auto")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    ax.set_xticks(range(len(col_names)), col_names, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(row_names)), row_names, fontsize=8)
    if axis_names is not None:
        ax.set_ylabel(axis_names[0], fontsize=8)
        ax.set_xlabel(axis_names[1], fontsize=8)
    known = matrix[np.isfinite(matrix)]
    low = float(known.min()) if known.size else 0.0
    span = float(np.ptp(known)) if known.size else 0.0
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            if not np.isfinite(matrix[i, j]):
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="grey")
                continue
            dark = (matrix[i, j] - low) / (span or 1.0) < 0.5
            ax.text(
                j, i, f"{matrix[i, j]:.3g}", ha="center", va="center", fontsize=7,
                color="white" if dark else "black",
            )  # fmt: skip
    ax.set_title(title, fontsize=9)
    _save(fig, path)


def plot_grouped_bars(
    groups: Sequence[str],
    labels: Sequence[str],
    values: np.ndarray,
    ci: np.ndarray,
    title: str,
    path: Path,
) -> None:
    """The paper's comparison figure: per group (task), one bar per label (method) with its CI
    as an error bar. values: (labels, groups); ci: (labels, groups, 2); NaN: no bar."""
    plt = _pyplot()
    values, ci = np.asarray(values, np.float64), np.asarray(ci, np.float64)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) * max(1, len(labels)) ** 0.5), 3.6))
    width = 0.8 / len(labels)
    x = np.arange(len(groups))
    for i, label in enumerate(labels):
        shown = np.isfinite(values[i])
        pos = x[shown] - 0.4 + width * (i + 0.5)
        low = values[i, shown] - ci[i, shown, 0]
        high = ci[i, shown, 1] - values[i, shown]
        ax.bar(pos, values[i, shown], width=width, color=f"C{i % 10}", label=label)
        ax.errorbar(pos, values[i, shown], yerr=[low, high], fmt="none", ecolor="k", lw=1)
    ax.set_xticks(x, groups, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("mean normalised return")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title, fontsize=9)
    _save(fig, path)
