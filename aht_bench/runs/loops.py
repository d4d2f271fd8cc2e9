"""How the run driver steps a method: `MethodLoop`, the one loop over any `Method` (its
`schedule` says what a step is: one outer-loop iteration of ROTATE and the baselines, or one
PPO update of ippo, br and ego), and the `Algorithm` entry that names a method with its loop.

May import jax, numpy, the standard library, aht_bench.policies, aht_bench.training,
aht_bench.algorithms.api, aht_bench.runs and (for types only) aht_bench.envs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from aht_bench.algorithms.api import Method
from aht_bench.policies.population import Population
from aht_bench.runs.curves import plot_curve, plot_iterations
from aht_bench.runs.folder import RunDir
from aht_bench.runs.spec import RunSpec, apply_overrides

if TYPE_CHECKING:
    from aht_bench.envs import Task

PLOT_EVERY_S = 60.0  # redraw curve.png at a checkpoint at most this often (and at the end)
Metrics = dict[str, np.ndarray]  # name -> (num_seeds, steps of one call), on host


class MethodLoop:
    """How `train` steps a `Method` (`aht_bench.algorithms.api`), the one run loop: one step is
    what the method's `schedule` counts (an outer-loop iteration, or a PPO update: ippo, br,
    ego), one call of `method.iterate` advances `schedule.per_call` of them, and the method's
    `report` names the run's curves, progress metrics and divergence advice."""

    def __init__(self, method: Method[Any, Any]) -> None:
        self.method = method
        self.schedule = method.schedule
        self.report = method.report
        self.unit = method.schedule.unit  # metrics lines, checkpoint names, messages
        self.bar_unit = method.schedule.bar_unit
        self.checkpoint_every_step = method.schedule.checkpoint_every_call
        # redraw curve.png at a checkpoint at most this often: every iteration, or every minute
        self.plot_every_s = 0.0 if method.schedule.checkpoint_every_call else PLOT_EVERY_S
        self.curve_metric = method.report.curve_metric  # `RunOutcome.final_return`'s metric
        self.curve_label = method.report.curve_label
        self.progress_metrics = method.report.progress_metrics
        self.diverged_fix = method.report.diverged_fix

    def preset(self, algo: Algorithm, name: str, task: Task) -> Any:
        """The config of preset `name` on `task`."""
        return self.method.preset(name, task)

    def init(self, algo: Algorithm, spec: RunSpec, config: Any, inputs: tuple[Any, ...]) -> Any:
        """A fresh state of every seed of `spec` (leading seed axis)."""
        key = jax.random.PRNGKey(spec.seed)
        return self.method.init_seeds(key, config, spec.num_seeds, inputs)

    def done(self, state: Any) -> int:
        """Steps `state` has done."""
        return self.schedule.done(state)

    def total(self, config: Any) -> int:
        """Steps of the whole run."""
        return self.schedule.total(config)

    def steps_per_call(self, config: Any) -> int:
        """Steps each item of `run` advances."""
        return self.schedule.per_call(config)

    def env_steps_done(self, config: Any, done: int) -> int:
        """Joint env steps per seed after `done` steps."""
        return int(self.schedule.env_steps(config, done))

    def plan(self, config: Any) -> dict[str, int]:
        """The run's size, for run.json."""
        return self.schedule.plan(config)

    def run(self, algo: Algorithm, state: Any, config: Any) -> Iterator[tuple[int, Any, Metrics]]:
        """Yield `(steps done, state, metrics)` after each call until the run is done; the
        metrics (num_seeds, steps of the call), on host."""
        setup = self.method.setup(config)  # once for the whole run
        for done, new_state, metrics in self.method.calls(state, setup):
            yield done, new_state, self.method.per_step(metrics)

    def may_be_nan(self, metric: str) -> bool:
        """Whether `metric` may be NaN in a healthy run (no episode ended)."""
        return self.report.may_be_nan(metric)

    def checked_params(self, algo: Algorithm, state: Any) -> dict[str, Any]:
        """Whose params (a phrase) -> the params that must stay finite."""
        return self.method.checked(self.method, state)

    def keeps_policies(self, config: Any, done: int) -> bool:
        """Whether to save the learners as policy files after step `done` (besides the end)."""
        return self.method.keeps(config, done)

    def save_policies(
        self,
        folder: Path,
        algo: Algorithm,
        spec: RunSpec,
        config: Any,
        state: Any,
        done: int,
        kept: bool = False,
    ) -> list[Path]:
        """Write the method's policy files (`Method.files`) of every seed into `folder`; their
        paths. `kept`: a snapshot during the run (`train --keep-every`), not the final ones."""
        from aht_bench.policies import save_policy, save_population

        setup = self.method.setup(config)
        paths = []
        for s in range(spec.num_seeds):
            for name, payload in self.method.files(self.method, state, setup, s, kept):
                path = folder / (f"seed{s}-{name}" if name else f"seed{s}")
                path = path.with_name(path.name + ".safetensors")
                card = _policy_card(self, spec, config, path.stem, done)
                if isinstance(payload, Population):
                    save_population(path, payload, card)
                else:
                    network, params = payload
                    save_policy(path, network, params, card)
                paths.append(path)
        return paths

    def plot(self, run: RunDir, title: str) -> Path | None:
        """Draw the run's curves into `run.curve` (None before the first metrics line): the
        learners' curve per seed, or the generation and ego panels of an iteration method."""
        if not self.report.generation_curves:
            return plot_curve(run, title, self.curve_metric)
        return plot_iterations(run, title, self.report.generation_curves, self.report.ego_curves)


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A method as `aht-bench train` runs it: its name, its module, the loop over the module's
    `METHOD` and whether its `init` takes teammates (`--teammates`: br, ego). The table of them is
    `aht_bench.runs.ALGORITHMS`."""

    name: str
    module: ModuleType  # the module the catalogue names (its `METHOD`, its `SMOKE`)
    loop: MethodLoop
    needs_teammates: bool = False  # init takes a TeammatePool after the setup (br, ego)

    @property
    def method(self) -> Method[Any, Any]:
        """The method the loop drives."""
        return self.loop.method

    @property
    def presets(self) -> tuple[str, ...]:
        """The preset names it has."""
        return tuple(self.method.presets)

    def config(self, spec: RunSpec) -> Any:
        """The config `spec` asks for: its preset's, with its overrides applied (validated)."""
        if spec.preset not in self.presets:
            raise ValueError(
                f"{self.name} has no {spec.preset!r} preset; choose one of "
                f"{', '.join(self.presets)}"
            )
        return apply_overrides(self.loop.preset(self, spec.preset, spec.task), spec.overrides)


def _policy_card(loop: MethodLoop, spec: RunSpec, config: Any, learner: str, done: int) -> dict:
    """The `card_extra` of a policy file the run writes: task and provenance."""
    return {
        "task_id": config.task_id,
        "provenance": {
            "algorithm": spec.algorithm,
            "preset": spec.preset,
            "base_seed": spec.seed,
            "num_seeds": spec.num_seeds,
            "learner": learner,
            loop.unit: done,
            "env_steps": loop.env_steps_done(config, done),
            "teammates": list(spec.teammates),
            "overrides": [list(kv) for kv in spec.overrides],
        },
    }
