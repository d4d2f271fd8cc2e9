"""`aht-bench evaluate`: an agent file (or the seeds of one agent) scored against a teammate set,
BRProx with confidence intervals, written as a result record; its options are checked first
(`aht_bench.cli.evaluate_checks`).

May import click, the standard library, aht_bench.envs (for types) and (inside the command)
aht_bench.evaluation and aht_bench.policies.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from aht_bench.cli.common import (
    EXIT_AGENT_LOAD,
    EXIT_AGENT_RUNTIME,
    EXIT_SIGINT,
    EXIT_TEAMMATE_INTEGRITY,
    EXIT_USAGE,
    Progress,
    agent_failed,
    count,
    failed,
    internal_error,
    json_mode,
)
from aht_bench.cli.evaluate_checks import Plan, check_before_running, plan_evaluation
from aht_bench.cli.group import main
from aht_bench.cli.options import (
    MAX_SEED,
    SEED,
    AgentLimits,
    agent_limits,
    debug_option,
    json_option,
    no_progress_option,
    reps_option,
)

if TYPE_CHECKING:
    from aht_bench.envs import Task

DEFAULT_TOTAL_TIMEOUT = 3600.0
"""`evaluate`'s limit on one agent file's whole evaluation of one task, in seconds: an hour is
many times what the official protocol takes (64 episodes per member and seating)."""

EVALUATE_EXIT_CODES_HELP = """\b
Exit codes:
  0  ok
  1  internal error (a bug in aht-bench)
  2  usage error (bad option, unknown task or teammate set, agent file missing or not .py,
     a seed file given twice)
  3  the agent failed to load (incl. load timeout, TASKS without the task, bad JAX policy)
  4  the agent failed while playing (incl. step timeout, crash, out-of-range action)
  5  teammate-set integrity failure (manifest or weight file does not match its sha256)
