"""Long training runs on disk: checkpoints, exact resume, metrics, curves, signals, divergence.

    spec = RunSpec("ippo", "overcooked-cramped_room-v1", preset="quick", num_seeds=3)
    outcome = train(spec, Path("runs/ippo-cr"))             # or resume=True to continue

A run lives in one folder:

    run.json                 what runs (RunSpec), the resolved config, teammates (+ sha256)
    metrics.jsonl            one JSON line per update: update, env_steps, time_s, and every
                             metric as a list over seeds (NaN written as null)
    checkpoints/latest.json  the current checkpoint (written last, atomically)
    checkpoints/update-NNNNNN.safetensors(+.json)   whole train states (the last two kept)
    curve.png                the learning curve (base return vs env steps, per seed and mean)
    policies/final/…         the trained learners as policy files (`load_policy`)
    policies/update-NNNNNN/… the learners after `config.checkpoint_updates` (FCP pools)

Checkpoints hold the whole train state (params, optimiser states, env states, carries, PRNG
keys, update counter), so a run killed at any moment (even SIGKILL) and resumed from its last
checkpoint ends bit-identical to one never stopped. SIGINT (Ctrl-C) and SIGTERM stop the run at
the next update boundary after a checkpoint (`TrainingInterrupted`; the CLI exits 130/143); a
second Ctrl-C aborts at once. Non-finite losses or parameters stop the run before anything of
that update is saved (`TrainingDiverged`, naming the update, seed and metric).

The algorithm is passed in (`aht_bench.algorithms.ALGORITHMS` lists them): this module does not
import `aht_bench.algorithms`.

May import jax, numpy, matplotlib, tqdm, aht_bench.envs, aht_bench.policies and
aht_bench.training.
"""

from __future__ import annotations

import dataclasses
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
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.files import atomic_write_bytes
from aht_bench.training import checkpoint, presets
from aht_bench.training.config import PPOConfig, RunConfig
from aht_bench.training.driver import init_seeds, iterate, updates_done
from aht_bench.training.partners import teammate_pool

RUN_FORMAT = "aht-bench-run"
RUN_FORMAT_VERSION = 1
KEEP_CHECKPOINTS = 2
PLOT_EVERY_S = 60.0  # redraw curve.png at a checkpoint at most this often (and at the end)
CURVE_METRIC = "episode_return"
# Metrics that may legitimately be NaN (no episode ended during that update's rollout).
_MAY_BE_NAN = ("episode_return",)


class RunDirError(ValueError):
    """The run folder cannot be used as asked (exists already, holds no run, different spec)."""


class TrainingInterrupted(Exception):
    """SIGINT or SIGTERM stopped the run at an update boundary, after a checkpoint."""

    def __init__(self, signum: int, update: int, out: Path):
        self.signum = signum
        self.update = update
        self.out = out
        name = signal.Signals(signum).name
        super().__init__(
            f"{name}: stopped after update {update}, checkpoint saved in {out}; continue with "
            "--resume"
        )

    @property
    def exit_code(self) -> int:
        """The shell convention: 128 + signal number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


class TrainingDiverged(RuntimeError):
    """A loss or parameter became NaN or infinite; nothing of that update was saved."""


# --------------------------------------------------------------------------- algorithms


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """How the run loop drives one algorithm module: its `init(key, config, *inputs)`,
    `update(state, config)`, `learner_params(state)` and `network(config)`. The table of them
    is `aht_bench.algorithms.ALGORITHMS`."""

    name: str
    module: ModuleType
    needs_teammates: bool  # init takes a TeammatePool (br, ego)
    per_agent: bool  # learner params have an agent axis after the seed axis (IPPO)


# --------------------------------------------------------------------------- the spec


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What a run is: algorithm, task, preset, seeds, teammates and config overrides.

    `overrides` are `(field, value)` string pairs as typed on the command line, e.g.
    `("total_timesteps", "100000")` or `("ppo.learning_rate", "3e-4")`; `teammates` are heuristic
    names of the task or paths of policy/population files (`br` and `ego` only).
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

    def config(self) -> RunConfig:
        """The preset's config with the overrides applied (validated)."""
        base = presets.get(self.algorithm, self.preset, self.task_id)
        return apply_overrides(base, self.overrides)

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


