"""The Ray backend of `aht-bench sweep` (`run_ray`): one Ray task per run, on a Ray instance
started here or on a running cluster (`address="auto"`).

Each task is `execute` on a worker: the run's own `aht-bench` commands in a fresh process, so a
run's parameters are the same on any node as run by hand. A task declares the CPUs and GPUs a
run takes (Ray then sets `CUDA_VISIBLE_DEVICES` for it, and JAX in the run sees that GPU). A
task whose worker is lost (the process killed, the node gone) is retried up to `retries` times;
the retry finds the run started and resumes it from its last checkpoint, bit-identically, and
the lost worker's training is killed with it (`execute._ORPHAN_GUARD`). A run whose command
fails is not retried: it is reported with its log, as on the local backend. The sweep folder
must be on a file system every node sees (the same path).

Ray is an optional dependency: `pip install 'aht-bench[ray]'`. Ray moves task arguments
between its processes with its own serialisation; no file of the sweep is read that way.

May import ray, the standard library and aht_bench.sweeps.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aht_bench.sweeps.execute import SweepError, check_failures, execute, pending
from aht_bench.sweeps.spec import Sweep

INSTALL_HINT = "the ray backend needs Ray: pip install 'aht-bench[ray]' (or choose --backend local)"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SweepError(INSTALL_HINT) from None
    return ray


def _restore(handlers: dict[Any, Any]) -> None:
    """Put back this process's signal handlers: `ray.init` installs its own SIGTERM handler
    and `ray.shutdown` leaves it, which would change how the caller stops."""
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def run_ray(
    sweep: Sweep,
    root: Path,
    *,
    address: str | None = None,
    cpus_per_run: float = 1.0,
    gpus_per_run: float = 0.0,
    retries: int = 3,
    echo: Callable[[str], None] = print,
    command: Sequence[str] | None = None,
    init: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Every run of `sweep` in the folder `root` as Ray tasks. `address`: a running cluster's
    ("auto": the one this machine belongs to); None starts a Ray instance on this machine (or
    uses the one `ray.init` already started in this process). `init` adds `ray.init` keywords;
    `command`: see `execute`.
    Returns run name -> what was done; failed runs are named together once all have ended."""
    ray = _ray()
    root = root.resolve()
    done, todo = pending(sweep, root)
    started_here = not ray.is_initialized()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if started_here:
        try:
            ray.init(address=address, **(init or {}))
        except (ConnectionError, RuntimeError, ValueError) as e:
            _restore(handlers)
            where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
            raise SweepError(f"cannot start or join {where}: {e}") from None
    echo(
        f"{sweep.name}: {len(sweep.runs)} runs, {len(done)} done, {len(todo)} to go on Ray "
        f"({ray.cluster_resources().get('CPU', 0):g} CPUs, "
        f"{ray.cluster_resources().get('GPU', 0):g} GPUs)"
    )
    task = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus_per_run, max_retries=retries)(execute)
    failures: list[str] = []
    refs: dict[Any, Any] = {}
    try:
        args = (root, sweep.heldout, sweep.episodes, command)
        refs = {task.remote(r, *args): r for r in todo}
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            run = refs[ready[0]]
            try:
                done[run.name] = ray.get(ready[0])
            except ray.exceptions.RayTaskError as e:  # the run's command failed
                cause = e.cause if isinstance(e.cause, SweepError) else e
                failures.append(str(cause))
                echo(f"{run.name}: failed")
            except ray.exceptions.RayError as e:  # its worker was lost more than `retries` times
                failures.append(f"{run.name}: lost its Ray worker {retries + 1} times ({e})")
                echo(f"{run.name}: failed")
            else:
                echo(f"{run.name}: {done[run.name]}")
    except BaseException:
        for ref in refs:
            ray.cancel(ref, force=True)  # tasks not started; running ones are killed
        raise
    finally:
        if started_here:
            ray.shutdown()
            _restore(handlers)
    check_failures(failures, len(sweep.runs))
    return done
