"""Long training runs on disk: checkpoints, exact resume, metrics, curves, signals, divergence.

    spec = RunSpec("ippo", "overcooked-cramped_room-v1", preset="quick", num_seeds=3)
    outcome = train(algorithms.get("ippo"), spec, Path("runs/ippo-cr"))  # resume=True continues

One loop drives every algorithm; its `Algorithm` entry's `loop` says what one *step* is: one
PPO update for ippo, br and ego (`UPDATES`), one whole open-ended iteration (teammate
generation + ego update) for ROTATE (`ITERATIONS`). A run lives in one folder:

    run.json                 what runs (RunSpec), the resolved config, teammates (+ sha256)
    metrics.jsonl            one JSON line per step: update (or iteration), env_steps, time_s,
                             and every metric as a list over seeds (NaN written as null)
    checkpoints/latest.json  the current checkpoint (written last, atomically)
    checkpoints/update-NNNNNN.safetensors(+.json)   whole train states (the last two kept;
                             iteration-NNNNNN for ROTATE, one after every iteration)
    curve.png                the learning curve (base return vs env steps, per seed and mean);
                             ROTATE: SP/XP returns and regret, and the ego's return, per iteration
    policies/final/…         the trained learners as policy files (`load_policy`); ROTATE: per
                             seed the ego and the generated population (`load_population`)
    policies/update-NNNNNN/… the learners after `config.checkpoint_updates` (FCP pools)

Checkpoints hold the whole train state (params, optimiser states, env states, carries, PRNG
keys, step counter), so a run killed at any moment (even SIGKILL) and resumed from its last
checkpoint ends bit-identical to one never stopped. SIGINT (Ctrl-C) and SIGTERM stop the run at
the next step boundary after a checkpoint (`TrainingInterrupted`; the CLI exits 130/143); a
second Ctrl-C aborts at once. Non-finite losses or parameters stop the run before anything of
that step is saved (`TrainingDiverged`, naming the step, seed and metric).

The algorithm is passed in (`aht_bench.algorithms.ALGORITHMS` lists them): this module does not
import `aht_bench.algorithms`, except `RunSpec.config`, which looks the algorithm up by name
(lazily: that package imports this module).

May import jax, numpy, matplotlib, tqdm, aht_bench.envs, aht_bench.policies and
aht_bench.training.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import os
import signal
import sys
import threading
import time
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.files import atomic_write_bytes
from aht_bench.training import checkpoint, presets
from aht_bench.training.driver import init_seeds, iterate, updates_done
from aht_bench.training.partners import teammate_pool

RUN_FORMAT = "aht-bench-run"
RUN_FORMAT_VERSION = 1
KEEP_CHECKPOINTS = 2
PLOT_EVERY_S = 60.0  # redraw curve.png at a checkpoint at most this often (and at the end)
CURVE_METRIC = "episode_return"
# Metrics that may legitimately be NaN (no episode ended during that update's rollout).
_MAY_BE_NAN = ("episode_return",)
# ROTATE's curves (curve.png): (metric, label, colour) per panel
Curve = tuple[str, str, str]  # (metric, label, matplotlib colour)
_REGRET_CURVES: tuple[Curve, ...] = (
    ("sp_return", "SP return (teammate x BR)", "C0"),
    ("xp_return", "XP return (teammate x ego)", "C1"),
    ("regret", "regret estimate (SP - XP)", "C3"),
)
_EGO_CURVES: tuple[Curve, ...] = (("ego_return", "ego return with the population", "C2"),)


class RunDirError(ValueError):
    """The run folder cannot be used as asked (exists already, holds no run, different spec)."""


class TrainingInterrupted(Exception):
    """SIGINT or SIGTERM stopped the run at a step boundary, after a checkpoint."""

    def __init__(self, signum: int, update: int, out: Path, unit: str = "update"):
        self.signum = signum
        self.update = update  # steps done: updates, or iterations (see `unit`)
        self.out = out
        name = signal.Signals(signum).name
        super().__init__(
            f"{name}: stopped after {unit} {update}, checkpoint saved in {out}; continue with "
            "--resume"
        )

    @property
    def exit_code(self) -> int:
        """The shell convention: 128 + signal number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


class TrainingDiverged(RuntimeError):
    """A loss or parameter became NaN or infinite; nothing of that step was saved."""


