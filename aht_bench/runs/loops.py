"""How the run driver steps a method (`Loop`): one PPO update (`UpdateLoop`, `UPDATES`: ippo,
br, ego) or one whole outer-loop iteration (`IterationLoop`: ROTATE and the baselines), and the
`Algorithm` entry that pairs a method module with its loop.

May import jax, numpy, the standard library, aht_bench.policies, aht_bench.training,
aht_bench.algorithms.api, aht_bench.runs and (for types only) aht_bench.envs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import jax
import numpy as np

from aht_bench.algorithms.api import Method
from aht_bench.runs.curves import plot_curve, plot_iterations
from aht_bench.runs.folder import CURVE_METRIC, RunDir
from aht_bench.runs.spec import RunSpec, apply_overrides
from aht_bench.training import presets
from aht_bench.training.driver import init_seeds, iterate, updates_done

if TYPE_CHECKING:
    from aht_bench.envs import Task

PLOT_EVERY_S = 60.0  # redraw curve.png at a checkpoint at most this often (and at the end)
# Metrics that may legitimately be NaN (no episode ended during that update's rollout).
_MAY_BE_NAN = ("episode_return",)
Metrics = dict[str, np.ndarray]  # name -> (num_seeds, steps of one call), on host


class Loop(Protocol):
    """What one step of an algorithm is, for `train`: the unit a run counts, names its metrics
    lines and checkpoints by, and stops at on a signal. `UPDATES` (one PPO update: ippo, br,
    ego) and `ITERATIONS` (one open-ended iteration: ROTATE) are the two there are."""

    unit: str  # "update" or "iteration": metrics lines, checkpoint names, messages
    bar_unit: str  # the progress bar's unit
    checkpoint_every_step: bool  # a checkpoint after every step (else on the time schedule)
    plot_every_s: float  # redraw curve.png at a checkpoint at most this often
    curve_metric: str  # the metric of `RunOutcome.final_return`
    curve_label: str  # what `curve_metric` is, in words
    progress_metrics: tuple[tuple[str, str], ...]  # (label, metric) on the progress bar
    diverged_fix: str  # what to try when a run diverges

    def preset(self, algo: Algorithm, name: str, task: Task) -> Any:
        """The config of preset `name` on `task`."""
        ...

    def init(self, algo: Algorithm, spec: RunSpec, config: Any, inputs: tuple[Any, ...]) -> Any:
        """A fresh state of every seed of `spec` (leading seed axis)."""
        ...

    def done(self, state: Any) -> int:
        """Steps `state` has done."""
        ...

    def total(self, config: Any) -> int:
        """Steps of the whole run."""
        ...

    def steps_per_call(self, config: Any) -> int:
        """Steps each item of `run` advances."""
        ...

    def env_steps_done(self, config: Any, done: int) -> int:
        """Joint env steps per seed after `done` steps."""
        ...

    def plan(self, config: Any) -> dict[str, int]:
        """The run's size, for run.json."""
        ...

    def run(self, algo: Algorithm, state: Any, config: Any) -> Iterator[tuple[int, Any, Metrics]]:
        """Yield `(steps done, state, metrics)` until the run is done."""
        ...

    def may_be_nan(self, metric: str) -> bool:
        """Whether `metric` may be NaN in a healthy run (no episode ended)."""
        ...

    def checked_params(self, algo: Algorithm, state: Any) -> dict[str, Any]:
        """Whose params (a phrase) -> the params that must stay finite."""
        ...

    def keeps_policies(self, config: Any, done: int) -> bool:
        """Whether to save the learners as policy files after step `done` (besides the end)."""
        ...

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
        """Write the learners of every seed as policy files into `folder`; their paths.
        `kept`: a snapshot during the run (`train --keep-every`), not the final policies."""
        ...

    def plot(self, run: RunDir, title: str) -> Path | None:
        """Draw the run's curves into `run.curve` (None before the first metrics line)."""
        ...