130  stopped by Ctrl-C (nothing written)"""


@main.command(epilog=EVALUATE_EXIT_CODES_HELP)
@click.argument("agent", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--task",
    "task",
    required=True,
    help="Task id or alias, or `all`: every task that has the teammate set (and that the "
    "agent's TASKS lists).",
)
@click.option(
    "--teammates",
    default=None,
    help="Teammate set: a version under heldout/<task>/ (v1, v2, v3: published heldout sets; "
    "human-proxy-v1, -v2, -v3 on Overcooked; human-proxy-play-<label>: cloned from played "
    "episodes; dev: development sets) or a set folder. Default: the "
    "newest published version (vN) of each task.",
)
@click.option(
    "--episodes",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Episodes per teammate and seating (refused before any work when they would not fit "
    "in memory).",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help=f"Seed of the episodes (0 to {MAX_SEED}).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Result record (.json; the bar plot goes next to it as .png). With --task all, a "
    "folder for one <task_id>.json per task. [default: results/<agent>/<task_id>.json; "
    "with N seed files results/<first agent>/<task_id>-<N>seeds.json]",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace result records that exist at --out (without it, an existing record is an "
    "error and nothing is run or written).",
)
@click.option(
    "--isolate",
    is_flag=True,
    help="Play step by step through the agent's act(obs) in its worker even when it has a "
    "JAX policy (the runner of records made with --isolate before).",
)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run the agent in a separate process with the limits but without the bubblewrap "
    "sandbox (where bwrap cannot run; trusted code only).",
)
@click.option(
    "--in-process",
    is_flag=True,
    help="Run the agent's code in this process: trusted code only, no limits; the record is "
    "marked so and the leaderboard refuses it.",
)
@agent_limits(
    load="Seconds the agent file may take to load.",
    step="Seconds one act(obs) or reset() may take.",
    total="Seconds one agent file may take on one task in all: loading, every seating and its "
    "JAX policy's compiled play (compiled code still running then ends the evaluation, exit "
    "code 4, nothing written). Not with --in-process.",
    total_default=DEFAULT_TOTAL_TIMEOUT,
    memory="GiB of memory the agent's sandbox may use in all: its processes, /tmp and /dev/shm.",
)
@reps_option("Bootstrap resamples of the confidence intervals.")
@click.option(
    "--replays",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Save the first N episodes of every member and seating as replays (JSON) with a "
    "viewer page per member (HTML), in <result>-replays/ (of several seeds' files: the first "
    "file's episodes).",
)
@click.option(
    "--no-viewer",
    is_flag=True,
    help="With --replays: save the replays (JSON) only, no viewer pages.",
)
@click.option("--no-plot", is_flag=True, help="Do not draw the bar plot.")
@no_progress_option
@click.option("--agent-output", is_flag=True, help="Show what an isolated agent prints.")
@json_option(
    "Print one JSON list, per task {out, record, random_floor}, on stdout (the other lines "
    "go to stderr)."
)
@debug_option
def evaluate(
    agent: tuple[Path, ...],
    task: str,
    teammates: str | None,
    episodes: int,
    seed: int,
    out: Path | None,
    force: bool,
    isolate: bool,
    no_sandbox: bool,
    in_process: bool,
    limits: AgentLimits,
    reps: int,
    replays: int,
    no_viewer: bool,
    no_plot: bool,
    no_progress: bool,
    agent_output: bool,
    as_json: bool,
    debug: bool,
) -> None:
    """Score the agent file AGENT against a teammate set: BRProx with confidence intervals.

    Every member of the set plays --episodes episodes with AGENT in every seating of the
    task. Each return is normalised by the member's bounds, (R - lower) / (upper - lower);
    the mean, IQM, median and worst case come with stratified bootstrap 95% CIs (rliable).
    Prints a table per member and the aggregates, and writes a result record (JSON) and a
    bar plot (PNG). The agent's code runs in a bubblewrap sandbox (no network, no access to
    your files or the heldout sets, nothing left running after it) with time and memory
    limits; a JAX policy is handed over compiled and runs jitted, any other agent step by
    step.

    Several AGENT files are the independently trained seeds of one agent (one task; not
    with --task all): each plays the same episodes, and the CIs are over the seeds (the
    paper's runs), each seed's score its mean over episodes and seatings.

    \b
    aht-bench evaluate agents/examples/random_agent.py --task forced_coord
    aht-bench evaluate my_agent.py --task all --out results/my_agent/
    aht-bench evaluate run/policies/final/seed{0,1,2}-ego.safetensors --task lbf
    """
    plan = plan_evaluation(agent, task, teammates, out, isolate, no_sandbox, in_process)
    if no_viewer and not replays:
        raise click.BadParameter("--no-viewer goes with --replays N", param_hint="--no-viewer")
    stdout, results = json_mode(as_json), []
    run_limits = limits.kwargs(agent_output)
    with _evaluation_errors(Progress(False, ""), debug):  # the cheap checks, before any work
        check_before_running(plan, force, run_limits, episodes)
    play = _Play(episodes, seed, isolate, run_limits, reps, replays)
    for one_task, target in zip(plan.tasks, plan.targets, strict=True):
        bar = Progress(not no_progress, "playing")
        with _evaluation_errors(bar, debug):
            record, folder = _evaluate_task(plan, one_task, target, play, bar, no_plot, no_viewer)
        results.append(_print_result(record, target, folder, no_plot, no_viewer))
    if as_json:
        click.echo(json.dumps(results, indent=1), file=stdout)


class _Play(NamedTuple):
    """How every task is played, as the options gave it."""

    episodes: int
    seed: int
    isolate: bool
    limits: dict[str, Any]
    reps: int
    replays: int


def _evaluate_task(
    plan: Plan,
    task: Task,
    target: Path,
    play: _Play,
    bar: Progress,
    no_plot: bool,
    no_viewer: bool,
) -> tuple[dict[str, Any], Path | None]:
    """Evaluate the agent on `task` and write its record to `target` (with the bar plot, and
    the replays' folder, which it returns with the record)."""
    from aht_bench.evaluation.evaluate import evaluate_agent_files
    from aht_bench.evaluation.record import write_record
    from aht_bench.evaluation.replay import ReplaySink, save_replays
    from aht_bench.evaluation.sets import load_set

    sink = ReplaySink(min(play.replays, play.episodes)) if play.replays else None
    eval_set = load_set(task, plan.versions[task])
    _announce(plan.paths, task.id, eval_set, play.episodes, play.seed)
    record = evaluate_agent_files(
        plan.paths,
        eval_set,
        num_episodes=play.episodes,
        seed=play.seed,
        isolate=play.isolate,
        isolation=plan.isolation,
        limits=play.limits,
        reps=play.reps,
        progress=bar,
        on_loaded=_on_loaded(plan.paths, plan.isolation, bar),
        replays=sink,
    )
    bar.close()
    write_record(target, record)
    if not no_plot:
        from aht_bench.evaluation.plots import plot_result

        plot_result(record, target.with_suffix(".png"))
    folder = None
    if sink is not None:
        folder = save_replays(sink, record, target, viewer=not no_viewer)
    return record, folder


def _print_result(
    record: dict[str, Any], target: Path, folder: Path | None, no_plot: bool, no_viewer: bool
) -> dict[str, Any]:
    """What `evaluate` prints for one task's record: the table with the random-agent floor
    under the aggregates, then what it wrote; returns the task's row of `--json`."""
    from aht_bench.evaluation import record as rec
    from aht_bench.evaluation.floor import floor_line, random_floor

    click.echo("\n".join(rec.result_lines(record, floor_line(record))))
    plot = "" if no_plot else f" and {target.with_suffix('.png')}"
    click.echo(
        f"wrote {target}{plot} (payload sha256 {record['payload_sha256'][:16]}..., "
        f"{record['meta']['wall_seconds']:.0f}s)"
    )
    if folder is not None:
        pages = "" if no_viewer else " and their viewer pages (open MEMBER.html)"
        click.echo(f"replays{pages}: {folder}/")
    ts = record["payload"]["teammate_set"]
    return {"out": str(target), "record": record,
            "random_floor": random_floor(ts["id"], ts["manifest_sha256"])}  # fmt: skip


def _announce(paths: list[Path], task_id: str, eval_set: Any, episodes: int, seed: int) -> None:
    """The line `evaluate` prints before it plays a task."""
    dev = " (DEVELOPMENT set, not a heldout set)" if eval_set.is_development else ""
    who = paths[0].name
    if len(paths) > 1:
        who = f"{len(paths)} seeds of one agent ({', '.join(p.name for p in paths)})"
    click.echo(
        f"\n{who} on {task_id}: {count(eval_set.teammates.size, 'teammate')} of "
        f"{eval_set.set_id}{dev}, {count(episodes, 'episode')} x "
        f"{count(len(eval_set.seatings), 'seating')} each, seed {seed}"
    )


def _on_loaded(paths: list[Path], isolation: str, bar: Progress) -> Callable[[int, str, str], None]:
    """What `evaluate` says once an agent file has loaded: which runner plays it, and how
    its code is isolated."""

    def loaded(index: int, kind: str, runner: str) -> None:
        how = {
            "jax": "jitted JAX path",
            "python": "step by step in this process",
            "python-isolated": "step by step in a separate process",
        }[runner] + {
            "sandbox": " (agent code sandboxed)",
            "process": " (agent code in a separate process, NOT sandboxed)",
            "in-process": " (agent code in this process, NOT sandboxed)",
        }[isolation]
        jax_note = ", with a JAX policy" if runner == "jax" else ""
        seed_note = f"seed {index}: " if len(paths) > 1 else ""
        bar.close()  # a line between two seeds' progress, not inside the bar
        click.echo(f"{seed_note}loaded {paths[index].name} ({kind}{jax_note}); running {how}")

    return loaded


@contextlib.contextmanager
def _evaluation_errors(bar: Progress, debug: bool) -> Iterator[None]:
    """Turn what can go wrong while one task is evaluated into `evaluate`'s messages and exit
    codes, the progress bar closed first; nothing is written for that task."""
    from aht_bench.evaluation.evaluate import SeedFilesError
    from aht_bench.evaluation.gym_runner import UnsupportedSeatingError
    from aht_bench.evaluation.sets import TeammateSetError, TeammateSetIntegrityError
    from aht_bench.policies.agent_file import AgentLoadError, AgentRuntimeError
    from aht_bench.policies.sandbox import SandboxUnavailableError

    try:
        try:
            yield
        except BaseException:
            bar.close()  # before any message, which would land inside the bar
            raise
    except TeammateSetIntegrityError as e:
        message = f"error: teammate set integrity check failed: {e}"
        raise failed(message, EXIT_TEAMMATE_INTEGRITY) from None
    except (TeammateSetError, UnsupportedSeatingError) as e:
        raise click.BadParameter(str(e), param_hint="--teammates") from None
    except SeedFilesError as e:
        raise click.BadParameter(str(e), param_hint="AGENT") from None
    except AgentLoadError as e:
        raise agent_failed(e, EXIT_AGENT_LOAD, debug) from None
    except AgentRuntimeError as e:
        raise agent_failed(e, EXIT_AGENT_RUNTIME, debug) from None
    except SandboxUnavailableError as e:
        raise failed(f"error: {e}", EXIT_USAGE) from None
    except KeyboardInterrupt:
        raise failed("interrupted; no result written for this task", EXIT_SIGINT) from None
    except (click.exceptions.Exit, click.ClickException):
        raise
    except Exception as e:
        raise internal_error(e, debug) from None