# --------------------------------------------------------------------------- algorithms

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

    def preset(self, algo: Algorithm, name: str, task_id: str) -> Any:
        """The config of preset `name` on `task_id`."""
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
        self, folder: Path, algo: Algorithm, spec: RunSpec, config: Any, state: Any, done: int
    ) -> list[Path]:
        """Write the learners of every seed as policy files into `folder`; their paths."""
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

    def preset(self, algo: Algorithm, name: str, task_id: str) -> Any:
        return presets.get(algo.name, name, task_id)

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
        self, folder: Path, algo: Algorithm, spec: RunSpec, config: Any, state: Any, done: int
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
    """One step = one whole open-ended iteration, `module.iterate(state, config)`: ROTATE.

    The module provides `preset(name, task)`, `init_seeds(key, config, num_seeds)`,
    `iterate(state, config) -> (state, metrics of (num_seeds,) arrays)`, `ego_params(state,
    seed)`, `population(state, config, seed)` and `networks(config).ego`; its state has
    `iteration`, `ego` and `buffer` (the generated teammates). The state is small (an ego and
    a buffer of teammates), so every iteration is checkpointed and the curves redrawn.
    """

    unit = "iteration"
    bar_unit = "it"
    checkpoint_every_step = True
    plot_every_s = 0.0
    curve_metric = "ego_return"
    curve_label = "ego return with the population"

    def __init__(
        self,
        generation_curves: tuple[Curve, ...] = _REGRET_CURVES,
        progress_metrics: tuple[tuple[str, str], ...] = (
            ("regret", "regret"),
            ("ego", "ego_return"),
        ),
        diverged_fix: str = "Lower teammate_ppo.learning_rate or ego_ppo.learning_rate",
    ) -> None:
        self.generation_curves = generation_curves  # left panel of curve.png
        self.progress_metrics = progress_metrics
        self.diverged_fix = diverged_fix

    def preset(self, algo: Algorithm, name: str, task_id: str) -> Any:
        return algo.module.preset(name, task_id)

    def init(self, algo: Algorithm, spec: RunSpec, config: Any, inputs: tuple[Any, ...]) -> Any:
        return algo.module.init_seeds(jax.random.PRNGKey(spec.seed), config, spec.num_seeds)

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
        for done in range(self.done(state) + 1, config.iterations + 1):
            state, metrics = algo.module.iterate(state, config)
            yield done, state, {k: np.asarray(v)[:, None] for k, v in metrics.items()}

    def may_be_nan(self, metric: str) -> bool:
        return metric.endswith("_return") or metric == "regret"  # NaN: no episode ended

    def checked_params(self, algo: Algorithm, state: Any) -> dict[str, Any]:
        return {"the ego's": state.ego, "the generated teammates'": state.buffer}

    def keeps_policies(self, config: Any, done: int) -> bool:
        return False

    def save_policies(
        self, folder: Path, algo: Algorithm, spec: RunSpec, config: Any, state: Any, done: int
    ) -> list[Path]:
        from aht_bench.policies import save_policy, save_population

        ego_network = algo.module.networks(config).ego
        paths = []
        for s in range(spec.num_seeds):
            ego, population = (folder / f"seed{s}-{k}.safetensors" for k in ("ego", "population"))
            params = algo.module.ego_params(state, s)
            save_policy(ego, ego_network, params, _policy_card(self, spec, config, ego.stem, done))
            members = algo.module.population(state, config, s)
            save_population(
                population, members, _policy_card(self, spec, config, population.stem, done)
            )
            paths += [ego, population]
        return paths

    def plot(self, run: RunDir, title: str) -> Path | None:
        return plot_iterations(run, title, self.generation_curves)


UPDATES = UpdateLoop()
ITERATIONS = IterationLoop()


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """How the run loop drives one algorithm module. With `loop=UPDATES` the module has
    `init(key, config, *inputs)`, `update(state, config)`, `learner_params(state)` and
    `network(config)`; with `ITERATIONS`, see `IterationLoop`. The table of them is
    `aht_bench.algorithms.ALGORITHMS`."""

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
        return apply_overrides(self.loop.preset(self, spec.preset, spec.task_id), spec.overrides)


