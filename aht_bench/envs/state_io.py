"""Saving and loading environment states: safetensors for arrays plus a JSON card, no pickle.

`save_states(path, env, states)` writes `path` (safetensors) and `path + ".json"` (task id,
package version, batch shape, every tensor's shape and dtype, and the sha256 of the
safetensors file). `load_states(path, env)` checks the hash, the task id and every tensor's
shape and dtype against a state the env builds itself, then runs `env.validate` on the result,
so a loaded state is a valid start state or an error that says what is wrong.

Writes are atomic (temp file in the same folder, fsync, rename).

May import jax, numpy, safetensors, the standard library, aht_bench.files and aht_bench.envs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from aht_bench.envs.core import Environment, EnvState
from aht_bench.files import atomic_write_bytes, check_sha256

FORMAT = "aht-bench-states"
FORMAT_VERSION = 1


class StateFileError(ValueError):
    """A state file that is missing, corrupted, or made for another task or shape."""


def _package_version() -> str:
    from aht_bench import __version__

    return __version__


def _flatten(tree: Any) -> dict[str, Any]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {jax.tree_util.keystr(path): leaf for path, leaf in leaves}


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.array(x, order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)


def _template(env: Environment, batch_shape: tuple[int, ...]) -> EnvState[Any]:
    state, _ = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct(batch_shape + s.shape, s.dtype), state)


def save_states(path: str | os.PathLike[str], env: Environment, states: EnvState[Any]) -> Path:
    """Save one state or a batch of states of `env`; returns the path of the JSON card."""
    path = Path(path)
    tensors = {k: _to_numpy(v) for k, v in _flatten(states).items()}
    batch_shape = tuple(np.shape(states.episode_return)[:-1])
    template = _flatten(_template(env, batch_shape))
    if set(template) != set(tensors) or any(
        tensors[k].shape != template[k].shape for k in template
    ):
        raise StateFileError(
            f"these states do not have the structure of {env.task_id} states "
            f"(batch shape {batch_shape}); save states produced by this env"
        )
    blob = st_save(tensors)
    atomic_write_bytes(path, blob)
    card = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "task_id": env.task_id,
        "package_version": _package_version(),
        "batch_shape": list(batch_shape),
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in tensors.items()},
        "sha256": hashlib.sha256(blob).hexdigest(),
    }
    card_path = Path(str(path) + ".json")
    atomic_write_bytes(card_path, (json.dumps(card, indent=1, sort_keys=True) + "\n").encode())
    return card_path


def load_states(path: str | os.PathLike[str], env: Environment) -> EnvState[Any]:
    """Load states saved by `save_states`, verified and validated; raises `StateFileError`."""
    path = Path(path)
    card_path = Path(str(path) + ".json")
    for p in (path, card_path):
        if not p.is_file():
            raise StateFileError(f"{p} does not exist; save states with save_states(path, env, s)")
    try:
        card = json.loads(card_path.read_text())
    except json.JSONDecodeError as e:
        raise StateFileError(f"{card_path} is not valid JSON ({e})") from e
    if card.get("format") != FORMAT or card.get("format_version") != FORMAT_VERSION:
        raise StateFileError(
            f"{card_path} is not an aht-bench state card (format {card.get('format')!r}, "
            f"version {card.get('format_version')!r}; expected {FORMAT!r} v{FORMAT_VERSION})"
        )
    if card.get("task_id") != env.task_id:
        raise StateFileError(
            f"{path} holds states of {card.get('task_id')!r}, not {env.task_id!r}; "
            f"load it with aht_bench.envs.make({card.get('task_id')!r})"
        )
    blob = path.read_bytes()
    check_sha256(path, blob, card.get("sha256"), StateFileError)
    tensors = st_load(blob)
    batch_shape = tuple(card.get("batch_shape", []))
    template = _template(env, batch_shape)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    out = []
    for key_path, spec in leaves:
        name = jax.tree_util.keystr(key_path)
        if name not in tensors:
            raise StateFileError(f"{path} has no tensor {name!r}; it was not saved by this task")
        arr = tensors[name]
        is_key = jnp.issubdtype(spec.dtype, jax.dtypes.prng_key)
        want_dtype = np.dtype("uint32") if is_key else np.dtype(spec.dtype)
        want_shape = tuple(spec.shape) if not is_key else arr.shape
        if arr.shape != want_shape or arr.dtype != want_dtype:
            raise StateFileError(
                f"{path}: tensor {name!r} has shape {arr.shape} and dtype {arr.dtype}, "
                f"expected {want_shape} and {want_dtype}"
            )
        out.append(jax.random.wrap_key_data(jnp.asarray(arr)) if is_key else jnp.asarray(arr))
    extra = set(tensors) - {jax.tree_util.keystr(p) for p, _ in leaves}
    if extra:
        raise StateFileError(f"{path} has tensors this task does not know: {sorted(extra)[:5]}")
    states = jax.tree_util.tree_unflatten(treedef, out)
    env.validate(states)
    return states
