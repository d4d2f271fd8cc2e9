"""Saving and loading network policies: safetensors for weights plus a JSON card, no pickle.

`save_policy(path, policy, params, card_extra)` writes `path` (safetensors; params flattened
with "/"-joined keys such as "params/Dense_0/kernel") and `path + ".json"`, a card with the
format and version, the architecture's class name and constructor kwargs, obs_dim/num_actions,
the task id (if given), a provenance dict, the sha256 of the safetensors bytes and every
tensor's shape and dtype.

`save_population(path, population)` / `load_population(path)` do the same for a `Population`:
the members' params are stacked on a leading axis and the card says `population_size`.

`load_policy(path) -> (policy, params)` checks, before it builds anything: that the file is not
a pickle or zip payload, that the card exists and is ours, that the architecture is in the
allow-list `ARCHITECTURES` (classes are never imported by name), the sha256, that every
tensor's name, shape and dtype match a freshly initialised network of that architecture, and
that every weight is finite. Each failure is a `PolicyFileError` naming the file and the
problem.

Writes are atomic (temp file in the same folder, fsync, rename; `atomic_write_bytes`).

May import jax, flax, numpy, safetensors, aht_bench.files and aht_bench.policies.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from aht_bench.files import atomic_write_bytes, check_sha256
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.population import Population

FORMAT = "aht-bench-policy"
FORMAT_VERSION = 1

# The only classes `load_policy` will build; a card naming anything else is refused.
ARCHITECTURES: dict[str, type[MLPActorCritic] | type[RecurrentEgo]] = {
    "MLPActorCritic": MLPActorCritic,
    "RecurrentEgo": RecurrentEgo,
}
NetworkPolicy = MLPActorCritic | RecurrentEgo

# Leading bytes of formats that can run code when loaded: pickle (protocol 2+ starts with
# 0x80; protocols 0/1 with an opcode such as "(" or "}") and zip (torch.save, SB3). Only
# checked on files that do not have safetensors' layout, whose first byte can be anything.
_PICKLE_PREFIXES = (b"\x80", b"(dp", b"}q", b"(lp", b"]q", b"cnumpy", b"ccopy_reg")
_ZIP_PREFIX = b"PK\x03\x04"


def _looks_like_safetensors(blob: bytes) -> bool:
    """A safetensors file starts with a little-endian u64 header length, then a JSON object."""
    if len(blob) < 9:
        return False
    n = int.from_bytes(blob[:8], "little")
    return n <= len(blob) - 8 and blob[8:9] == b"{"


class PolicyFileError(ValueError):
    """A policy file that is missing, corrupted, unsafe, or does not fit its architecture."""


def _package_version() -> str:
    from aht_bench import __version__

    return __version__


def _key_name(entry: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def _flatten(tree: Any) -> dict[str, Any]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {"/".join(_key_name(e) for e in path): leaf for path, leaf in leaves}


def _template(policy: NetworkPolicy) -> Any:
    return jax.eval_shape(policy.init, jax.random.PRNGKey(0))


def save_policy(
    path: str | os.PathLike[str],
    policy: NetworkPolicy,
    params: Params,
    card_extra: dict[str, Any] | None = None,
) -> Path:
    """Save `params` of `policy`; returns the path of the JSON card.

    `card_extra` may hold "task_id" (str) and "provenance" (a JSON-able dict: training
    algorithm, seed, steps, ...); any other keys go to the card's "extra" entry.
    """
    return _save(Path(path), policy, params, card_extra, population_size=None)


def save_population(
    path: str | os.PathLike[str],
    population: Population,
    card_extra: dict[str, Any] | None = None,
) -> Path:
    """Save a `Population` (its members' stacked params); returns the path of the JSON card.

    The file is a policy file whose tensors carry the members on a leading axis and whose card
    says `population_size`; `card_extra` as in `save_policy`.
    """
    policy: Any = population.policy
    return _save(Path(path), policy, population.params, card_extra, population.size)


def _save(
    path: Path,
    policy: NetworkPolicy,
    params: Params,
    card_extra: dict[str, Any] | None,
    population_size: int | None,
) -> Path:
    lead = () if population_size is None else (population_size,)
    name = type(policy).__name__
    if ARCHITECTURES.get(name) is not type(policy):
        raise PolicyFileError(
            f"cannot save {name} to {path}: only {sorted(ARCHITECTURES)} can be saved and loaded"
        )
    tensors = {k: np.array(v, order="C") for k, v in _flatten(params).items()}
    template = _flatten(_template(policy))
    for k, spec in template.items():
        want = lead + tuple(spec.shape)
        if k not in tensors or tensors[k].shape != want or tensors[k].dtype != spec.dtype:
            got = (tensors[k].shape, tensors[k].dtype) if k in tensors else "missing"
            raise PolicyFileError(
                f"cannot save to {path}: params do not fit {name}({policy.config()}): "
                f"{k!r} is {got}, expected {want} {spec.dtype}"
            )
    if set(tensors) != set(template):
        raise PolicyFileError(
            f"cannot save to {path}: params have tensors {name} does not know: "
            f"{sorted(set(tensors) - set(template))[:5]}"
        )
    for k, v in tensors.items():
        if not np.all(np.isfinite(v)):
            raise PolicyFileError(f"cannot save to {path}: tensor {k!r} has NaN or inf values")
    extra = dict(card_extra or {})
    task_id = extra.pop("task_id", None)
    provenance = extra.pop("provenance", {})
    blob = st_save(tensors)
    card = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "architecture": name,
        "kwargs": policy.config(),
        "obs_dim": policy.obs_dim,
        "num_actions": policy.num_actions,
        "population_size": population_size,
        "task_id": task_id,
        "provenance": provenance,
        "extra": extra,
        "package_version": _package_version(),
        "jax_version": jax.__version__,
        "jax_threefry_partitionable": bool(jax.config.values["jax_threefry_partitionable"]),
        "sha256": hashlib.sha256(blob).hexdigest(),
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in tensors.items()},
    }
    try:
        card_bytes = (json.dumps(card, indent=1, sort_keys=True) + "\n").encode()
    except TypeError as e:
        raise PolicyFileError(f"cannot save to {path}: card_extra is not JSON-able ({e})") from e
    atomic_write_bytes(path, blob)
    card_path = Path(str(path) + ".json")
    atomic_write_bytes(card_path, card_bytes)
    return card_path


def _read_card(path: Path) -> dict[str, Any]:
    card_path = Path(str(path) + ".json")
    if not card_path.is_file():
        raise PolicyFileError(
            f"{path} has no card {card_path.name}; a policy file is only loaded with the JSON "
            "card that save_policy writes next to it"
        )
    try:
        card = json.loads(card_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PolicyFileError(f"{card_path} is not valid JSON ({e})") from e
    if not isinstance(card, dict):
        raise PolicyFileError(f"{card_path} is not a policy card (not a JSON object)")
    if card.get("format") != FORMAT or card.get("format_version") != FORMAT_VERSION:
        raise PolicyFileError(
            f"{card_path} is not an aht-bench policy card (format {card.get('format')!r}, "
            f"version {card.get('format_version')!r}; expected {FORMAT!r} v{FORMAT_VERSION})"
        )
    return card


def _build_policy(path: Path, card: dict[str, Any]) -> NetworkPolicy:
    name = card.get("architecture")
    if not isinstance(name, str) or name not in ARCHITECTURES:
        raise PolicyFileError(
            f"{path}: architecture {name!r} is not one aht-bench loads; "
            f"known architectures: {sorted(ARCHITECTURES)}"
        )
    kwargs = card.get("kwargs")
    cls = ARCHITECTURES[name]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if not isinstance(kwargs, dict) or not set(kwargs) <= set(fields):
        raise PolicyFileError(
            f"{path}: card kwargs {kwargs!r} are not constructor arguments of {name} "
            f"({sorted(fields)})"
        )

    def _size(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**20

    for k, v in kwargs.items():
        # tuple-valued fields (layer sizes) are JSON lists; every other field is one int
        is_list = isinstance(fields[k].default, tuple)
        ok = (isinstance(v, list) and all(_size(i) for i in v)) if is_list else _size(v)
        if not ok:
            want = "a list of positive integers" if is_list else "a positive integer"
            raise PolicyFileError(f"{path}: card kwarg {k}={v!r} of {name} must be {want}")
    try:
        policy = cls(**kwargs)
    except TypeError as e:
        raise PolicyFileError(f"{path}: cannot build {name}(**{kwargs}): {e}") from e
    if card.get("obs_dim") != policy.obs_dim or card.get("num_actions") != policy.num_actions:
        raise PolicyFileError(
            f"{path}: card says obs_dim={card.get('obs_dim')}, num_actions="
            f"{card.get('num_actions')} but its kwargs build {name}({kwargs})"
        )
    return policy


def load_policy(path: str | os.PathLike[str]) -> tuple[NetworkPolicy, Params]:
    """Load a policy saved by `save_policy`, verified; raises `PolicyFileError`."""
    path = Path(path)
    policy, params, size = _load(path)
    if size is not None:
        raise PolicyFileError(
            f"{path} holds a population of {size} members, not one policy; load it with "
            "load_population"
        )
    return policy, params


def load_population(path: str | os.PathLike[str]) -> Population:
    """Load a population saved by `save_population`, verified; raises `PolicyFileError`."""
    path = Path(path)
    policy, params, size = _load(path)
    if size is None:
        raise PolicyFileError(
            f"{path} holds one policy, not a population; load it with load_policy"
        )
    return Population(policy, params)


def _load(path: Path) -> tuple[NetworkPolicy, Params, int | None]:
    """(policy, params, population size or None) from a verified policy file."""
    if not path.is_file():
        raise PolicyFileError(f"{path} does not exist; save policies with save_policy(path, ...)")
    blob = path.read_bytes()
    if not _looks_like_safetensors(blob) and blob.startswith(_PICKLE_PREFIXES):
        raise PolicyFileError(
            f"{path} looks like a pickle, not a safetensors file; aht-bench never loads pickles "
            "(they can run code). Convert the weights and save them with save_policy"
        )
    if not _looks_like_safetensors(blob) and blob.startswith(_ZIP_PREFIX):
        raise PolicyFileError(
            f"{path} is a zip archive (torch.save / Stable-Baselines3?), not a safetensors file; "
            "aht-bench never loads those (they can run code). Save with save_policy"
        )
    card = _read_card(path)
    policy = _build_policy(path, card)  # a frozen dataclass of ints; no weights yet
    size = card.get("population_size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise PolicyFileError(f"{path}: card population_size={size!r} is not a positive int")
    lead = () if size is None else (size,)
    check_sha256(path, blob, card.get("sha256"), PolicyFileError)
    try:
        tensors = st_load(blob)
    except (SafetensorError, ValueError) as e:
        raise PolicyFileError(f"{path} is not a readable safetensors file ({e})") from e
    leaves, treedef = jax.tree_util.tree_flatten_with_path(_template(policy))
    names = ["/".join(_key_name(e) for e in p) for p, _ in leaves]
    extra = set(tensors) - set(names)
    if extra:
        raise PolicyFileError(
            f"{path} has tensors {type(policy).__name__} does not have: {sorted(extra)[:5]}"
        )
    for name, (_, spec) in zip(names, leaves, strict=True):
        if name not in tensors:
            raise PolicyFileError(f"{path} has no tensor {name!r} that {policy} needs")
        arr = tensors[name]
        if arr.shape != lead + tuple(spec.shape) or arr.dtype != np.dtype(spec.dtype):
            raise PolicyFileError(
                f"{path}: tensor {name!r} has shape {arr.shape} and dtype {arr.dtype}, "
                f"expected shape {lead + tuple(spec.shape)} and dtype {np.dtype(spec.dtype)} "
                f"for {policy}" + (f" x {size} members" if size is not None else "")
            )
        if not np.all(np.isfinite(arr)):
            bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
            raise PolicyFileError(
                f"{path}: tensor {name!r} has {bad} non-finite (NaN or inf) values"
            )
    params = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(tensors[n]) for n in names])
    return policy, params, size


def read_card(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON card of a saved policy (format-checked, weights not loaded)."""
    return _read_card(Path(path))
