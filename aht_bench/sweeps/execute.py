"""Running a sweep's runs: one run (`execute`), every run on a local pool (`run_local`), and what
a sweep folder holds (`state_of`, `start_folder`).

A sweep folder:

    sweep.json                           the spec's source and its runs (a resumed sweep must
                                         expand to the same runs)
    METHOD/TASK/VARIANT/seedS/           one run folder each (`aht-bench train --out`)
    METHOD/TASK/VARIANT/seedS/result.json
                                         its record: `aht-bench evaluate` of the run's ego on
                                         the heldout set, leaderboard-ready
    logs/METHOD-TASK-VARIANT-seedS.log   what its train and evaluate commands printed

Each run is two commands in a fresh process (`aht-bench train ... --seeds 1 --seed S`, then
`aht-bench evaluate`), so a run's parameters are the same whichever backend, worker or machine
runs it, and the same as running that command alone. `execute` is idempotent: a run with a
record is skipped, a trained run is only evaluated, a started one resumes from its last
checkpoint (`--resume`), so an interrupted sweep run again finishes only what is missing.

May import the standard library, aht_bench.files and aht_bench.sweeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from aht_bench.files import atomic_write_bytes
from aht_bench.sweeps.spec import Sweep, SweepRun

SWEEP_FORMAT = "aht-bench-sweep"
RECORD = "result.json"
STATES = ("new", "started", "trained", "done")
"""A run's state in a sweep folder: nothing yet, training started (resumes), trained (needs
its evaluation), done (has its record)."""


class SweepError(RuntimeError):
    """A sweep that cannot go on: the message names the run, its log and the fix."""


def cli_command() -> list[str]:
    """The `aht-bench` command of this Python (the runs use the same installation)."""
    return [sys.executable, "-m", "aht_bench.cli"]


def run_folder(root: Path, run: SweepRun) -> Path:
    return root / run.name


def log_file(root: Path, run: SweepRun) -> Path:
    return root / "logs" / f"{run.name.replace('/', '-')}.log"


EGO_FILE = "policies/final/seed0-ego.safetensors"
"""A run folder's trained ego (written when its last iteration is done); seed k of a run of
several vmapped seeds: `ego_files`."""


def ego_files(root: Path, run: SweepRun) -> list[Path]:
    """The run's trained egos, one per vmapped seed (written when its last iteration is done)."""
    final = run_folder(root, run) / Path(EGO_FILE).parent
    return [final / f"seed{k}-ego.safetensors" for k in range(run.num_seeds)]


def ego_file(root: Path, run: SweepRun) -> Path:
    """The run's (first) trained ego (written when its last iteration is done)."""
    return ego_files(root, run)[0]


def state_of(root: Path, run: SweepRun) -> str:
    """The run's state in the sweep folder `root` (one of `STATES`)."""
    folder = run_folder(root, run)
    if (folder / RECORD).is_file():
        return "done"
    if all(p.is_file() for p in ego_files(root, run)):
        return "trained"
    if (folder / "run.json").is_file():
        return "started"
    return "new"


def _sweep_json(sweep: Sweep) -> dict:
    return {
        "format": SWEEP_FORMAT,
        "name": sweep.name,
        "source": sweep.source,
        "heldout": sweep.heldout,
        "episodes": sweep.episodes,
        "runs": [
            {
                "name": r.name,
                "method": r.method,
                "task_id": r.task_id,
                "seed": r.seed,
                "preset": r.preset,
                "variant": r.variant,
                "overrides": [list(kv) for kv in r.overrides],
                "env_steps": r.env_steps,
            }
            | ({} if r.num_seeds == 1 else {"num_seeds": r.num_seeds})
            | ({} if r.keep_every is None else {"keep_every": r.keep_every})
            for r in sweep.runs
        ],
    }


def start_folder(root: Path, sweep: Sweep) -> None:
    """Create the sweep folder `root`, or check that the sweep it holds is `sweep` (the same
    runs, heldout set and episodes), so that resuming never mixes two sweeps. A spec that only
    adds runs (every run the folder holds is still in it, unchanged) grows the sweep: the
    folder's sweep.json then lists the new runs too (e.g. a part added once the first ones are
    done)."""
    record = _sweep_json(sweep)
    path = root / "sweep.json"
    if path.is_file():
        try:
            held = json.loads(path.read_text())
        except ValueError:
            raise SweepError(f"{path} is not readable JSON; choose a new --out") from None
        keys = ("heldout", "episodes")
        same = held.get("format") == SWEEP_FORMAT and all(held.get(k) == record[k] for k in keys)
        held_runs = held.get("runs", [])
        if not same or any(r not in record["runs"] for r in held_runs):
            raise SweepError(
                f"{root} holds another sweep ({held.get('source', '?')}, "
                f"{len(held_runs)} runs); a spec that changed is a new sweep: choose "
                "a new --out (a spec that only adds runs grows the sweep it started)"
            )
        if held_runs != record["runs"]:
            atomic_write_bytes(path, (json.dumps(record, indent=1) + "\n").encode())
        return
    if root.exists() and any(root.iterdir()):
        raise SweepError(f"{root} is not empty and holds no sweep; choose a new or empty --out")
    atomic_write_bytes(path, (json.dumps(record, indent=1) + "\n").encode())