# --------------------------------------------------------------------------- the spec


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What a run is: algorithm, task, preset, seeds, teammates and config overrides.

    `overrides` are `(field, value)` string pairs as typed on the command line, e.g.
    `("total_timesteps", "100000")`, `("ppo.learning_rate", "3e-4")` or, for ROTATE,
    `("teammate_ppo.learning_rate", "3e-4")`; `teammates` are heuristic names of the task or
    paths of policy/population files (`br` and `ego` only).
    """

    algorithm: str
    task_id: str
    preset: str = "quick"
    num_seeds: int = 1
    seed: int = 0
    teammates: tuple[str, ...] = ()
    overrides: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        from aht_bench.envs.registry import resolve

        object.__setattr__(self, "task_id", resolve(self.task_id))
        object.__setattr__(self, "teammates", tuple(self.teammates))
        object.__setattr__(self, "overrides", tuple((str(k), str(v)) for k, v in self.overrides))
        if self.num_seeds < 1:
            raise ValueError(f"num_seeds={self.num_seeds} is invalid: use at least 1")

    def config(self) -> Any:
        """The preset's config with the overrides applied (validated): `Algorithm.config` of
        `aht_bench.algorithms.get(self.algorithm)`."""
        from aht_bench.algorithms import get  # here: aht_bench.algorithms imports this module

        return get(self.algorithm).config(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "task_id": self.task_id,
            "preset": self.preset,
            "num_seeds": self.num_seeds,
            "seed": self.seed,
            "teammates": list(self.teammates),
            "overrides": [list(kv) for kv in self.overrides],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        return cls(
            algorithm=data["algorithm"],
            task_id=data["task_id"],
            preset=data["preset"],
            num_seeds=int(data["num_seeds"]),
            seed=int(data["seed"]),
            teammates=tuple(data["teammates"]),
            overrides=tuple((k, v) for k, v in data["overrides"]),
        )


def _coerce(owner: type, field: str, value: str, name: str) -> Any:
    """`value` as the type of `owner`'s `field` (`name`: the override as typed, for errors)."""
    kind = typing.get_type_hints(owner)[field]
    args = typing.get_args(kind)
    if type(None) in args and len(args) == 2:  # `T | None`: "none" or a T
        if value.strip().lower() == "none":
            return None
        kind = next(a for a in args if a is not type(None))
        args = typing.get_args(kind)
    origin = typing.get_origin(kind)
    try:
        if kind is bool:
            if value.lower() in ("true", "1", "yes", "on"):
                return True
            if value.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError("use true or false")
        if kind is int:
            as_float = float(value)  # accepts 1e6
            if not as_float.is_integer():
                raise ValueError("use a whole number")
            return int(as_float)
        if kind is float:
            return float(value)
        if kind is str:
            return value
        if origin is tuple and typing.get_origin(args[0]) is tuple:  # (name, number) pairs
            return tuple(_pair(item) for item in value.split(",") if item.strip())
        if origin is tuple:
            return tuple(int(float(v)) for v in value.split(",") if v.strip())
    except ValueError as e:
        raise ValueError(f"override {name}={value!r} is invalid: {e}") from None
    raise ValueError(f"override {name}={value!r}: fields of type {kind} cannot be overridden")


def _pair(item: str) -> tuple[str, float]:
    """ "name:number" -> (name, number), for pair-tuple fields such as IPPO's `shaping`."""
    name, sep, number = item.partition(":")
    if not sep or not name.strip():
        raise ValueError(
            f"{item!r} is not NAME:NUMBER (e.g. counter_pickup:0,onion_on_counter:0.5)"
        )
    return name.strip(), float(number)


def _unknown(name: str, known: list[str], listing: str) -> ValueError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(f"unknown override {name!r}{hint}; {listing}")