class UpdateLoop:
    """One step = one PPO update of `module.update(state, config)`, `config.updates_per_call`
    per jitted call (`aht_bench.training.driver`): ippo, br and ego."""

    unit = "update"
    bar_unit = "upd"
    checkpoint_every_step = False
    plot_every_s = PLOT_EVERY_S
    curve_metric = CURVE_METRIC
    curve_label = "base return"
    progress_metrics = (("ret", CURVE_METRIC),)
    diverged_fix = "Lower ppo.learning_rate or check the reward scale"

    def preset(self, algo: Algorithm, name: str, task: Task) -> Any:
        return presets.get(algo.name, name, task)

    def init(self, algo: Algorithm, spec: RunSpec, config: Any, inputs: tuple[Any, ...]) -> Any:
        keys = jax.random.split(jax.random.PRNGKey(spec.seed), spec.num_seeds)
        return init_seeds(keys, algo.module.init, config, *inputs)

    def done(self, state: Any) -> int:
        return updates_done(state)

    def total(self, config: Any) -> int:
        return config.num_updates

    def steps_per_call(self, config: Any) -> int:
        return config.updates_per_call

    def env_steps_done(self, config: Any, done: int) -> int:
        return done * config.batch_size

    def plan(self, config: Any) -> dict[str, int]:
        return {"num_updates": config.num_updates, "batch_size": config.batch_size}

    def run(self, algo: Algorithm, state: Any, config: Any) -> Iterator[tuple[int, Any, Metrics]]:
        for done, new_state, metrics in iterate(state, algo.module.update, config):
            yield done, new_state, {k: np.asarray(v) for k, v in jax.device_get(metrics).items()}

    def may_be_nan(self, metric: str) -> bool:
        return metric in _MAY_BE_NAN

    def checked_params(self, algo: Algorithm, state: Any) -> dict[str, Any]:
        return {"the learners'": algo.module.learner_params(state)}

    def keeps_policies(self, config: Any, done: int) -> bool:
        return done in config.checkpoint_updates

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
        from aht_bench.policies import save_policy

        network = algo.module.network(config)
        paths = []
        for stem, params in _learner_policies(algo, algo.module.learner_params(state)):
            path = folder / f"{stem}.safetensors"
            card = _policy_card(self, spec, config, stem, done)
            save_policy(path, network, params, card)
            paths.append(path)
        return paths

    def plot(self, run: RunDir, title: str) -> Path | None:
        return plot_curve(run, title)


