"""Sweeps: an experiment grid (methods x tasks x variants x seeds) as one resumable command.

    aht-bench sweep rq1 --dry-run                  # the grid, its env steps and estimated time
    aht-bench sweep my_sweep.toml --out sweeps/mine --workers 2

A spec (`spec`: TOML, or one of the paper's experiments packaged in
`aht_bench/experiments/specs/`) expands into runs, one seed each; every run trains (`aht-bench
train`), is scored on the task's heldout set (`aht-bench evaluate`) and leaves a
leaderboard-ready record in its own folder (`execute`). A sweep run again skips what is done and
resumes what was interrupted. `cost` gives the dry run's estimates from measured throughput.

Backends: `local` (a pool of processes on this machine, `execute.run_local`) and `ray` (one Ray
task per run on a local instance or a running cluster, retried on worker loss:
`ray_backend.run_ray`; the optional extra `aht-bench[ray]`).

May import the standard library, aht_bench.envs and aht_bench.runs.
"""

from aht_bench.sweeps.cost import dry_run_lines, estimate, rate_of
from aht_bench.sweeps.execute import (
    RECORD,
    STATES,
    SweepError,
    default_workers,
    execute,
    run_local,
    start_folder,
    state_of,
)
from aht_bench.sweeps.spec import Sweep, SweepRun, SweepSpecError, builtin_specs, load, parse

__all__ = [
    "RECORD",
    "STATES",
    "Sweep",
    "SweepError",
    "SweepRun",
    "SweepSpecError",
    "builtin_specs",
    "default_workers",
    "dry_run_lines",
    "estimate",
    "execute",
    "load",
    "parse",
    "rate_of",
    "run_local",
    "start_folder",
    "state_of",
]