def apply_overrides(config: Any, overrides: tuple[tuple[str, str], ...]) -> Any:
    """`config` (a frozen config dataclass) with `field=value` overrides; `group.field` sets a
    field of a nested config (`ppo.learning_rate`; ROTATE's `teammate_ppo.*` and `ego_ppo.*`).
    Values are typed from the field's annotation and the result is validated like any config;
    errors name the field. A config class with an `upgrade_legacy(fields) -> fields` static
    method (ROTATE's) has the field names and values older versions wrote read as today's, so
    old runs still resume."""
    upgrade = getattr(type(config), "upgrade_legacy", None)
    if upgrade is not None:
        overrides = tuple(kv for name, value in overrides for kv in upgrade({name: value}).items())
    groups = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if dataclasses.is_dataclass(getattr(config, f.name))
    }
    plain = sorted({f.name for f in dataclasses.fields(config)} - {"task_id"} - set(groups))
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {group: {} for group in groups}
    for name, value in overrides:
        group, dot, field = name.partition(".")
        if dot and group in groups:
            inner = sorted(f.name for f in dataclasses.fields(groups[group]))
            if field not in inner:
                qualified = [f"{group}.{f}" for f in inner]
                raise _unknown(name, qualified, f"fields of {group}: {', '.join(qualified)}")
            nested[group][field] = _coerce(type(groups[group]), field, value, name)
        elif not dot and name in plain:
            top[name] = _coerce(type(config), name, value, name)
        elif name == "task_id":
            raise ValueError("the task is not an override: choose it with --task (RunSpec.task_id)")
        else:
            listing = ", ".join(plain + [f"{g}.<field>" for g in groups])
            known = plain + [
                f"{g}.{f.name}" for g, sub in groups.items() for f in dataclasses.fields(sub)
            ]
            raise _unknown(name, known, f"fields: {listing}")
    for group, changes in nested.items():
        if not changes:
            continue
        try:
            top[group] = dataclasses.replace(groups[group], **changes)
        except ValueError as e:
            # the nested config names its own field ("clip_eps=0.0 is invalid"): qualify it
            message = str(e)
            fields = {f.name for f in dataclasses.fields(groups[group])}
            qualify = message.partition("=")[0] in fields
            raise ValueError(f"{group}.{message}" if qualify else message) from None
    return dataclasses.replace(config, **top) if top else config


# --------------------------------------------------------------------------- teammates


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve_teammates(task_id: str, specs: tuple[str, ...]) -> tuple[Any, list[dict[str, Any]]]:
    """The teammates named by `specs` and a record of each (kind, file sha256).

    A spec is a heuristic name of the task (e.g. "independent_agent_0", "lexi") or the path of
    a policy file (`save_policy`) or population file (`save_population`). One population file
    is used as it is (its members drawn uniformly); it cannot be mixed with other specs.
    """
    from aht_bench.policies import TeammateSet, load_policy, load_population, read_card
    from aht_bench.policies.heuristics import make_heuristic

    records: list[dict[str, Any]] = []
    names: list[str] = []
    members: list[tuple[Any, Any]] = []
    for spec in specs:
        path = Path(spec)
        if path.suffix == ".safetensors" or path.exists():
            if not path.is_file():
                raise ValueError(f"teammate file {path} does not exist")
            card = read_card(path)
            if card.get("task_id") not in (None, task_id):
                raise ValueError(
                    f"teammate file {path} was trained on {card['task_id']}, not {task_id}"
                )
            record = {"spec": spec, "sha256": _sha256(path)}
            if card.get("population_size") is not None:
                if len(specs) > 1:
                    raise ValueError(
                        f"{path} is a population file: give it as the only teammate spec "
                        "(its members are drawn uniformly)"
                    )
                records.append(record | {"kind": "population"})
                return load_population(path), records
            policy, params = load_policy(path)
            records.append(record | {"kind": "policy"})
            names.append(path.stem)
            members.append((policy, params))
        else:
            records.append({"spec": spec, "kind": "heuristic"})
            names.append(spec)
            members.append((make_heuristic(task_id, spec), None))
    if len(set(names)) != len(names):
        raise ValueError(f"teammate specs name the same teammate twice: {list(specs)}")
    return TeammateSet(names, members), records


# --------------------------------------------------------------------------- the run folder


