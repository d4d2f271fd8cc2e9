"""A sweep spec (a TOML file) and the runs it expands into.

    name = "rq1"
    methods = ["rotate", "fcp"]
    tasks = ["lbf", "cramped_room"]
    seeds = 3                   # seeds 0, 1, 2; or a list, e.g. [0, 4]
    preset = "paper"            # "quick" or "paper"
    heldout = "newest"          # the set every run is scored on: "newest" or a version ("v1")
    episodes = 64               # evaluation episodes per teammate and seat

    [set]                       # `aht-bench train --set` overrides, per method
    rotate = ["iterations=10"]

    [grid.rotate]               # a variant per combination of these values (one method's)
    competence_weight_xp = [0, 1]
    competence_weight_sp = [0, 1]

Every combination of method, task, variant and seed is one run (`SweepRun`): one seed per run,
so that runs spread over workers and machines, each run `aht-bench train METHOD --seeds 1
--seed S` would be on its own. With `seeds_per_run = K` (K divides the seed count) a run trains
K seeds vmapped in one process instead (`--seeds K --seed S`, S = 0, K, 2K, ...; keys
`jax.random.split(jax.random.PRNGKey(S), K)`), and its record scores the K egos together (CIs
over the seeds): on two CPU cores three vmapped seeds train about twice as fast as three
one-seed runs (benchmarks/results/sweep_vmapped_seeds.txt). `keep_every = N` keeps every Nth
iteration's egos (`aht-bench train --keep-every N`).

A spec may be split into parts (`[[part]]` tables), each with its own `methods`, `tasks`,
`preset`, `set` and `grid` (a part leaves out what it shares with the top level): e.g. one
preset for some tasks and another for the rest. In a spec with parts a run's variant names its
part's preset ("medium", or "medium,field=value" with a grid), so that one method and task may
run under two presets. `load` checks everything before anything runs: the keys and their
types, the names of methods, tasks and presets, and each run's config (the preset with its
overrides, validated like `aht-bench train` does), naming what is wrong and how to fix it.

May import the standard library, aht_bench.envs and aht_bench.runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

PART_KEYS = ("methods", "tasks", "preset", "set", "grid")
"""The keys a part (`[[part]]`) may have; those it leaves out are the spec's."""
KEYS = (
    "name",
    *PART_KEYS,
    "seeds",
    "seeds_per_run",
    "keep_every",
    "heldout",
    "episodes",
    "part",
)
"""The keys a spec may have."""
BUILTIN_PACKAGE = "aht_bench.experiments"
"""The package whose `specs/` folder holds the paper's experiments as specs (`builtin_specs`)."""


