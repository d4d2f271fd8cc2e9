"""`train`: one run of any method on disk, from start or resumed; see `aht_bench.runs`.

May import jax, numpy, tqdm, the standard library, aht_bench.training and aht_bench.runs.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.runs.folder import (
    RunDir,
    RunOutcome,
    _check_resume,
    _json_value,
    _start_folder,
    _truncate_metrics,
    _write_json,
    final_returns,
    read_metrics,
    repeatable,
)
from aht_bench.runs.loops import Algorithm, MethodLoop, Metrics
from aht_bench.runs.spec import RunSpec, resolve_teammates
from aht_bench.training import checkpoint
from aht_bench.training.driver import group_seeds
from aht_bench.training.partners import teammate_pool

KEEP_CHECKPOINTS = 2


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


def _check_finite(metrics: Metrics, params: dict[str, Any], first: int, loop: MethodLoop) -> None:
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


class _Saver:
    """Checkpoints of one run: when one is due, writing it (and the pointer to it), pruning
    old ones and redrawing the curves at most every `loop.plot_every_s`."""

    def __init__(
        self, run: RunDir, loop: MethodLoop, config: Any, title: str, done: int, every: int | None
    ) -> None:
        self.run, self.loop, self.config, self.title = run, loop, config, title
        self.every_updates = every
        self.last_saved = done
        self.last_time = time.perf_counter()
        self.last_plot = -math.inf

    def due(self, done: int, now: float, every_s: float) -> bool:
        """Whether step `done` is checkpointed (besides a signal and the end)."""
        every = self.every_updates
        return (
            self.loop.checkpoint_every_step
            or (every is not None and done - self.last_saved >= every)
            or now - self.last_time >= every_s
        )

    def save(self, state: Any, step: int, train_s: float) -> None:
        unit, run = self.loop.unit, self.run
        path = run.checkpoint_file(step, unit)
        meta = {unit: step, "env_steps": self.loop.env_steps_done(self.config, step)}
        checkpoint.save_state(path, state, meta | {"train_s": train_s})
        _write_json(run.pointer, {"file": path.name, unit: step})
        for old in sorted(run.checkpoints.glob(f"{unit}-*.safetensors"))[:-KEEP_CHECKPOINTS]:
            old.unlink(missing_ok=True)
            checkpoint.card_path(old).unlink(missing_ok=True)
        if time.perf_counter() - self.last_plot >= self.loop.plot_every_s:
            self.loop.plot(run, self.title)
            self.last_plot = time.perf_counter()
        self.last_saved, self.last_time = step, time.perf_counter()


def _prepare(
    algo: Algorithm, spec: RunSpec, run: RunDir, resume: bool
) -> tuple[Any, tuple[Any, ...]]:
    """The run's config and the inputs of its `init` (a teammate pool, for br and ego); the
    folder started, or checked against `spec` when resuming."""
    check_teammates(algo, spec)
    config = algo.config(spec)
    inputs: tuple[Any, ...] = ()
    records: list[dict[str, Any]] = []
    if algo.needs_teammates:
        teammates, records = resolve_teammates(config.task_id, spec.teammates)
        inputs = (teammate_pool(teammates),)
    if resume:
        _check_resume(run, spec, records)
    else:
        _start_folder(run, spec, config, records, algo.loop.plan(config))
    return config, inputs


def _restore(
    run: RunDir, state: Any, unit: str, resume: bool, log: Callable[[str], None]
) -> tuple[Any, float]:
    """`state` continued from the run's latest checkpoint when resuming, and the training
    seconds it had taken."""
    latest = run.latest_checkpoint() if resume else None
    if latest is not None:
        state, meta = checkpoint.load_state(latest, state)
        log(f"resuming {run.root} from {unit} {meta[unit]} ({latest.name})")
        return state, float(meta["train_s"])
    if resume:
        log(f"{run.root} has no checkpoint yet: starting from {unit} 0")
    return state, 0.0


def _append_metrics(
    run: RunDir, loop: MethodLoop, config: Any, host: Metrics, first: int, train_s: float
) -> None:
    """One metrics line per step of a call (`host`: (num_seeds, steps_per_call) arrays, the
    first step `first`), synced to disk."""
    unit = loop.unit
    with run.metrics.open("a") as f:
        for j in range(loop.steps_per_call(config)):
            row: dict[str, Any] = {
                unit: first + j,
                "env_steps": loop.env_steps_done(config, first + j),
                "time_s": round(train_s, 3),
            }
            row |= {
                k: [_json_value(v) for v in host[k][:, j]] for k in sorted(host) if k not in row
            }
            f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _progress_bar(loop: MethodLoop, total: int, done: int, progress: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=done,
        unit=loop.bar_unit,
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.1 if sys.stderr.isatty() else 30.0,
    )


def _show(bar: Any, loop: MethodLoop, host: Metrics, steps: int) -> None:
    """Advance the progress bar by `steps`, with the loop's progress metrics (seed means)."""
    latest = {
        label: host[metric][:, -1]
        for label, metric in loop.progress_metrics
        if metric in host and np.isfinite(host[metric][:, -1]).any()
    }
    if latest:
        bar.set_postfix({k: f"{np.nanmean(v):.3g}" for k, v in latest.items()}, refresh=False)
    bar.update(steps)