class RunDir:
    """The paths of a run folder (see the module docstring)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.spec = self.root / "run.json"
        self.metrics = self.root / "metrics.jsonl"
        self.checkpoints = self.root / "checkpoints"
        self.pointer = self.checkpoints / "latest.json"
        self.curve = self.root / "curve.png"
        self.policies = self.root / "policies"

    def checkpoint_file(self, step: int, unit: str = "update") -> Path:
        return self.checkpoints / f"{unit}-{step:06d}.safetensors"

    def latest_checkpoint(self) -> Path | None:
        """The checkpoint the pointer names, or None before the first."""
        try:
            pointer = json.loads(self.pointer.read_text())
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError) as e:
            raise RunDirError(f"{self.pointer} is unreadable ({e})") from None
        return self.checkpoints / pointer["file"]


@dataclasses.dataclass(frozen=True)
class RunOutcome:
    """What `train` returns."""

    out: Path
    config: Any
    updates: int  # steps done: PPO updates, or iterations (see `unit`)
    env_steps: int
    final_return: list[float]  # per seed: mean of the loop's curve metric over the last 10%
    policies: list[Path]  # the final policy files
    train_seconds: float
    unit: str = "update"


def _json_value(x: Any) -> Any:
    v = float(x)
    return v if math.isfinite(v) else None


def _write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1) + "\n").encode())


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The lines of a metrics.jsonl file (a torn last line, from a kill, is skipped)."""
    rows = []
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _column(rows: list[dict[str, Any]], metric: str) -> np.ndarray:
    """(len(rows), num_seeds) values of `metric` (null, or a row without it, read as NaN: the
    iterations of a two-stage method's stages report different metrics)."""
    seeds = next((len(r[metric]) for r in rows if metric in r), 1)
    return np.array(
        [[np.nan if v is None else v for v in r.get(metric, [None] * seeds)] for r in rows],
        dtype=np.float64,
    )


