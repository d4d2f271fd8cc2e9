"""What a run is (`RunSpec`, from command-line options: `spec_from_options`), config overrides
as typed on the command line (`apply_overrides`) and the teammates a run trains against
(`resolve_teammates`).

May import numpy, the standard library, aht_bench.envs, aht_bench.policies and aht_bench.runs.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aht_bench.envs import Task


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What a run is: algorithm, task, preset, seeds, teammates and config overrides.

    `overrides` are `(field, value)` string pairs as typed on the command line, e.g.
    `("total_timesteps", "100000")`, `("ppo.learning_rate", "3e-4")` or, for ROTATE,
    `("teammate_ppo.learning_rate", "3e-4")`; `teammates` are heuristic names of the task or
    paths of policy/population files (`br` and `ego` only). `seed_group`: the seeds run in
    groups of this size (`aht_bench.training.driver.group_seeds`; None: each device runs all
    its seeds at once), which fixes the parameters to the bit whatever the device count.
    """

    algorithm: str
    task_id: str
    preset: str = "quick"
    num_seeds: int = 1
    seed: int = 0
    teammates: tuple[str, ...] = ()
    overrides: tuple[tuple[str, str], ...] = ()
    seed_group: int | None = None

    def __post_init__(self) -> None:
        from aht_bench.envs.registry import resolve

        object.__setattr__(self, "task_id", resolve(self.task_id))
        object.__setattr__(self, "teammates", tuple(self.teammates))
        object.__setattr__(self, "overrides", tuple((str(k), str(v)) for k, v in self.overrides))
        if self.num_seeds < 1:
            raise ValueError(f"num_seeds={self.num_seeds} is invalid: use at least 1")
        group = self.seed_group
        if group is not None and (group < 1 or self.num_seeds % group):
            raise ValueError(
                f"seed_group={group} is invalid for {self.num_seeds} seeds: use a group size "
                f"that divides the number of seeds"
            )

    @property
    def task(self) -> Task:
        """The run's task (its id was resolved when the spec was made)."""
        from aht_bench.envs import Task

        return Task(self.task_id)

    def config(self) -> Any:
        """The preset's config with the overrides applied (validated): `Algorithm.config` of
        `aht_bench.runs.registry.get(self.algorithm)`."""
        from aht_bench.runs.registry import get  # the registry imports this module

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
        } | ({} if self.seed_group is None else {"seed_group": self.seed_group})

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
            seed_group=data.get("seed_group"),
        )


def spec_from_options(
    algorithm: str, given: dict[str, Any], stored: RunSpec | None = None, devices: int = 1
) -> RunSpec:
    """The RunSpec of a run of `algorithm` from options as given on the command line (`given`:
    RunSpec fields as JSON, None where an option was left out): over the `stored` spec of a
    run resumed, or over the defaults (quick preset, one seed, seed 0). A new run split over
    `devices` gets the seed group each device compiles for, recorded so that the spec alone
    fixes the parameters. Raises `ValueError` or `KeyError` (no task) naming the problem."""
    chosen = {k: v for k, v in given.items() if v is not None}
    if stored is not None:
        values = stored.to_json() | chosen
    else:
        values = {"algorithm": algorithm, "preset": "quick", "num_seeds": 1, "seed": 0} | chosen
    spec = RunSpec(
        algorithm=algorithm,
        task_id=values["task_id"],
        preset=values.get("preset", "quick"),
        num_seeds=int(values.get("num_seeds", 1)),
        seed=int(values.get("seed", 0)),
        teammates=tuple(values.get("teammates", ())),
        overrides=tuple(tuple(kv) for kv in values.get("overrides", ())),
        seed_group=values.get("seed_group"),
    )
    if devices > 1 and stored is None and spec.seed_group is None and not spec.num_seeds % devices:
        spec = dataclasses.replace(spec, seed_group=spec.num_seeds // devices)
    return spec


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