def _coerce(owner: type, name: str, value: str) -> Any:
    hints = typing.get_type_hints(owner)
    kind = hints[name]
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
        if origin is tuple:
            return tuple(int(float(v)) for v in value.split(",") if v.strip())
    except ValueError as e:
        raise ValueError(f"override {name}={value!r} is invalid: {e}") from None
    raise ValueError(f"override {name}={value!r}: fields of type {kind} cannot be overridden")


def apply_overrides(config: RunConfig, overrides: tuple[tuple[str, str], ...]) -> RunConfig:
    """`config` with `field=value` overrides ("ppo.<field>" for the PPO hyperparameters)."""
    top: dict[str, Any] = {}
    ppo: dict[str, Any] = {}
    top_fields = {f.name for f in dataclasses.fields(config)} - {"task_id", "ppo"}
    ppo_fields = {f.name for f in dataclasses.fields(PPOConfig)}
    for name, value in overrides:
        if name.startswith("ppo."):
            field = name.removeprefix("ppo.")
            if field not in ppo_fields:
                raise ValueError(
                    f"unknown override {name!r}; PPO fields: "
                    f"{', '.join('ppo.' + f for f in sorted(ppo_fields))}"
                )
            ppo[field] = _coerce(PPOConfig, field, value)
        elif name in top_fields:
            top[name] = _coerce(type(config), name, value)
        else:
            raise ValueError(
                f"unknown override {name!r}; fields: {', '.join(sorted(top_fields))} and "
                "ppo.<field>"
            )
    if ppo:
        top["ppo"] = dataclasses.replace(config.ppo, **ppo)
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

    def checkpoint_file(self, update: int) -> Path:
        return self.checkpoints / f"update-{update:06d}.safetensors"

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
    config: RunConfig
    updates: int
    env_steps: int
    final_return: list[float]  # per seed: mean base return over the last 10% of updates
    policies: list[Path]  # the final policy files
    train_seconds: float


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


