"""`aht-bench experiment ...`: the paper's experiments as commands (thin: parse, check, call
one library function, print).

    from aht_bench.experiments.cli import experiment
    main.add_command(experiment)          # in aht_bench/cli.py

Exit codes: 0 ok, 1 internal error, 2 usage error (bad option or --set; nothing is run or
written), 130 Ctrl-C (files already written are whole; the rest are not written).

May import click, the standard library and (inside the commands) aht_bench.experiments.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

if TYPE_CHECKING:
    from aht_bench.experiments.sabotage import SabotageRun

EXIT_SIGINT = 130
DEFAULT_WEIGHTS = "0,1,2,3,4,5"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def experiment() -> None:
    """Run one of the paper's experiments and write its tables and figures."""


def _weights(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(w) for w in text.split(",") if w.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a comma-separated list of numbers, e.g. {DEFAULT_WEIGHTS}",
            param_hint="--weights",
        ) from None


@experiment.command(
    epilog="\b\nExit codes:\n  0  ok\n  1  internal error (a bug in aht-bench)\n"
    "  2  usage error (bad option or --set; nothing run or written)\n"
    "130  Ctrl-C (files already written are whole)"
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results/sabotage"),
    show_default=True,
    help="Folder for the CSVs, the summary JSON and the figures (created; files replaced).",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Trials per method or grid cell (vmapped: one training call each); the table gives "
    "each cell a 95% CI over them.",
)
@click.option(
    "--sweep",
    is_flag=True,
    help="Also sweep the competence weights: lambda_1 x lambda_2 for ROTATE, lambda for "
    "per-trajectory regret (paper App. sabotage_game_extended; 36 + 6 training calls).",
)
@click.option(
    "--weights",
    default=DEFAULT_WEIGHTS,
    show_default=True,
    metavar="W,W,...",
    help="The competence weights of --sweep.",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Override a field of the `sabotage` ROTATE preset for every run, e.g. --set "
    "iterations=2 --set teammate_ppo.learning_rate=3e-4 (repeatable; not the variant, the "
    "teammate objective or the competence weights).",
)
@click.pass_context
def sabotage(
    ctx: click.Context,
    out: Path,
    seeds: int,
    sweep: bool,
    weights: str,
    no_progress: bool,
    overrides: tuple[str, ...],
) -> None:
    """The sabotage game (paper Sec. 6 RQ2): how often the last generated teammate sabotages.

    \b
    aht-bench experiment sabotage --out results/sabotage
    aht-bench experiment sabotage --sweep --weights 0,1,2,3,4,5 --out results/sabotage

    Trains the teammate generator on sabotage-v1 with ROTATE (per-state regret, the
    `sabotage` preset's lambda_1 = 3, lambda_2 = 0) under each of its three teammate
    objectives (eq7, transition_mean, public_code) and with plain per-trajectory regret
    (lambda = 0), --seeds trials each, and measures the last teammate's P(S) at the 341
    non-terminal states. Writes sabotage.csv (one row per method x seed x state),
    sabotage_summary.json, sabotage_hist.png and sabotage_table.md; with --sweep (ROTATE
    with eq7) also sabotage_sweep.csv and sabotage_sweep.png (mean P(S) heatmaps). 2.5-4
    minutes per training call on two CPU cores. See docs/rotate.md.
    """
    from aht_bench.experiments import sabotage as experiment_module

    if not sweep and ctx.get_parameter_source("weights") is not ParameterSource.DEFAULT:
        raise click.BadParameter("--weights needs --sweep", param_hint="--weights")
    try:
        config_overrides = experiment_module.parse_overrides(overrides)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--set") from None
    try:
        plan = experiment_module.plan(out, seeds, sweep, _weights(weights), **config_overrides)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    start = time.perf_counter()
    try:
        result = experiment_module.execute(plan, progress=not no_progress)
    except KeyboardInterrupt:
        click.echo(
            f"interrupted: the files already in {out} are whole; the others were not written",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_SIGINT) from None
    wall = time.perf_counter() - start
    click.echo(per_seed_table(result.summary))
    if sweep:
        click.echo(sweep_table(result))
    names = ", ".join(p.name for p in result.files)
    click.echo(f"wrote {out}/ ({names}) in {wall:.0f}s ({len(plan.cells)} training calls)")


def per_seed_table(summary: dict[str, Any]) -> str:
    """The per-seed table of `sabotage_summary.json`'s contents, as text."""
    rows = []
    for method in summary["methods"].values():
        if method["lambda"] is None:
            weights = f"lambda_1={method['lambda_1']:g}, lambda_2={method['lambda_2']:g}"
        else:
            weights = f"lambda={method['lambda']:g}"
        for row in method["seeds"]:
            rows.append((f"{method['label']}, {weights}", row))
    width = max(len("method"), *(len(name) for name, _ in rows))
    head = (
        f"{'method':<{width}}  {'seed':>4}  {'P(S)<0.05':>9}  {'P(S)>0.9':>8}  {'mean P(S)':>9}"
        f"  {'visited':>7}  {'P(S)>0.9 visited':>16}  {'P(plays S) XP':>13}"
        f"  {'own reach':>9}  {'P(S)>0.9 own reach':>18}"
    )
    lines = [head, "-" * len(head)]
    for name, row in rows:
        lines.append(
            f"{name:<{width}}  {row['seed']:>4}  {row['frac_low']:>9.3f}  "
            f"{row['frac_high']:>8.3f}  {row['mean']:>9.3f}  {row['trained_states']:>7}  "
            f"{row['trained_frac_high']:>16.3f}  {row['p_sabotage_xp']:>13.3f}  "
            f"{row['reached_states']:>9}  {row['reached_frac_high']:>18.3f}"
        )
    return "\n".join(lines)


