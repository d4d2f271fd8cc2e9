"""Result records: what `aht-bench evaluate` writes and `aht-bench compare` (and the
leaderboard) read.

    {
      "format": "aht-bench-result", "format_version": 1,
      "payload": {...},              # everything that defines the result
      "payload_sha256": "...",       # sha256 of the canonical JSON of the payload
      "meta": {...}                  # when, how long, the command: not hashed
    }

The payload holds the package and library versions, the task id, the agent file's name, sha256
and how it ran, the teammate set's id and manifest sha256, the protocol (episodes, seed,
seatings, bootstrap settings), every member's bounds, per-episode returns and normalised score
with its CI, and the aggregates. It holds nothing that changes between two runs of the same
evaluation (no time stamps, no paths), so evaluating an agent twice gives the same
`payload_sha256`. The canonical JSON is `json.dumps(payload, sort_keys=True,
separators=(",", ":"), allow_nan=False)` in UTF-8.

May import numpy, the standard library and aht_bench.files.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "aht-bench-result"
FORMAT_VERSION = 1
_LIBRARIES = ("jax", "jaxlib", "numpy", "rliable", "jaxmarl", "jumanji")


class ResultFileError(ValueError):
    """A result file that cannot be read, or whose payload does not match its hash."""


def canonical_json(payload: Any) -> bytes:
    """The bytes `payload_sha256` is computed over."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def payload_sha256(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries a result depends on."""
    out = {}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def member_entries(
    names: tuple[str, ...],
    lower: np.ndarray,
    upper: np.ndarray,
    returns: np.ndarray,
    normalized: np.ndarray,
    member_estimates: list[dict[str, Any]],
    seatings: tuple[tuple[int, ...], ...],
) -> list[dict[str, Any]]:
    """One entry per member: bounds, per-seating per-episode returns, means, score with CI."""
    entries = []
    for m, name in enumerate(names):
        entries.append(
            {
                "name": name,
                "lower": float(lower[m]),
                "upper": float(upper[m]),
                "mean_return": float(np.mean(returns[m])),
                "mean_return_per_seating": [float(np.mean(r)) for r in returns[m]],
                "normalized": member_estimates[m],
                "max_normalized_episode": float(np.max(normalized[m])),
                "returns": {
                    ",".join(str(s) for s in seating): [float(r) for r in returns[m, i]]
                    for i, seating in enumerate(seatings)
                },
            }
        )
    return entries


def make_record(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "payload": payload,
        "payload_sha256": payload_sha256(payload),
        "meta": meta,
    }


def write_record(path: Path, record: dict[str, Any]) -> None:
    from aht_bench.files import atomic_write_bytes

    atomic_write_bytes(path, (json.dumps(record, indent=1, allow_nan=False) + "\n").encode())


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A result record, its format and payload hash checked; raises `ResultFileError`."""
    p = Path(path)
    try:
        record = json.loads(p.read_bytes())
    except OSError as e:
        raise ResultFileError(f"cannot read result file {p}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ResultFileError(f"result file {p} is not valid JSON: {e}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ResultFileError(
            f'{p} is not an aht-bench result record (no "format": "{FORMAT}"); pass files '
            "written by `aht-bench evaluate --out`"
        )
    if record.get("format_version") != FORMAT_VERSION:
        raise ResultFileError(
            f"{p} is a result record of format version {record.get('format_version')!r}; this "
            f"aht-bench reads version {FORMAT_VERSION}"
        )
    payload = record.get("payload")
    if not isinstance(payload, dict) or payload_sha256(payload) != record.get("payload_sha256"):
        raise ResultFileError(
            f"{p}: the payload does not match payload_sha256: the result was edited or "
            "corrupted; evaluate the agent again"
        )
    return record


def score_matrix_of(record: dict[str, Any]) -> np.ndarray:
    """The (episodes, members) score matrix of a record: each episode's normalised return
    averaged over seatings (`aht_bench.evaluation.scores.score_matrix`)."""
    rows = []
    for member in record["payload"]["members"]:
        returns = np.asarray(list(member["returns"].values()), np.float64)  # (S, E)
        span = member["upper"] - member["lower"]
        rows.append(((returns - member["lower"]) / span).mean(axis=0))
    return np.asarray(rows).T