_ORPHAN_GUARD = """
import ctypes, ctypes.util, os, signal, sys
try:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG, kept across exec
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit("the sweep that started this command is gone")
os.execvp(sys.argv[2], sys.argv[2:])
"""
"""Started in front of every command of a run (Linux): the command is SIGKILLed if the process
that started it dies, so that a lost worker (a killed Ray worker, a crashed sweep) leaves no
training behind that would race the retry of the same run. Elsewhere it only starts it."""


def _call(args: Sequence[str], log: Path) -> int:
    """Run `args` (tied to this process's life, `_ORPHAN_GUARD`) with its output appended to
    `log`; its exit code."""
    log.parent.mkdir(parents=True, exist_ok=True)
    guarded = [sys.executable, "-c", _ORPHAN_GUARD, str(os.getpid()), *args]
    with log.open("a") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        return subprocess.call(guarded, stdout=out, stderr=subprocess.STDOUT)


def execute(
    run: SweepRun,
    root: Path,
    heldout: str,
    episodes: int,
    command: Sequence[str] | None = None,
) -> str:
    """Bring `run` to "done" in the sweep folder `root`: train it (or resume it), then score
    its ego on the task's heldout set `heldout` ("newest" or a version) with `episodes`
    episodes per teammate and seat. Returns what it did: "skipped", "evaluated", "trained",
    "resumed". Raises `SweepError` naming the run and its log if a command fails. `command`
    is the `aht-bench` to run (default `cli_command()`; the tests give a stand-in)."""
    cli = list(command or cli_command())
    state = state_of(root, run)
    if state == "done":
        return "skipped"
    folder, log = run_folder(root, run), log_file(root, run)
    did = "evaluated"
    if state in ("new", "started"):
        resume = ["--resume"] if state == "started" else []
        args = [*cli, "train", *run.train_args(), "--out", str(folder), *resume, "--no-progress"]
        code = _call(args, log)
        if code:
            raise SweepError(
                f"{run.name}: training exited with {code}; see {log} (run the sweep again to "
                "resume it from its last checkpoint)"
            )
        did = "resumed" if resume else "trained"
    sets = [] if heldout == "newest" else ["--teammates", heldout]
    egos = [str(p) for p in ego_files(root, run)]
    args = [*cli, "evaluate", *egos, "--task", run.task_id, *sets]
    args += ["--episodes", str(episodes), "--out", str(folder / RECORD)]
    # --force: the run's folder is the sweep's own, and a run without its record is evaluated
    code = _call([*args, "--force", "--no-plot", "--no-progress"], log)
    if code:
        raise SweepError(f"{run.name}: evaluation exited with {code}; see {log}")
    return did


def pending(sweep: Sweep, root: Path) -> tuple[dict[str, str], list[SweepRun]]:
    """The sweep folder `root` started (or checked to hold `sweep`), the runs already done
    (name -> "skipped") and those still to do, in order."""
    start_folder(root, sweep)
    done = {r.name: "skipped" for r in sweep.runs if state_of(root, r) == "done"}
    return done, [r for r in sweep.runs if r.name not in done]


def default_workers() -> int:
    """Runs at once on this machine: one per four CPU cores (a run's XLA uses several)."""
    return max(1, (os.cpu_count() or 1) // 4)


def run_local(
    sweep: Sweep,
    root: Path,
    workers: int | None = None,
    echo: Callable[[str], None] = print,
    command: Sequence[str] | None = None,
) -> dict[str, str]:
    """Every run of `sweep` in the folder `root` on a pool of `workers` local processes (each
    run its own `aht-bench` commands; `command`: see `execute`). Returns run name -> what was
    done. A run that fails does not stop the others; once all have ended, a `SweepError` names
    every failed run. Ctrl-C stops the pool: runs not started are dropped, the running ones
    checkpoint and stop."""
    done, todo = pending(sweep, root)
    echo(f"{sweep.name}: {len(sweep.runs)} runs, {len(done)} done, {len(todo)} to go")
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
        futures = {
            pool.submit(execute, r, root, sweep.heldout, sweep.episodes, command): r for r in todo
        }
        try:
            for future in as_completed(futures):
                run = futures[future]
                try:
                    done[run.name] = future.result()
                except SweepError as e:
                    failures.append(str(e))
                    echo(f"{run.name}: failed")
                else:
                    echo(f"{run.name}: {done[run.name]}")
        except BaseException:
            for future in futures:
                future.cancel()  # runs not started yet; the running ones end their command
            raise
    check_failures(failures, len(sweep.runs))
    return done


def check_failures(failures: list[str], runs: int) -> None:
    """Raise one `SweepError` naming every failed run (`failures`: their errors), if any."""
    if failures:
        raise SweepError(
            f"{len(failures)} of {runs} runs failed (the others are done; run the sweep again "
            "to retry them):\n" + "\n".join(failures)
        )


__all__ = [
    "EGO_FILE",
    "RECORD",
    "STATES",
    "SweepError",
    "check_failures",
    "cli_command",
    "default_workers",
    "ego_file",
    "ego_files",
    "execute",
    "log_file",
    "pending",
    "run_folder",
    "run_local",
    "start_folder",
    "state_of",
]
