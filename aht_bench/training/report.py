"""What a run of a method reports, as data: the curves of its curve.png, the metrics on its
progress bar, the metrics that may be NaN in a healthy run and the advice printed when it
diverges. A method module declares one as `REPORT`; the run driver (`aht_bench.runs`) draws and
prints it.

May import the standard library only.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple


class Curve(NamedTuple):
    """One curve of curve.png: the `metric` it draws, its legend `label` and matplotlib
    `colour`; `progress`, when given, is the metric's short label on the progress bar."""

    metric: str
    label: str
    colour: str
    progress: str | None = None


EGO_CURVES: tuple[Curve, ...] = (
    Curve("ego_return", "ego return with the population", "C2", progress="ego"),
)
"""The right panel of an iteration run's curve.png: the ego's learning curve."""


@dataclasses.dataclass(frozen=True)
class Report:
    """How a run of a method shows its progress: `generation_curves` on the left panel of
    curve.png (what the method generated; none: one panel, the learner's curve per seed
    against env steps, as ippo, br and ego draw), `ego_curves` on the right (the first is the
    run's curve: `curve_metric`, what `aht-bench train` sums up at the end), the curves with a
    `progress` label on the progress bar (in that order: `progress_metrics`), `diverged_fix`,
    what to try when a loss or parameter becomes non-finite, and `nan_metrics`, the metrics
    that may be NaN in a healthy run (None: every `*_return` and `regret`, NaN when no episode
    ended)."""

    generation_curves: tuple[Curve, ...]
    diverged_fix: str = "Lower teammate_ppo.learning_rate or ego_ppo.learning_rate"
    """The default names the two PPO settings of a config with `teammate_ppo` and `ego_ppo`."""
    ego_curves: tuple[Curve, ...] = EGO_CURVES
    nan_metrics: tuple[str, ...] | None = None

    @property
    def curve_metric(self) -> str:
        """The run's curve: the metric of the first of `ego_curves`."""
        return self.ego_curves[0].metric

    @property
    def curve_label(self) -> str:
        """What `curve_metric` is, in words."""
        return self.ego_curves[0].label

    def may_be_nan(self, metric: str) -> bool:
        """Whether `metric` may be NaN in a healthy run (no episode ended)."""
        if self.nan_metrics is not None:
            return metric in self.nan_metrics
        return metric.endswith("_return") or metric == "regret"

    @property
    def progress_metrics(self) -> tuple[tuple[str, str], ...]:
        """(label, metric) of the whole progress bar: the generation curves, then the ego's."""
        curves = self.generation_curves + self.ego_curves
        return tuple((c.progress, c.metric) for c in curves if c.progress is not None)