def final_returns(rows: list[dict[str, Any]], num_seeds: int) -> list[float]:
    """Per seed: the mean of `CURVE_METRIC` over the last 10% of the rows (NaN if none)."""
    tail = rows[-max(1, len(rows) // 10) :]
    values = np.array(
        [[np.nan if v is None else v for v in r[CURVE_METRIC]] for r in tail if CURVE_METRIC in r],
        dtype=np.float64,
    ).reshape(-1, num_seeds)
    out = []
    for s in range(num_seeds):
        column = values[:, s][np.isfinite(values[:, s])]
        out.append(float(column.mean()) if column.size else float("nan"))
    return out


def _truncate_metrics(path: Path, update: int) -> None:
    rows = [r for r in read_metrics(path) if r.get("update", 0) <= update]
    atomic_write_bytes(path, "".join(json.dumps(r) + "\n" for r in rows).encode())


def plot_curve(run: RunDir, title: str, metric: str = CURVE_METRIC) -> Path | None:
    """Draw `metric` against env steps (each seed and their mean) into `run.curve`."""
    rows = [r for r in read_metrics(run.metrics) if metric in r]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r["env_steps"] for r in rows], dtype=np.float64)
    values = np.array(
        [[np.nan if v is None else v for v in r[metric]] for r in rows], dtype=np.float64
    )
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for s in range(values.shape[1]):
        ok = np.isfinite(values[:, s])
        ax.plot(steps[ok], values[ok, s], lw=0.8, alpha=0.45, label=f"seed {s}")
    if values.shape[1] > 1:
        with np.errstate(all="ignore"):
            mean = np.nanmean(values, axis=1)
        ok = np.isfinite(mean)
        ax.plot(steps[ok], mean[ok], lw=2.0, color="black", label="mean")
    ax.set_xlabel("environment steps (per seed)")
    ax.set_ylabel(f"{metric} (base, seat 0)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    tmp = run.curve.with_name(f".{run.curve.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, run.curve)
    return run.curve


class _Signals:
    """Turns the first SIGINT/SIGTERM into a stop request; a second SIGINT aborts at once."""

    def __init__(self) -> None:
        self.received: int | None = None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.received = signum
        print(
            f"\n{signal.Signals(signum).name}: stopping after the current update and saving a "
            "checkpoint (Ctrl-C again aborts without saving)",
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


def _check_finite(metrics: dict[str, np.ndarray], params: Any, first_update: int) -> None:
    for name, values in metrics.items():
        if name in _MAY_BE_NAN:
            continue
        bad = ~np.isfinite(values)
        if bad.any():
            seed, offset = (int(i[0]) for i in np.nonzero(bad))
            raise TrainingDiverged(
                f"{name} became {values[seed, offset]} at update {first_update + offset} "
                f"(seed index {seed}); nothing of that update was saved. Lower ppo.learning_rate "
                "or check the reward scale, then resume from the last checkpoint or start over"
            )
    if not bool(_all_finite(params)):
        raise TrainingDiverged(
            f"the learners' parameters became non-finite by update "
            f"{first_update + next(iter(metrics.values())).shape[1] - 1}; nothing of that "
            "update was saved. Lower ppo.learning_rate, then resume or start over"
        )


def _learner_policies(algo: Algorithm, config: RunConfig, params: Any) -> list[tuple[str, Any]]:
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


def _save_policies(
    folder: Path, algo: Algorithm, spec: RunSpec, config: RunConfig, state: Any, update: int
) -> list[Path]:
    from aht_bench.policies import save_policy

    network = algo.module.network(config)
    paths = []
    for stem, params in _learner_policies(algo, config, algo.module.learner_params(state)):
        path = folder / f"{stem}.safetensors"
        save_policy(
            path,
            network,
            params,
            {
                "task_id": config.canonical_task_id,
                "provenance": {
                    "algorithm": spec.algorithm,
                    "preset": spec.preset,
                    "base_seed": spec.seed,
                    "num_seeds": spec.num_seeds,
                    "learner": stem,
                    "update": update,
                    "env_steps": update * config.batch_size,
                    "teammates": list(spec.teammates),
                    "overrides": [list(kv) for kv in spec.overrides],
                },
            },
        )
        paths.append(path)
    return paths


def _start_folder(run: RunDir, spec: RunSpec, config: RunConfig, records: list[Any]) -> None:
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
            "num_updates": config.num_updates,
            "batch_size": config.batch_size,
        },
    )


