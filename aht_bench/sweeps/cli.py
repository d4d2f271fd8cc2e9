"""The `aht-bench sweep` commands (see `aht_bench.sweeps`): `aht-bench sweep SPEC` runs a sweep
(the group's default command, `aht-bench sweep run SPEC`), `aht-bench sweep report FOLDER`
writes its table and figures.

May import click, the standard library, aht_bench.envs, aht_bench.runs, aht_bench.evaluation
and aht_bench.sweeps (Ray through `aht_bench.sweeps.ray_backend`).
"""

from __future__ import annotations

from pathlib import Path

import click

from aht_bench.evaluation.scores import DEFAULT_REPS
from aht_bench.sweeps.cost import dry_run_lines
from aht_bench.sweeps.execute import SweepError, default_workers, run_local
from aht_bench.sweeps.spec import SweepSpecError, load

REPORT_EXIT_CODES_HELP = (
    "Exit codes: 0 written; 1 no run has a record, or the records disagree (the message names "
    "the run and the fix); 2 bad options."
)
SWEEP_EXIT_CODES_HELP = (
    "Exit codes: 0 every run done; 1 a run failed (its log is named; run the same command again "
    "to resume); 2 bad spec or options; 130 interrupted (run it again to resume)."
)


class _RunByDefault(click.Group):
    """A group whose first argument, when it names no subcommand, is the SPEC of `run`: so
    `aht-bench sweep rq1 --dry-run` is `aht-bench sweep run rq1 --dry-run`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_RunByDefault)
def sweep() -> None:
    """Experiment grids: `aht-bench sweep SPEC` runs one (resumable), `aht-bench sweep report
    FOLDER` tabulates and plots what it produced.

    \b
    aht-bench sweep rq1 --dry-run                # the paper's main comparison: grid and cost
    aht-bench sweep my_sweep.toml --out sweeps/mine
    aht-bench sweep report sweeps/mine           # table and figures in sweeps/mine/report
    """


@sweep.command("run", epilog=SWEEP_EXIT_CODES_HELP)
@click.argument("spec")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Sweep folder (new, or the same sweep's to resume). [default: sweeps/NAME]",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the grid, each run's env steps and estimated time; run nothing.",
)
@click.option(
    "--preset",
    type=click.Choice(["quick", "medium", "paper"]),
    default=None,
    help="Replace the spec's preset (e.g. a paper spec at quick).",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Replace the spec's seeds by seeds 0..N-1.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Runs at once on this machine. [default: one per 4 CPU cores]",
)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: a pool of processes on this machine; ray: Ray tasks (pip install "
    "'aht-bench[ray]').",
)
@click.option(
    "--address",
    default=None,
    help="ray: the cluster to join ('auto': the one this machine is in). [default: "
    "start a Ray instance here]",
)
@click.option(
    "--cpus-per-run",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="ray: CPUs each run reserves.",
)
@click.option(
    "--gpus-per-run",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="ray: GPUs each run reserves (its JAX sees those).",
)
def run(
    spec: str,
    out: Path | None,
    dry_run: bool,
    preset: str | None,
    seeds: int | None,
    workers: int | None,
    backend: str,
    address: str | None,
    cpus_per_run: float,
    gpus_per_run: float,
) -> None:
    """Run the experiment grid of SPEC: a .toml sweep spec or one of the paper's experiments
    (rq1: the main comparison; rq4: ROTATE with and without its population buffer). Each run
    (one method, task, variant and seed) trains, is scored on the task's heldout set and leaves
    a leaderboard-ready result.json in its folder; running the command again skips what is done
    and resumes what was interrupted."""
    try:
        grid = load(spec, preset=preset, seeds=seeds)
    except SweepSpecError as e:
        raise click.BadParameter(str(e), param_hint="SPEC") from None
    if backend != "ray" and (address, cpus_per_run, gpus_per_run) != (None, 1.0, 0.0):
        raise click.UsageError("--address, --cpus-per-run and --gpus-per-run are for --backend ray")
    pool = workers or default_workers()
    if dry_run:
        for line in dry_run_lines(grid, pool):
            click.echo(line)
        return
    root = out or Path("sweeps") / grid.name
    try:
        if backend == "ray":
            from aht_bench.sweeps.ray_backend import run_ray

            run_ray(
                grid,
                root,
                address=address,
                cpus_per_run=cpus_per_run,
                gpus_per_run=gpus_per_run,
                echo=click.echo,
            )
        else:
            run_local(grid, root, pool, echo=click.echo)
    except SweepError as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(1) from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: run the same command again to resume the sweep in {root}",
                   err=True)  # fmt: skip
        raise click.exceptions.Exit(130) from None
    click.echo(f"sweep {grid.name}: all {len(grid.runs)} runs done; records: {root}/**/result.json")


@sweep.command("report", epilog=REPORT_EXIT_CODES_HELP)
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for report.md, report.json and the figures. [default: FOLDER/report]",
)
@click.option(
    "--reps",
    type=click.IntRange(min=100),
    default=DEFAULT_REPS,
    show_default=True,
    help="Bootstrap resamples of each CI.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--no-plot", is_flag=True, help="Write the tables only.")
def report(folder: Path, out: Path | None, reps: int, seed: int, no_plot: bool) -> None:
    """Tabulate and plot the sweep in FOLDER from its runs' records: per method (variant) and
    task, the mean normalised return over the heldout members with a 95% stratified bootstrap
    CI over seeds (the paper's Fig. core-result), the same for the base return, and a heatmap
    per method whose variants vary two fields (e.g. RQ3's competence weights). Runs without a
    record yet are listed; every record is checked to score its run's own ego."""
    from aht_bench.sweeps.report import build_report, estimates, report_lines, write_report

    try:
        made = build_report(folder, reps=reps, seed=seed)
        est = estimates(made)
        written = write_report(made, est, out or folder / "report", plot=not no_plot)
    except SweepError as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(1) from None
    for line in report_lines(made, est):
        click.echo(line)
    click.echo("\nwrote " + ", ".join(str(p) for p in written))


__all__ = ["sweep"]
