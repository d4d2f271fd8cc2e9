"""`aht-bench devset build|show`: the development teammate sets (heuristic members, bounds from
short best-response runs).

May import click, the standard library, aht_bench.envs (for types) and (inside the commands)
aht_bench.evaluation and aht_bench.heldout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from aht_bench.cli.common import EXIT_SIGINT, failed
from aht_bench.cli.group import main
from aht_bench.cli.options import plot_option, task_option
from aht_bench.cli.teammates import verified_set

if TYPE_CHECKING:
    from aht_bench.envs import Task


@main.group()
def devset() -> None:
    """Development teammate sets (heuristic members, bounds from short BR runs)."""


@devset.command("build")
@task_option()
@click.option(
    "--br-timesteps",
    type=click.IntRange(min=1),
    default=None,
    help="Env steps of each best response (default: the task's recipe).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Set folder (default: heldout/<task_id>/dev, replaced when the build succeeds).",
)
def devset_build(task: Task, br_timesteps: int | None, out: Path | None) -> None:
    """Rebuild the development set of a task: train the best responses, evaluate every
    partner with every member, write the manifest with bounds and provenance."""
    from aht_bench.heldout import devset as ds

    try:
        ds.recipe(task)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--task") from None
    try:
        ds.build(task, out, br_timesteps=br_timesteps, log=click.echo)
    except KeyboardInterrupt:
        raise failed("interrupted; the previous set is untouched", EXIT_SIGINT) from None


@devset.command("show")
@task_option()
@click.option("--teammates", default="dev", show_default=True, help="Set version or folder.")
@plot_option("Draw the partner x member return matrix as a heatmap (.png).")
def devset_show(task: Task, teammates: str, plot: Path | None) -> None:
    """Verify a teammate set and print its members, bounds and who set them."""
    eval_set = verified_set(task, teammates, "--teammates")
    manifest = eval_set.manifest or {}
    click.echo(f"{eval_set.set_id} (manifest sha256 {eval_set.manifest_sha256}): verified")
    if manifest.get("status"):
        click.echo(manifest["status"])
    click.echo(f"seatings (the agent's seats): {[list(s) for s in eval_set.seatings]}")
    for member in manifest.get("members", []):
        b = member["bounds"]
        click.echo(
            f"  {member['name']:28s} lower {b['lower']:g}  upper {b['upper']:.4g} "
            f"(set by {b.get('upper_set_by', '?')}; best response "
            f"{b.get('best_response_return', float('nan')):.4g})"
        )
    if plot is not None:
        from aht_bench.evaluation.plots import plot_heatmap

        xp = manifest.get("partner_returns")
        if not xp:
            raise click.BadParameter(
                "this set's manifest has no partner_returns", param_hint="--plot"
            )
        plot_heatmap(
            xp["mean_return"], xp["rows"], xp["cols"],
            f"{eval_set.set_id}: mean base return of partner (row) with member (column)", plot,
        )  # fmt: skip
        click.echo(f"wrote {plot}")
