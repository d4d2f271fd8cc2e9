"""A run folder on disk: its paths (`RunDir`), run.json (`read_spec`), metrics.jsonl
(`read_metrics`, `final_returns`) and what `train` returns (`RunOutcome`).

May import numpy, jax, the standard library, aht_bench.deterministic_gpu_ops, aht_bench.files
and aht_bench.runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import jax
import numpy as np

from aht_bench import __version__, deterministic_gpu_ops
from aht_bench.files import atomic_write_bytes
from aht_bench.runs.spec import RunSpec

RUN_FORMAT = "aht-bench-run"
RUN_FORMAT_VERSION = 1
CURVE_METRIC = "episode_return"


def repeatable(backend: str | None = None) -> bool | None:
    """Whether XLA programs on `backend` (default: this process's) give the same bits on every
    run, so that a run repeats and a resumed one equals one never stopped: CPU programs do; GPU
    programs only with deterministic ops (`aht_bench.deterministic_gpu_ops`, on by default);
    None for another backend (not measured)."""
    backend = backend or jax.default_backend()
    if backend == "gpu":
        return deterministic_gpu_ops()
    return True if backend == "cpu" else None


class RunDirError(ValueError):
    """The run folder cannot be used as asked (exists already, holds no run, different spec)."""


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
    run.root.mkdir(parents=True, exist_ok=True)
    _write_json(
        run.spec,
        {
            "format": RUN_FORMAT,
            "format_version": RUN_FORMAT_VERSION,
            "package_version": __version__,
            "jax_version": jax.__version__,
            "backend": jax.default_backend(),
            "repeatable": repeatable(),
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
        have, asked = stored.to_json(), spec.to_json()
        diffs = [
            f"{k}: run has {have.get(k)!r}, asked {asked.get(k)!r}"
            for k in dict.fromkeys([*have, *asked])
            if have.get(k) != asked.get(k)
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