class IterationLoop:
    """One step = one whole open-ended iteration, `method.iterate(state, config)`: ROTATE and
    the baselines, each an `aht_bench.algorithms.api.Method`.

    The method's state has `iteration`, `ego` and `buffer` (what it generated). The state is
    small (an ego and a buffer of teammates), so every iteration is checkpointed and the
    curves redrawn.
    """

    unit = "iteration"
    bar_unit = "it"
    checkpoint_every_step = True
    plot_every_s = 0.0
    curve_metric = "ego_return"
    curve_label = "ego return with the population"

    def __init__(self, method: Method[Any, Any]) -> None:
        self.method = method
        self.report = method.report  # the curves, progress metrics and divergence advice
        self.progress_metrics = method.report.progress_metrics
        self.diverged_fix = method.report.diverged_fix

    def preset(self, algo: Algorithm, name: str, task: Task) -> Any:
        return self.method.preset(name, task)

    def init(self, algo: Algorithm, spec: RunSpec, config: Any, inputs: tuple[Any, ...]) -> Any:
        return self.method.init_seeds(jax.random.PRNGKey(spec.seed), config, spec.num_seeds)

    def done(self, state: Any) -> int:
        return int(np.asarray(jax.device_get(state.iteration)).reshape(-1)[0])

    def total(self, config: Any) -> int:
        return config.iterations

    def steps_per_call(self, config: Any) -> int:
        return 1

    def env_steps_done(self, config: Any, done: int) -> int:
        # a config whose iterations differ in size (a two-stage method) says how many
        if hasattr(config, "env_steps_after"):
            return int(config.env_steps_after(done))
        return done * config.env_steps_per_iteration

    def plan(self, config: Any) -> dict[str, int]:
        return {
            "num_iterations": config.iterations,
            "env_steps_per_iteration": config.env_steps_per_iteration,
        }

    def run(self, algo: Algorithm, state: Any, config: Any) -> Iterator[tuple[int, Any, Metrics]]:
        setup = self.method.setup(config)  # once for the whole run
        for done in range(self.done(state) + 1, config.iterations + 1):
            state, metrics = self.method.iterate(state, setup)
            yield done, state, {k: np.asarray(v)[:, None] for k, v in metrics.items()}

    def may_be_nan(self, metric: str) -> bool:
        return metric.endswith("_return") or metric == "regret"  # NaN: no episode ended

    def checked_params(self, algo: Algorithm, state: Any) -> dict[str, Any]:
        return {"the ego's": state.ego, "the generated teammates'": state.buffer}

    def keeps_policies(self, config: Any, done: int) -> bool:
        return False

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
        """Per seed the ego and the generated population; a snapshot during the run (`kept`)
        holds the egos only (a population of every iteration would grow quadratically)."""
        from aht_bench.policies import save_policy, save_population

        setup = self.method.setup(config)
        ego_network = setup.networks.ego
        paths = []
        for s in range(spec.num_seeds):
            ego, population = (folder / f"seed{s}-{k}.safetensors" for k in ("ego", "population"))
            params = self.method.ego_params(state, s)
            save_policy(ego, ego_network, params, _policy_card(self, spec, config, ego.stem, done))
            paths.append(ego)
            if kept:
                continue
            members = self.method.population(state, setup, s)
            save_population(
                population, members, _policy_card(self, spec, config, population.stem, done)
            )
            paths.append(population)
        return paths

    def plot(self, run: RunDir, title: str) -> Path | None:
        return plot_iterations(run, title, self.report.generation_curves, self.report.ego_curves)


UPDATES = UpdateLoop()


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """How the run loop drives one algorithm module. With `loop=UPDATES` the module has
    `init(key, config, *inputs)`, `update(state, config)`, `learner_params(state)` and
    `network(config)`; with `ITERATIONS`, see `IterationLoop`. The table of them is
    `aht_bench.runs.ALGORITHMS`."""

    name: str
    module: ModuleType
    needs_teammates: bool  # init takes a TeammatePool (br, ego)
    per_agent: bool = False  # learner params have an agent axis after the seed axis (IPPO)
    loop: Loop = UPDATES  # what one step of the run is
    presets: tuple[str, ...] = ("quick", "paper")  # the preset names it has

    def config(self, spec: RunSpec) -> Any:
        """The config `spec` asks for: its preset's, with its overrides applied (validated)."""
        if spec.preset not in self.presets:
            raise ValueError(
                f"{self.name} has no {spec.preset!r} preset; choose one of "
                f"{', '.join(self.presets)}"
            )
        return apply_overrides(self.loop.preset(self, spec.preset, spec.task), spec.overrides)


def _learner_policies(algo: Algorithm, params: Any) -> list[tuple[str, Any]]:
    """(file stem, params) for every learner of every seed; params on host."""
    params = jax.device_get(params)
    num_seeds = jax.tree.leaves(params)[0].shape[0]
    out = []
    for s in range(num_seeds):
        seed_params = jax.tree.map(lambda x, s=s: x[s], params)
        if algo.per_agent:
            num_agents = jax.tree.leaves(seed_params)[0].shape[0]
            for a in range(num_agents):
                agent = jax.tree.map(lambda x, a=a: x[a], seed_params)
                out.append((f"seed{s}-agent{a}", agent))
        else:
            out.append((f"seed{s}", seed_params))
    return out


def _policy_card(loop: Loop, spec: RunSpec, config: Any, learner: str, done: int) -> dict:
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
