"""`aht-bench train`: a method trained on a task into a run folder, resumable, its seeds split
over devices on request.

May import click, the standard library, aht_bench.catalog, aht_bench.envs (for types) and
(inside the command) aht_bench.runs and aht_bench.training.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aht_bench import catalog
from aht_bench.cli.common import (
    EXIT_SIGINT,
    EXIT_TRAINING_DIVERGED,
    EXIT_USAGE,
    failed,
    internal_error,
)
from aht_bench.cli.group import main
from aht_bench.cli.options import debug_option, no_progress_option, task_option

if TYPE_CHECKING:
    from aht_bench.envs import Task
    from aht_bench.runs import RunSpec

TRAIN_EXIT_CODES_HELP = """\b
Exit codes:
    0  ok (the run finished)
    1  internal error (a bug in aht-bench)
    2  usage error (bad option or override, --out in use, nothing to resume, bad checkpoint)
    6  a loss or parameter became NaN/inf (the update or iteration is named; nothing of it
       was saved)
  130  Ctrl-C: stopped at an update (rotate: iteration) boundary after a checkpoint (continue
       with --resume)
  143  SIGTERM: stopped at an update (rotate: iteration) boundary after a checkpoint
       (continue with --resume)"""

TRAINABLE = catalog.names()
"""The methods of the catalogue (`aht_bench.catalog.METHODS`, the keys of
`aht_bench.runs.ALGORITHMS`), read without importing a method so that `--help` imports none."""


@main.command(epilog=TRAIN_EXIT_CODES_HELP)
@click.argument("algorithm", type=click.Choice(TRAINABLE))
@task_option(required=False)
@click.option(
    "--preset",
    type=click.Choice(catalog.preset_names()),
    default=None,
    help="quick: minutes on two CPU cores; medium (ROTATE and the baselines): a tenth of the "
    "paper's env steps at quick's per-step settings, about an hour for three seeds on two CPU "
    "cores; paper: the paper's hyperparameter table (cluster scale); sabotage: rotate on the "
    "sabotage game (--task sabotage) only. [default: quick]",
)
@click.option(
    "--seeds",
    "num_seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Seeds trained at once (vmapped). [default: 1]",
)
@click.option("--seed", type=int, default=None, help="Base seed. [default: 0]")
@click.option(
    "--teammates",
    default=None,
    help="br/ego only: comma-separated heuristic names of the task (e.g. "
    "independent_agent_0,onion_agent_0.1 or lexi,col) or policy/population .safetensors files.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Override a config field, e.g. --set total_timesteps=1e6 --set ppo.learning_rate=3e-4 "
    "(rotate: --set iterations=10 --set teammate_ppo.learning_rate=3e-4; repeatable).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Run folder (new or empty; with --resume, the run to continue).",
)
@click.option("--resume", is_flag=True, help="Continue the run in --out from its last checkpoint.")
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=None,
    help="Checkpoint every this many updates (default: every --checkpoint-seconds; rotate "
    "checkpoints after every iteration).",
)
@click.option(
    "--checkpoint-seconds",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="Checkpoint at least this often (wall seconds).",
)
@click.option(
    "--devices",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Split the seeds over this many of this machine's devices (GPUs; --seeds a multiple "
    "of it); see docs/training.md for when results are bit-identical to one device.",
)
@click.option(
    "--seed-group",
    type=click.IntRange(min=1),
    default=None,
    help="Run the seeds in groups of this size, one group after another on each device "
    "(default: all of a device's seeds at once). Runs with the same group size train the same "
    "parameters to the bit on one device or several: 4 seeds on --devices 2 equal 4 seeds "
    "on one device with --seed-group 2.",
)
@click.option(
    "--keep-every",
    type=click.IntRange(min=1),
    default=None,
    help="Also save the egos as policy files every this many iterations (ippo/br/ego: the "
    "learners every this many updates) into policies/iteration-NNNNNN/ (update-NNNNNN/), e.g. "
    "to score the ego against a development set as it trains (benchmarks/budget_study.py). "
    "The parameters trained do not change.",
)
@no_progress_option
@debug_option
def train(
    algorithm: str,
    task: Task | None,
    preset: str | None,
    num_seeds: int | None,
    seed: int | None,
    teammates: str | None,
    overrides: tuple[str, ...],
    out: Path,
    resume: bool,
    checkpoint_every: int | None,
    checkpoint_seconds: float,
    devices: int,
    seed_group: int | None,
    keep_every: int | None,
    no_progress: bool,
    debug: bool,
) -> None:
    """Train ALGORITHM (see the choices above) on a task, with checkpoints, metrics and curves.

    \b
    aht-bench train ippo --task cramped_room --preset quick --seeds 3 --out runs/ippo-cr
    aht-bench train br --task cramped_room --teammates independent_agent_0 --out runs/br
    aht-bench train rotate --task sabotage --preset sabotage --seeds 3 --out runs/rot-sab
    aht-bench train ippo --out runs/ippo-cr --resume

    The folder gets run.json, metrics.jsonl (one line per update; rotate: per iteration),
    checkpoints/, curve.png (rotate: SP/XP returns, regret and the ego's return per iteration)
    and policies/final/*.safetensors (load them with aht_bench.policies.load_policy; rotate:
    per seed the ego and the generated population, load_population). See docs/training.md.
    """
    from aht_bench import runs

    given = _given(task, preset, num_seeds, seed, teammates, overrides, seed_group)
    algo, spec = _method_and_spec(algorithm, given, out, resume, devices)
    if devices > 1:
        _shard_seeds(devices, spec.num_seeds, spec.seed_group)
    with _training_errors(debug):
        outcome = runs.train(
            algo,
            spec,
            out,
            resume=resume,
            checkpoint_every_updates=checkpoint_every,
            checkpoint_every_s=checkpoint_seconds,
            keep_every=keep_every,
            progress=not no_progress,
        )
    click.echo(_trained(outcome, algo.loop.curve_label))


def _given(
    task: Task | None,
    preset: str | None,
    num_seeds: int | None,
    seed: int | None,
    teammates: str | None,
    overrides: tuple[str, ...],
    seed_group: int | None,
) -> dict[str, Any]:
    """The options as RunSpec fields (JSON), None where an option was left out."""
    pairs = _override_pairs(overrides)
    return {
        "task_id": None if task is None else task.id,
        "preset": preset,
        "num_seeds": num_seeds,
        "seed": seed,
        "teammates": None if teammates is None else [t for t in teammates.split(",") if t],
        "overrides": pairs or None,
        "seed_group": seed_group,
    }


def _method_and_spec(
    algorithm: str, given: dict[str, Any], out: Path, resume: bool, devices: int
) -> tuple[Any, RunSpec]:
    """The registered method `algorithm` and the RunSpec of the run, checked against each
    other (its presets, teammates and config) before anything trains."""
    from aht_bench import runs

    algo = runs.get(algorithm)
    preset = given["preset"]
    if preset is not None and preset not in algo.presets:
        raise click.BadParameter(
            f"{algorithm} has no {preset!r} preset (it has {', '.join(algo.presets)})",
            param_hint="--preset",
        )
    spec = _train_spec(algorithm, out, resume, given, devices)
    try:
        runs.check_teammates(algo, spec)
        algo.config(spec)
    except (ValueError, KeyError) as e:
        raise click.UsageError(str(e).strip('"')) from None
    return algo, spec


def _train_spec(
    algorithm: str, out: Path, resume: bool, given: dict[str, Any], devices: int
) -> RunSpec:
    """The RunSpec from the options; with --resume, options left out come from the run."""
    from aht_bench.runs import RunDirError, read_spec
    from aht_bench.runs.spec import spec_from_options

    stored = None
    if resume:
        try:
            stored = read_spec(out)
        except RunDirError as e:
            raise click.BadParameter(str(e), param_hint="--out") from None
        if stored.algorithm != algorithm:
            raise click.BadParameter(
                f"{out} holds a {stored.algorithm} run, not {algorithm}; resume it with "
                f"`aht-bench train {stored.algorithm} --out {out} --resume`",
                param_hint="ALGORITHM",
            )
    elif given["task_id"] is None:
        raise click.BadParameter("--task is required (unless --resume)", param_hint="--task")
    try:
        return spec_from_options(algorithm, given, stored, devices)
    except (ValueError, KeyError) as e:
        raise click.UsageError(str(e).strip('"')) from None


def _override_pairs(overrides: tuple[str, ...]) -> list[tuple[str, str]]:
    """`--set FIELD=VALUE` options as (field, value) pairs."""
    pairs = []
    for item in overrides:
        field, sep, value = item.partition("=")
        if not sep or not field.strip():
            raise click.BadParameter(f"{item!r} is not FIELD=VALUE", param_hint="--set")
        pairs.append((field.strip(), value.strip()))
    return pairs


def _shard_seeds(devices: int, num_seeds: int, group: int | None) -> None:
    """Split the run's seeds over the first `devices` devices (`--devices`), each device's
    share a multiple of the seed `group` size (`--seed-group`)."""
    from aht_bench.training.driver import SeedSplitError, split_seeds

    try:
        split_seeds(devices, num_seeds, group)
    except SeedSplitError as e:
        raise click.BadParameter(str(e), param_hint="--" + e.field.replace("_", "-")) from None


@contextlib.contextmanager
def _training_errors(debug: bool) -> Iterator[None]:
    """What can stop a run, as `train`'s messages and exit codes (TRAIN_EXIT_CODES_HELP)."""
    from aht_bench import runs
    from aht_bench.training.checkpoint import CheckpointError

    try:
        yield
    except runs.TrainingInterrupted as e:
        raise failed(str(e), e.exit_code) from None
    except KeyboardInterrupt:
        message = "aborted without saving; --resume continues from the last checkpoint"
        raise failed(message, EXIT_SIGINT) from None
    except runs.TrainingDiverged as e:
        raise failed(f"error: {e}", EXIT_TRAINING_DIVERGED) from None
    except (runs.RunDirError, CheckpointError) as e:
        raise failed(f"error: {e}", EXIT_USAGE) from None
    except ValueError as e:
        if debug:
            click.echo(traceback.format_exc().rstrip(), err=True)
        raise failed(f"error: {e}", EXIT_USAGE) from None
    except (click.exceptions.Exit, click.ClickException):
        raise
    except Exception as e:
        raise internal_error(e, debug) from None


def _trained(outcome: Any, curve_label: str) -> str:
    """What `train` prints when a run is done."""
    returns = ", ".join(f"{r:.4g}" for r in outcome.final_return)
    unit = outcome.unit
    return (
        f"done: {outcome.updates} {unit}s, {outcome.env_steps:,} env steps per seed in "
        f"{outcome.train_seconds:.0f}s of training\n"
        f"mean {curve_label} over the last 10% of {unit}s, per seed: {returns}\n"
        f"wrote {outcome.out}/ (curve.png, metrics.jsonl, policies/final/: "
        f"{len(outcome.policies)} policy files)"
    )