def _config_json(config: RunConfig) -> dict[str, Any]:
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
        raise ValueError(f"{algo.name} trains in self-play and takes no teammates")


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

    A checkpoint is written whenever `checkpoint_every_updates` updates or
    `checkpoint_every_s` seconds have passed since the last one (whichever comes first), on
    SIGINT/SIGTERM, and at the end.
    """
    check_teammates(algo, spec)
    run = RunDir(Path(out))
    config = spec.config()
    inputs: tuple[Any, ...] = ()
    records: list[dict[str, Any]] = []
    if algo.needs_teammates:
        teammates, records = resolve_teammates(config.canonical_task_id, spec.teammates)
        inputs = (teammate_pool(teammates),)
    if resume:
        _check_resume(run, spec, records)
    else:
        _start_folder(run, spec, config, records)

    start = time.perf_counter()
    state = init_seeds(
        jax.random.split(jax.random.PRNGKey(spec.seed), spec.num_seeds),
        algo.module.init,
        config,
        *inputs,
    )
    train_s = 0.0
    latest = run.latest_checkpoint() if resume else None
    if latest is not None:
        state, meta = checkpoint.load_state(latest, state)
        train_s = float(meta["train_s"])
        log(f"resuming {run.root} from update {meta['update']} ({latest.name})")
    elif resume:
        log(f"{run.root} has no checkpoint yet: starting from update 0")
    done = updates_done(state)
    _truncate_metrics(run.metrics, done)
    log(
        f"{spec.algorithm} on {config.canonical_task_id} ({spec.preset}): {config.num_updates} "
        f"updates of {config.batch_size} env steps x {spec.num_seeds} seed(s); init "
        f"{time.perf_counter() - start:.1f}s"
    )

    title = f"{spec.algorithm} on {config.canonical_task_id} ({spec.preset})"
    last_saved = done
    last_save_time = time.perf_counter()
    last_plot_time = -math.inf

    def save(state: Any, update: int) -> None:
        nonlocal last_saved, last_save_time
        path = run.checkpoint_file(update)
        meta = {"update": update, "env_steps": update * config.batch_size, "train_s": train_s}
        checkpoint.save_state(path, state, meta)
        _write_json(run.pointer, {"file": path.name, "update": update})
        for old in sorted(run.checkpoints.glob("update-*.safetensors"))[:-KEEP_CHECKPOINTS]:
            old.unlink(missing_ok=True)
            checkpoint.card_path(old).unlink(missing_ok=True)
        nonlocal last_plot_time
        if time.perf_counter() - last_plot_time >= PLOT_EVERY_S:
            plot_curve(run, title)
            last_plot_time = time.perf_counter()
        last_saved, last_save_time = update, time.perf_counter()

    from tqdm import tqdm

    bar = tqdm(
        total=config.num_updates,
        initial=done,
        unit="upd",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.1 if sys.stderr.isatty() else 30.0,
    )
    signals = _Signals()
    with signals.installed(), bar:
        call_start = loop_start = time.perf_counter()
        for done, new_state, metrics in iterate(state, algo.module.update, config):
            state = new_state
            host = {k: np.asarray(v) for k, v in jax.device_get(metrics).items()}
            first = done - config.updates_per_call + 1
            _check_finite(host, algo.module.learner_params(state), first)
            now = time.perf_counter()
            if call_start == loop_start:
                calls = config.updates_per_call
                log(f"first call (compile + {calls} update(s)): {now - call_start:.1f}s")
            train_s += now - call_start
            call_start = now
            with run.metrics.open("a") as f:
                for j in range(config.updates_per_call):
                    row: dict[str, Any] = {
                        "update": first + j,
                        "env_steps": (first + j) * config.batch_size,
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
            if done in config.checkpoint_updates:
                _save_policies(run.policies / f"update-{done:06d}", algo, spec, config, state, done)
            returns = host.get(CURVE_METRIC)
            if returns is not None and np.isfinite(returns[:, -1]).any():
                bar.set_postfix(ret=f"{np.nanmean(returns[:, -1]):.3g}", refresh=False)
            bar.update(config.updates_per_call)
            due = (
                checkpoint_every_updates is not None
                and done - last_saved >= checkpoint_every_updates
            ) or now - last_save_time >= checkpoint_every_s
            if signals.received is not None:
                save(state, done)
                plot_curve(run, title)
                raise TrainingInterrupted(signals.received, done, run.root)
            if due and done < config.num_updates:
                save(state, done)
    if last_saved != done:
        save(state, done)
    plot_curve(run, title)
    policies = _save_policies(run.policies / "final", algo, spec, config, state, done)
    return RunOutcome(
        out=run.root,
        config=config,
        updates=done,
        env_steps=done * config.batch_size,
        final_return=final_returns(read_metrics(run.metrics), spec.num_seeds),
        policies=policies,
        train_seconds=train_s,
    )
