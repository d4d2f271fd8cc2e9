"""`aht-bench compare`: result records side by side, aggregates with CIs and the probability of
improvement.

May import click, the standard library and (inside the command) aht_bench.evaluation.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from aht_bench.cli.group import main
from aht_bench.cli.options import json_option, reps_option


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also plot the aggregates (.png); the probability of improvement goes to "
    "<out>-poi.png. With results on several tasks or sets, one pair of plots per group "
    "(<out>-<task>.png). Without --out, only the tables.",
)
@reps_option("Bootstrap resamples of the probability-of-improvement CIs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--no-plot", is_flag=True, help="No plots even with --out (only the tables).")
@json_option("The comparison as one JSON list, a group per set.")
def compare(
    results: tuple[Path, ...], out: Path | None, reps: int, seed: int, no_plot: bool, as_json: bool
) -> None:
    """Compare result records of `aht-bench evaluate`: aggregates with CIs, and the
    probability of improvement P(X > Y) for each pair of results on the same teammate set.

    \b
    aht-bench compare results/a/lbf-v1.json results/b/lbf-v1.json
    aht-bench compare results/a/lbf-v1.json results/b/lbf-v1.json --out compare.png
    """
    from aht_bench.evaluation.compare import comparison, comparison_lines
    from aht_bench.evaluation.record import ResultFileError, read_record

    if out is not None and out.suffix.lower() != ".png":
        raise click.BadParameter(f"{out} must end in .png", param_hint="--out")
    try:
        records = [(p, read_record(p)) for p in results]
    except ResultFileError as e:
        raise click.BadParameter(str(e), param_hint="RESULTS") from None
    groups = comparison(records, None if no_plot else out, reps=reps, seed=seed)
    if as_json:
        click.echo(json.dumps(groups, indent=1))
        return
    for line in comparison_lines(groups):
        click.echo(line)