def sweep_table(result: SabotageRun) -> str:
    """Mean P(S) over states and seeds for each cell of the sweep, as text."""
    plan = result.plan
    labels = [f"{w:g}" for w in plan.weights]
    n = len(labels)
    means = [float(result.results[c].p_sabotage.mean()) for c in plan.sweep]
    lines = ["mean P(S), ROTATE (rows lambda_1, columns lambda_2):"]
    lines.append(" " * 8 + "".join(f"{w:>7}" for w in labels))
    for i, w1 in enumerate(labels):
        lines.append(f"{w1:>8}" + "".join(f"{v:>7.2f}" for v in means[i * n : (i + 1) * n]))
    lines.append("mean P(S), per-trajectory regret (lambda):")
    lines.append(" " * 8 + "".join(f"{w:>7}" for w in labels))
    lines.append(" " * 8 + "".join(f"{v:>7.2f}" for v in means[n * n :]))
    return "\n".join(lines)


@experiment.command("sabotage-table")
@click.argument("summary", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--docs",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Write the table into this markdown file (e.g. docs/rotate.md), between its "
    "sabotage-table markers, instead of printing it.",
)
def sabotage_table(summary: Path, docs: Path | None) -> None:
    """Render the main runs of a sabotage_summary.json as a markdown table.

    \b
    aht-bench experiment sabotage-table results/sabotage/sabotage_summary.json
    aht-bench experiment sabotage-table \\
        benchmarks/results/sabotage_objectives/sabotage_summary.json --docs docs/rotate.md

    The docs' table is only ever written this way, from a committed summary, so it shows
    what was measured (tests/algorithms/test_sabotage_experiment.py checks it).
    """
    import json

    from aht_bench.experiments import sabotage as experiment_module

    if docs is None:
        table = experiment_module.markdown_table(json.loads(summary.read_text()), str(summary))
        click.echo(table, nl=False)
        return
    try:
        experiment_module.write_docs_table(summary, docs)
    except (ValueError, KeyError) as e:
        raise click.UsageError(f"{summary} -> {docs}: {e}") from None
    click.echo(f"wrote the table of {summary} into {docs}")


@experiment.command(
    epilog="\b\nExit codes:\n  0  written\n  1  internal error (a bug in aht-bench)\n"
    "  2  usage error (not a run folder of ROTATE or a baseline, a bad record or set)\n"
    "130  Ctrl-C (the iterations already scored keep their dev.json)"
)
@click.argument("run", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--record",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A result record of the run's egos (aht-bench evaluate ... --out R, or a sweep run's "
    "result.json) for the return per seat with each member.",
)
@click.option(
    "--dev",
    default=None,
    metavar="SET",
    help="Score every kept iteration's egos (train --keep-every) against this teammate set of "
    "the task first, e.g. dev (a development set; never the heldout set). Default: use the "
    "dev.json records already there.",
)
@click.option(
    "--episodes",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="With --dev: episodes per member and seating.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for diagnostics.png and diagnostics.json. [default: RUN]",
)
def diagnose(
    run: Path, record: Path | None, dev: str | None, episodes: int, out: Path | None
) -> None:
    """Diagnostics of a run of ROTATE or a baseline: the ego's learning curve (training return;
    with kept iterations, its score against a development set), what the method generated per
    iteration (the teammates' self-play return, ...) and the return per seat.

    \b
    aht-bench experiment diagnose runs/rotate-cr --dev dev --record runs/rotate-cr/result.json

    Says whether the ego's curve was still rising at the end (the rule is in
    diagnostics.json). See docs/training.md.
    """
    from aht_bench.experiments import diagnostics

    if not (run / "run.json").is_file():
        raise click.BadParameter(f"{run} holds no run (no run.json)", param_hint="RUN")
    try:
        if dev is not None:
            diagnostics.score_kept(run, dev, episodes, log=lambda m: click.echo(m, err=True))
        found = diagnostics.diagnose(run, record=record)
    except ValueError as e:  # incl. a teammate set or record that fails its checks
        raise click.UsageError(str(e)) from None
    except KeyboardInterrupt:
        click.echo("interrupted: the iterations already scored keep their dev.json", err=True)
        raise click.exceptions.Exit(EXIT_SIGINT) from None
    files = diagnostics.write(found, out or run)
    rise = {True: "still rising", False: "not rising", None: "too short to tell"}
    click.echo(
        f"{found.method} ({found.preset}) on {found.task_id}: {len(found.iterations)} "
        f"iterations, {len(found.dev)} scored on a development set; the ego's curve is "
        f"{rise[found.still_rising]} at the end ({found.rising_from})"
    )
    click.echo("wrote " + ", ".join(str(f) for f in files))
