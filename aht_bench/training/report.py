"""What a run of an iteration-based method reports, as data: the curves of its curve.png, the
metrics on its progress bar and the advice printed when it diverges. A method module declares
one as `REPORT`; the run driver (`aht_bench.runs`) draws and prints it.

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
class IterationReport:
    """How a run of an iteration-based method (one step = one outer-loop iteration) shows its
    progress: `generation_curves` on the left panel of curve.png (what the method generated),
    `ego_curves` on the right, the curves with a `progress` label on the progress bar (in that
    order: `progress_metrics`), and `diverged_fix`, what to try when a loss or parameter
    becomes non-finite."""

    generation_curves: tuple[Curve, ...]
    diverged_fix: str = "Lower teammate_ppo.learning_rate or ego_ppo.learning_rate"
    """The default names the two PPO settings of a config with `teammate_ppo` and `ego_ppo`."""
    ego_curves: tuple[Curve, ...] = EGO_CURVES

    @property
    def progress_metrics(self) -> tuple[tuple[str, str], ...]:
        """(label, metric) of the whole progress bar: the generation curves, then the ego's."""
        curves = self.generation_curves + self.ego_curves
        return tuple((c.progress, c.metric) for c in curves if c.progress is not None)