class SweepSpecError(ValueError):
    """A spec that cannot run: the message names the file, the key and the fix."""


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: a method on a task with one seed, one variant of its overrides."""

    method: str
    task_id: str
    seed: int
    preset: str
    overrides: tuple[tuple[str, str], ...]
    """The spec's `set` overrides of the method, then the variant's `grid` values."""
    variant: str
    """The variant's name ("base" without a grid; else "field=value,field=value")."""
    env_steps: int
    """Joint env steps of the whole run per seed (the config's budget)."""
    num_seeds: int = 1
    """Seeds trained vmapped in the run (`seeds_per_run`), from base seed `seed`."""
    keep_every: int | None = None
    """Keep every this many iterations' egos (`aht-bench train --keep-every`)."""

    @property
    def name(self) -> str:
        """The run's path under the sweep folder: method/task/variant/seedS (seedSxK for K
        vmapped seeds from base seed S)."""
        seeds = f"seed{self.seed}" + ("" if self.num_seeds == 1 else f"x{self.num_seeds}")
        return f"{self.method}/{self.task_id}/{_safe(self.variant)}/{seeds}"

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seed labels of the run's egos in reports: S .. S + K - 1."""
        return tuple(range(self.seed, self.seed + self.num_seeds))

    def train_args(self) -> list[str]:
        """The arguments of `aht-bench train` for this run (without --out/--resume)."""
        args = [self.method, "--task", self.task_id, "--preset", self.preset]
        args += ["--seeds", str(self.num_seeds), "--seed", str(self.seed)]
        for field, value in self.overrides:
            args += ["--set", f"{field}={value}"]
        if self.keep_every is not None:
            args += ["--keep-every", str(self.keep_every)]
        return args


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A checked spec and its runs, in the order they are listed and started."""

    name: str
    source: str
    """Where the spec came from (a path, or "builtin:NAME")."""
    heldout: str
    episodes: int
    runs: tuple[SweepRun, ...]


def _safe(variant: str) -> str:
    """`variant` as one path component."""
    return re.sub(r"[^A-Za-z0-9_.=,+-]", "_", variant)


def builtin_specs() -> dict[str, Any]:
    """name -> the packaged spec file (`aht_bench/experiments/specs/NAME.toml`)."""
    folder = resources.files(BUILTIN_PACKAGE) / "specs"
    return {p.name[: -len(".toml")]: p for p in folder.iterdir() if p.name.endswith(".toml")}


def read_spec_text(spec: str) -> tuple[str, str]:
    """The text of the spec `spec` (a .toml path, or a packaged spec's name such as "rq1") and
    where it came from."""
    path = Path(spec)
    if path.suffix == ".toml" or path.exists():
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as e:
            raise SweepSpecError(f"cannot read the sweep spec {path}: {e.strerror}") from None
    known = builtin_specs()
    if spec not in known:
        raise SweepSpecError(
            f"no sweep spec {spec!r}: give a .toml file or one of the paper's experiments "
            f"({', '.join(sorted(known))})"
        )
    return known[spec].read_text(encoding="utf-8"), f"builtin:{spec}"


def load(spec: str, *, preset: str | None = None, seeds: int | None = None) -> Sweep:
    """The sweep of `spec` (a path or a packaged spec's name), checked, its runs expanded.
    `preset` and `seeds` replace the spec's (e.g. a dry run of a `paper` spec at `quick`)."""
    text, source = read_spec_text(spec)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SweepSpecError(f"{source} is not valid TOML: {e}") from None
    if preset is not None:
        data["preset"] = preset
        for part in data.get("part", []) if isinstance(data.get("part"), list) else []:
            if isinstance(part, dict):
                part["preset"] = preset
    if seeds is not None:
        data["seeds"] = seeds
    return parse(data, source)


def _error(source: str, key: str, problem: str) -> SweepSpecError:
    return SweepSpecError(f"{source}: {key}: {problem}")


def _strings(data: Mapping[str, Any], key: str, source: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _error(source, key, f'use a non-empty list of names, e.g. {key} = ["..."]')
    if len(set(value)) != len(value):
        raise _error(source, key, "a name is listed twice")
    return value


def _seeds(value: Any, source: str) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return list(range(value))
    if isinstance(value, list) and value and all(type(v) is int and v >= 0 for v in value):
        if len(set(value)) == len(value):
            return [int(v) for v in value]
    raise _error(
        source, "seeds", "use a count (seeds = 3: seeds 0, 1, 2) or a list of distinct seeds >= 0"
    )


def _value(value: Any) -> str:
    """A TOML value as `--set` reads it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_value(v) for v in value)
    return str(value)


def _variants(grid: Any, method: str, source: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """(name, overrides) of every combination of the method's `grid` values."""
    if grid is None:
        return [("base", ())]
    key = f"grid.{method}"
    if not isinstance(grid, dict) or not grid:
        raise _error(source, key, "use a table of field = [values, ...]")
    for field, values in grid.items():
        if not isinstance(values, list) or not values:
            raise _error(source, f"{key}.{field}", "use a non-empty list of values")
    fields = list(grid)
    out = []
    for combo in itertools.product(*(grid[f] for f in fields)):
        pairs = tuple((f, _value(v)) for f, v in zip(fields, combo, strict=True))
        out.append((",".join(f"{f}={v}" for f, v in pairs), pairs))
    return out


def _count(data: Mapping[str, Any], key: str, source: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 1:
        raise _error(source, key, "use a whole number >= 1")
    return value


def _parts(data: Mapping[str, Any], source: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, keys) of each part of the spec: the spec itself when it has no `[[part]]`."""
    parts = data.get("part")
    if parts is None:
        return [(source, dict(data))]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        raise _error(source, "part", "use [[part]] tables, each with methods, tasks, preset ...")
    out = []
    for i, part in enumerate(parts):
        where = f"{source}: part {i + 1}"
        strays = sorted(set(part) - set(PART_KEYS))
        if strays:
            raise _error(where, strays[0], f"not a part key (part keys: {', '.join(PART_KEYS)})")
        out.append((where, {k: data[k] for k in PART_KEYS if k in data} | part))
    return out


def parse(data: dict[str, Any], source: str = "<spec>") -> Sweep:
    """The sweep of the spec `data` (TOML as a dict), checked (see the module docstring)."""
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise _error(source, unknown[0], f"not a sweep key (keys: {', '.join(KEYS)})")
    name = data.get("name", re.sub(r"[^A-Za-z0-9_.-]", "", Path(source).stem) or "sweep")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise _error(source, "name", "use letters, digits, '_', '.' or '-'")
    seeds = _seeds(data.get("seeds", 1), source)
    per_run = _count(data, "seeds_per_run", source) or 1
    if per_run > 1 and (seeds != list(range(len(seeds))) or len(seeds) % per_run):
        raise _error(
            source, "seeds_per_run", f"use a count of seeds that {per_run} divides (seeds = "
            f"{per_run} or {2 * per_run}, ...): each run trains {per_run} vmapped seeds"
        )  # fmt: skip
    keep_every = _count(data, "keep_every", source)
    heldout = data.get("heldout", "newest")
    if not isinstance(heldout, str) or not re.fullmatch(r"newest|v[0-9]+", heldout):
        raise _error(source, "heldout", 'use "newest" or a published version such as "v1"')
    episodes = data.get("episodes", 64)
    if type(episodes) is not int or episodes < 1:
        raise _error(source, "episodes", "use a whole number >= 1")
    bases = seeds[::per_run]
    tagged = "part" in data
    runs: list[SweepRun] = []
    for where, part in _parts(data, source):
        for run in _part_runs(part, where, tagged):
            runs += [
                dataclasses.replace(run, seed=s, num_seeds=per_run, keep_every=keep_every)
                for s in bases
            ]
    names = [r.name for r in runs]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise _error(source, "part", f"two parts both run {twice}: give one of them another preset")
    return Sweep(name, source, heldout, episodes, tuple(runs))


def _part_runs(data: dict[str, Any], source: str, tagged: bool) -> list[SweepRun]:
    """The runs of one part (or of a spec without parts), seed 0 each; `tagged`: the variant
    names the preset (a spec with parts)."""
    from aht_bench.envs import UnknownTaskError, resolve
    from aht_bench.runs import RunSpec, get

    methods = _strings(data, "methods", source)
    tasks = _strings(data, "tasks", source)
    preset = data.get("preset", "quick")
    if not isinstance(preset, str):
        raise _error(source, "preset", 'use a preset name, e.g. preset = "quick"')
    overrides, grid = data.get("set", {}), data.get("grid", {})
    for key, table in (("set", overrides), ("grid", grid)):
        if not isinstance(table, dict):
            raise _error(source, key, f"use a table of method = ..., e.g. [{key}] rotate = ...")
        strays = sorted(set(table) - set(methods))
        if strays:
            raise _error(source, f"{key}.{strays[0]}", "not one of the spec's methods")
    task_ids = []
    for task in tasks:
        try:
            task_ids.append(resolve(task))
        except UnknownTaskError as e:
            raise _error(source, "tasks", str(e)) from None
    runs = []
    for method in methods:
        try:
            algo = get(method)
        except ValueError as e:
            raise _error(source, "methods", str(e)) from None
        if algo.loop.unit != "iteration":  # ippo, br, ego: PPO stages, no generated partners
            raise _error(
                source, "methods", f"{method} trains no ego agent to score (sweeps run ROTATE "
                "and the baselines: rotate, fcp, brdiv, comedi, paired, minimax, cole)"
            )  # fmt: skip
        fixed = overrides.get(method, [])
        if not isinstance(fixed, list) or not all(isinstance(v, str) and "=" in v for v in fixed):
            raise _error(source, f"set.{method}", 'use a list of "field=value" strings')
        fixed_pairs = tuple(tuple(v.split("=", 1)) for v in fixed)
        for variant, pairs in _variants(grid.get(method), method, source):
            if tagged:
                variant = preset if variant == "base" else f"{preset},{variant}"
            for task_id in task_ids:
                spec = RunSpec(method, task_id, preset, 1, 0, (), fixed_pairs + pairs)
                try:
                    config = algo.config(spec)
                except (ValueError, KeyError) as e:
                    where = f"{method} on {task_id} ({variant})"
                    raise _error(source, where, str(e).strip("\"'")) from None
                steps = algo.loop.env_steps_done(config, algo.loop.total(config))
                runs.append(SweepRun(method, task_id, 0, preset, spec.overrides, variant, steps))
    return runs
