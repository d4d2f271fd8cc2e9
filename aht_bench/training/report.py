"""What a run of an iteration-based method reports, as data: the curves of its curve.png, the
metrics on its progress bar and the advice printed when it diverges. A method module declares
one as `REPORT`; the run driver (`aht_bench.runs`) draws and prints it.

May import the standard library only.
"""

from __future__ import annotations

import dataclasses

Curve = tuple[str, str, str]
"""One curve of curve.png: (metric, label, matplotlib colour)."""

EGO_CURVES: tuple[Curve, ...] = (("ego_return", "ego return with the population", "C2"),)
"""The right panel of an iteration run's curve.png: the ego's learning curve."""


EGO_PROGRESS: tuple[tuple[str, str], ...] = (("ego", "ego_return"),)
"""The ego's part of an iteration run's progress bar, after the generation metrics."""


@dataclasses.dataclass(frozen=True)
class IterationReport:
    """How a run of an iteration-based method (one step = one outer-loop iteration) shows its
    progress: `generation_curves` on the left panel of curve.png (what the method generated),
    `ego_curves` on the right, `progress_metrics` as (label, metric) on the progress bar (the
    method's `generation_progress`, then `ego_progress`), and `diverged_fix`, what to try when
    a loss or parameter becomes non-finite."""

    generation_curves: tuple[Curve, ...]
    generation_progress: tuple[tuple[str, str], ...]
    """(label, metric) of what the method generates, on the progress bar before the ego's."""
    diverged_fix: str = "Lower teammate_ppo.learning_rate or ego_ppo.learning_rate"
    """The default names the two PPO settings of a config with `teammate_ppo` and `ego_ppo`."""
    ego_curves: tuple[Curve, ...] = EGO_CURVES
    ego_progress: tuple[tuple[str, str], ...] = EGO_PROGRESS

    @property
    def progress_metrics(self) -> tuple[tuple[str, str], ...]:
        """(label, metric) of the whole progress bar."""
        return self.generation_progress + self.ego_progress