def final_returns(
    rows: list[dict[str, Any]], num_seeds: int, metric: str = CURVE_METRIC
) -> list[float]:
    """Per seed: the mean of `metric` over the last 10% of the rows (NaN if none)."""
    tail = rows[-max(1, len(rows) // 10) :]
    values = _column([r for r in tail if metric in r], metric).reshape(-1, num_seeds)
    out = []
    for s in range(num_seeds):
        column = values[:, s][np.isfinite(values[:, s])]
        out.append(float(column.mean()) if column.size else float("nan"))
    return out


def _truncate_metrics(path: Path, unit: str, done: int) -> None:
    rows = [r for r in read_metrics(path) if r.get(unit, 0) <= done]
    atomic_write_bytes(path, "".join(json.dumps(r) + "\n" for r in rows).encode())


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
    generation: tuple[Curve, ...] = _REGRET_CURVES,
    ego: tuple[Curve, ...] = _EGO_CURVES,
) -> Path | None:
    """ROTATE's curves into `run.curve`, against the iteration: the regret curve (SP and XP
    returns of each new teammate and the regret estimate SP - XP) on the left, the ego's
    learning curve (its return with the population) on the right. Each seed is a thin line,
    the mean over seeds a thick one with markers."""
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
        for metric, label, colour in curves:
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


class _Signals:
    """Turns the first SIGINT/SIGTERM into a stop request; a second SIGINT aborts at once."""

    def __init__(self, unit: str = "update") -> None:
        self.received: int | None = None
        self.unit = unit

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.received = signum
        print(
            f"\n{signal.Signals(signum).name}: stopping after the current {self.unit} and saving "
            "a checkpoint (Ctrl-C again aborts without saving)",
            file=sys.stderr,
            flush=True,
        )

    @contextmanager
    def installed(self) -> Iterator[_Signals]:
        if threading.current_thread() is not threading.main_thread():
            yield self  # signals can only be handled in the main thread
            return
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


@jax.jit
def _all_finite(tree: Any) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def _check_finite(metrics: Metrics, params: dict[str, Any], first: int, loop: Loop) -> None:
    unit = loop.unit
    for name, values in metrics.items():
        if loop.may_be_nan(name):
            continue
        bad = ~np.isfinite(values)
        if bad.any():
            seed, offset = (int(i[0]) for i in np.nonzero(bad))
            raise TrainingDiverged(
                f"{name} became {values[seed, offset]} at {unit} {first + offset} (seed index "
                f"{seed}); nothing of that {unit} was saved. {loop.diverged_fix}, then resume "
                "from the last checkpoint or start over"
            )
    last = first + next(iter(metrics.values())).shape[1] - 1
    for whose, tree in params.items():
        if not bool(_all_finite(tree)):
            raise TrainingDiverged(
                f"{whose} parameters became non-finite by {unit} {last}; nothing of that "
                f"{unit} was saved. {loop.diverged_fix}, then resume or start over"
            )


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
        "task_id": config.canonical_task_id,
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


def _start_folder(
    run: RunDir, spec: RunSpec, config: Any, records: list[Any], plan: dict[str, int]
) -> None:
    if run.spec.exists():
        raise RunDirError(
            f"{run.root} already holds a run; pass --resume to continue it, or choose a new --out"
        )
    if run.root.exists() and any(run.root.iterdir()):
        raise RunDirError(
            f"{run.root} is not empty and holds no run; choose a new or empty --out "
            "(nothing there was touched)"
        )
    from aht_bench import __version__

    run.root.mkdir(parents=True, exist_ok=True)
    _write_json(
        run.spec,
        {
            "format": RUN_FORMAT,
            "format_version": RUN_FORMAT_VERSION,
            "package_version": __version__,
            "jax_version": jax.__version__,
            "spec": spec.to_json(),
            "config": _config_json(config),
            "teammates": records,
            **plan,
        },
    )


def _config_json(config: Any) -> dict[str, Any]:
    return json.loads(json.dumps(dataclasses.asdict(config), default=list))


def read_spec(out: Path) -> RunSpec:
    """The spec of the run stored in `out`."""
    run = RunDir(Path(out))
    try:
        data = json.loads(run.spec.read_text())
    except FileNotFoundError:
        raise RunDirError(
            f"{run.root} holds no run to resume (no run.json); start one without --resume"
        ) from None
    except (OSError, json.JSONDecodeError) as e:
        raise RunDirError(f"{run.spec} is unreadable ({e})") from None
    if data.get("format") != RUN_FORMAT:
        raise RunDirError(f"{run.spec} is not an aht-bench run file")
    return RunSpec.from_json(data["spec"])


def _check_resume(run: RunDir, spec: RunSpec, records: list[dict[str, Any]]) -> None:
    stored = read_spec(run.root)
    if stored != spec:
        diffs = [
            f"{k}: run has {v!r}, asked {spec.to_json()[k]!r}"
            for k, v in stored.to_json().items()
            if spec.to_json()[k] != v
        ]
        raise RunDirError(
            f"{run.root} holds a different run ({'; '.join(diffs)}); resume it with its own "
            "settings (or only --out and --resume), or choose a new --out"
        )
    saved = json.loads(run.spec.read_text())["teammates"]
    for old, new in zip(saved, records, strict=True):
        if old.get("sha256") != new.get("sha256"):
            raise RunDirError(
                f"teammate file {new['spec']} changed since the run started (sha256 "
                f"{str(old.get('sha256'))[:12]}... then, {str(new.get('sha256'))[:12]}... now); "
                "restore it or start a new run"
            )


def check_teammates(algo: Algorithm, spec: RunSpec) -> None:
    """Raise a ValueError if `spec` gives teammates `algo` does not take, or none it needs."""
    if algo.name != spec.algorithm:
        raise ValueError(f"spec is for {spec.algorithm}, algorithm is {algo.name}")
    if algo.needs_teammates and not spec.teammates:
        raise ValueError(
            f"{algo.name} trains against teammates: give at least one (a heuristic name of the "
            "task, or a policy or population file)"
        )
    if not algo.needs_teammates and spec.teammates:
        raise ValueError(f"{algo.name} takes no teammates: it trains with partners of its own")


def train(
    algo: Algorithm,
    spec: RunSpec,
    out: Path,
    *,
    resume: bool = False,
    checkpoint_every_updates: int | None = None,
    checkpoint_every_s: float = 300.0,
    progress: bool = True,
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
) -> RunOutcome:
    """Run (or with `resume`, continue) `spec` of `algo` in the folder `out`; see the module
    docstring.

    A checkpoint is written whenever `checkpoint_every_updates` steps or `checkpoint_every_s`
    seconds have passed since the last one (whichever comes first; after every step where the
    loop says so, as ROTATE's does), on SIGINT/SIGTERM, and at the end.
    """
    check_teammates(algo, spec)
    loop, run = algo.loop, RunDir(Path(out))
    unit = loop.unit
    config = algo.config(spec)
    inputs: tuple[Any, ...] = ()
    records: list[dict[str, Any]] = []
    if algo.needs_teammates:
        teammates, records = resolve_teammates(config.canonical_task_id, spec.teammates)
        inputs = (teammate_pool(teammates),)
    if resume:
        _check_resume(run, spec, records)
    else:
        _start_folder(run, spec, config, records, loop.plan(config))

    start = time.perf_counter()
    state = loop.init(algo, spec, config, inputs)
    train_s = 0.0
    latest = run.latest_checkpoint() if resume else None
    if latest is not None:
        state, meta = checkpoint.load_state(latest, state)
        train_s = float(meta["train_s"])
        log(f"resuming {run.root} from {unit} {meta[unit]} ({latest.name})")
    elif resume:
        log(f"{run.root} has no checkpoint yet: starting from {unit} 0")
    done = loop.done(state)
    total, per_call = loop.total(config), loop.steps_per_call(config)
    _truncate_metrics(run.metrics, unit, done)
    log(
        f"{spec.algorithm} on {config.canonical_task_id} ({spec.preset}): {total} {unit}s, "
        f"{loop.env_steps_done(config, total):,} env steps per seed x {spec.num_seeds} "
        f"seed(s); init {time.perf_counter() - start:.1f}s"
    )

    title = f"{spec.algorithm} on {config.canonical_task_id} ({spec.preset})"
    last_saved = done
    last_save_time = time.perf_counter()
    last_plot_time = -math.inf

    def save(state: Any, step: int) -> None:
        nonlocal last_saved, last_save_time, last_plot_time
        path = run.checkpoint_file(step, unit)
        meta = {unit: step, "env_steps": loop.env_steps_done(config, step), "train_s": train_s}
        checkpoint.save_state(path, state, meta)
        _write_json(run.pointer, {"file": path.name, unit: step})
        for old in sorted(run.checkpoints.glob(f"{unit}-*.safetensors"))[:-KEEP_CHECKPOINTS]:
            old.unlink(missing_ok=True)
            checkpoint.card_path(old).unlink(missing_ok=True)
        if time.perf_counter() - last_plot_time >= loop.plot_every_s:
            loop.plot(run, title)
            last_plot_time = time.perf_counter()
        last_saved, last_save_time = step, time.perf_counter()

    from tqdm import tqdm

    bar = tqdm(
        total=total,
        initial=done,
        unit=loop.bar_unit,
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.1 if sys.stderr.isatty() else 30.0,
    )
    signals = _Signals(unit)
    with signals.installed(), bar:
        call_start = loop_start = time.perf_counter()
        for done, new_state, host in loop.run(algo, state, config):
            state = new_state
            first = done - per_call + 1
            _check_finite(host, loop.checked_params(algo, state), first, loop)
            now = time.perf_counter()
            if call_start == loop_start:
                with tqdm.external_write_mode(file=sys.stderr):  # the bar is redrawn after
                    log(f"first call (compile + {per_call} {unit}(s)): {now - call_start:.1f}s")
            train_s += now - call_start
            call_start = now
            with run.metrics.open("a") as f:
                for j in range(per_call):
                    row: dict[str, Any] = {
                        unit: first + j,
                        "env_steps": loop.env_steps_done(config, first + j),
                        "time_s": round(train_s, 3),
                    }
                    row |= {
                        k: [_json_value(v) for v in host[k][:, j]]
                        for k in sorted(host)
                        if k not in row
                    }
                    f.write(json.dumps(row) + "\n")
                f.flush()
                os.fsync(f.fileno())
            if loop.keeps_policies(config, done):
                folder = run.policies / f"{unit}-{done:06d}"
                loop.save_policies(folder, algo, spec, config, state, done)
            latest_values = {
                label: host[metric][:, -1]
                for label, metric in loop.progress_metrics
                if metric in host and np.isfinite(host[metric][:, -1]).any()
            }
            if latest_values:
                postfix = {k: f"{np.nanmean(v):.3g}" for k, v in latest_values.items()}
                bar.set_postfix(postfix, refresh=False)
            bar.update(per_call)
            due = (
                loop.checkpoint_every_step
                or (
                    checkpoint_every_updates is not None
                    and done - last_saved >= checkpoint_every_updates
                )
                or now - last_save_time >= checkpoint_every_s
            )
            if signals.received is not None:
                save(state, done)
                loop.plot(run, title)
                raise TrainingInterrupted(signals.received, done, run.root, unit)
            if due and done < total:
                save(state, done)
    if last_saved != done:
        save(state, done)
    loop.plot(run, title)
    policies = loop.save_policies(run.policies / "final", algo, spec, config, state, done)
    return RunOutcome(
        out=run.root,
        config=config,
        updates=done,
        env_steps=loop.env_steps_done(config, done),
        final_return=final_returns(read_metrics(run.metrics), spec.num_seeds, loop.curve_metric),
        policies=policies,
        train_seconds=train_s,
        unit=unit,
    )
