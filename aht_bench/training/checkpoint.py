"""Checkpoint files of a whole train state: safetensors plus a JSON card, verified before use.

    save_state(path, state, meta)           # path.safetensors + path.safetensors.json
    state, meta = load_state(path, template)

A train state is a pytree of arrays (params, optimiser states, env states, carries, PRNG keys
and the update counter, every leaf with a leading seed axis), so saving its leaves and loading
them into the tree of a freshly initialised `template` restores a run exactly. The card holds
the format, the package and JAX versions, the caller's `meta` (update number, env steps, ...),
the sha256 of the tensor file and, per leaf, its tree path, shape and dtype.

`load_state` checks, before it builds anything: that the card is ours, the sha256, and that
the leaves match the template leaf for leaf (count, path, shape, dtype). Each failure is a
`CheckpointError` naming the file and what to do. Nothing is unpickled. Both files are written
atomically (temp file, fsync, rename); the caller decides which checkpoint is current (see
`aht_bench.runs`, which writes a pointer file last).

May import jax, numpy, safetensors and aht_bench.files only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from aht_bench.files import atomic_write_bytes, check_sha256

FORMAT = "aht-bench-train-state"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupted, or does not fit the run resuming from it."""


def _leaves(state: Any) -> list[tuple[str, np.ndarray]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(state)
    out = []
    for path, leaf in flat:
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)  # typed keys: store their raw data
        out.append((jax.tree_util.keystr(path), np.asarray(jax.device_get(leaf))))
    return out


def card_path(path: Path) -> Path:
    """The JSON card next to a checkpoint's tensor file."""
    return Path(str(path) + ".json")


def save_state(path: Path, state: Any, meta: dict[str, Any]) -> None:
    """Write `state`'s leaves to `path` and its card (with `meta`) next to it, atomically each."""
    from aht_bench import __version__

    leaves = _leaves(state)
    tensors = {f"{i:06d}": np.ascontiguousarray(v) for i, (_, v) in enumerate(leaves)}
    blob = st_save(tensors)
    card = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "jax_version": jax.__version__,
        "meta": meta,
        "sha256": hashlib.sha256(blob).hexdigest(),
        "leaves": [
            {"path": name, "shape": list(v.shape), "dtype": str(v.dtype)} for name, v in leaves
        ],
    }
    atomic_write_bytes(path, blob)
    atomic_write_bytes(card_path(path), (json.dumps(card, indent=1) + "\n").encode())


def read_meta(path: Path) -> dict[str, Any]:
    """The `meta` a checkpoint was saved with (from its card; the tensors are not read)."""
    return _read_card(path)["meta"]


def _read_card(path: Path) -> dict[str, Any]:
    cpath = card_path(path)
    try:
        card = json.loads(cpath.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{cpath} is missing: the checkpoint {path} has no card") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{cpath} is not a readable JSON card ({e})") from None
    if not isinstance(card, dict) or card.get("format") != FORMAT:
        raise CheckpointError(f"{cpath} is not an aht-bench train-state card")
    if card.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{cpath} has format version {card.get('format_version')!r}; this aht-bench reads "
            f"version {FORMAT_VERSION}: resume it with the aht-bench version that wrote it "
            f"({card.get('package_version')})"
        )
    return card


def load_state(path: Path, template: Any) -> tuple[Any, dict[str, Any]]:
    """The state saved at `path`, in the tree of `template`, and its meta; verified first."""
    card = _read_card(path)
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing (its card is there)") from None
    check_sha256(path, blob, card.get("sha256"), CheckpointError)
    try:
        tensors = st_load(blob)
    except SafetensorError as e:
        raise CheckpointError(f"{path} is not a readable safetensors file ({e})") from None
    flat, treedef = jax.tree_util.tree_flatten_with_path(template)
    expected = _leaves(template)
    if len(card["leaves"]) != len(expected) or len(tensors) != len(expected):
        raise CheckpointError(
            f"{path} holds {len(tensors)} arrays but this run's state has {len(expected)}: the "
            "checkpoint was written by a different algorithm or configuration"
        )
    restored = []
    for i, ((name, want), (_, leaf)) in enumerate(zip(expected, flat, strict=True)):
        got = tensors.get(f"{i:06d}")
        if got is None or got.shape != want.shape or got.dtype != want.dtype:
            shape = "missing" if got is None else f"{got.shape} {got.dtype}"
            raise CheckpointError(
                f"{path}: leaf {i} ({name}) is {shape}, this run expects {want.shape} "
                f"{want.dtype}: the checkpoint does not fit this configuration"
            )
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key):
            restored.append(
                jax.random.wrap_key_data(jax.numpy.asarray(got), impl=jax.random.key_impl(leaf))
            )
        else:
            restored.append(jax.numpy.asarray(got))
    return jax.tree_util.tree_unflatten(treedef, restored), card["meta"]