def _kept(done: int, every: int | None, per_call: int) -> bool:
    """Whether the call that ended at step `done` (`per_call` steps long) passed a multiple of
    `every` (`--keep-every`; a call of several updates is kept whole)."""
    return every is not None and done // every > (done - per_call) // every


NOT_REPEATABLE = (
    "warning: XLA_FLAGS turns deterministic GPU ops off (--xla_gpu_deterministic_ops=false), "
    "so this run's parameters will not repeat to the bit and a resumed run will differ from "
    "one never stopped; leave the flag out (aht_bench sets it to true) for repeatable runs"
)


def _groups(spec: RunSpec) -> str:
    return "" if spec.seed_group is None else f" in groups of {spec.seed_group}"


def train(
    algo: Algorithm,
    spec: RunSpec,
    out: Path,
    *,
    resume: bool = False,
    checkpoint_every_updates: int | None = None,
    checkpoint_every_s: float = 300.0,
    keep_every: int | None = None,
    progress: bool = True,
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
) -> RunOutcome:
    """Run (or with `resume`, continue) `spec` of `algo` in the folder `out`; see the module
    docstring.

    A checkpoint is written whenever `checkpoint_every_updates` steps or `checkpoint_every_s`
    seconds have passed since the last one (whichever comes first; after every step where the
    loop says so, as ROTATE's does), on SIGINT/SIGTERM, and at the end. With `keep_every`, the
    learners are also saved as policy files after every `keep_every`-th step (besides the
    loop's own `keeps_policies` steps), in `policies/<unit>-NNNNNN/`, e.g. to score an ego
    against a development set iteration by iteration; the parameters trained do not change.
    """
    loop, run = algo.loop, RunDir(Path(out))
    unit = loop.unit
    group_seeds(spec.seed_group)
    config, inputs = _prepare(algo, spec, run, resume)
    start = time.perf_counter()
    state, train_s = _restore(run, loop.init(algo, spec, config, inputs), unit, resume, log)
    done = loop.done(state)
    total, per_call = loop.total(config), loop.steps_per_call(config)
    _truncate_metrics(run.metrics, unit, done)
    title = f"{spec.algorithm} on {config.task_id} ({spec.preset})"
    log(
        f"{title}: {total} {unit}s, {loop.env_steps_done(config, total):,} env steps per seed "
        f"x {spec.num_seeds} seed(s){_groups(spec)}; init {time.perf_counter() - start:.1f}s"
    )
    if repeatable() is False:
        log(NOT_REPEATABLE)
    saver = _Saver(run, loop, config, title, done, checkpoint_every_updates)
    signals, bar = _Signals(unit), _progress_bar(loop, total, done, progress)
    with signals.installed(), bar:
        call_start = loop_start = time.perf_counter()
        for done, new_state, host in loop.run(algo, state, config):
            state, first = new_state, done - per_call + 1
            _check_finite(host, loop.checked_params(algo, state), first, loop)
            now = time.perf_counter()
            if call_start == loop_start:
                with bar.external_write_mode(file=sys.stderr):  # the bar is redrawn after
                    log(f"first call (compile + {per_call} {unit}(s)): {now - call_start:.1f}s")
            train_s += now - call_start
            call_start = now
            _append_metrics(run, loop, config, host, first, train_s)
            if loop.keeps_policies(config, done) or _kept(done, keep_every, per_call):
                folder = run.policies / f"{unit}-{done:06d}"
                loop.save_policies(folder, algo, spec, config, state, done, kept=True)
            _show(bar, loop, host, per_call)
            due = saver.due(done, now, checkpoint_every_s)
            if signals.received is not None:
                saver.save(state, done, train_s)
                loop.plot(run, title)
                raise TrainingInterrupted(signals.received, done, run.root, unit)
            if due and done < total:
                saver.save(state, done, train_s)
    if saver.last_saved != done:
        saver.save(state, done, train_s)
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
