"""`aht-bench ...`: the command line. Thin: each command parses, calls one library function and
prints.

Exit codes (the same for every command; `EXIT_*` in `aht_bench.cli.common`):

    0  ok
    1  internal error (a bug in aht-bench: please report it)
    2  usage error: bad option, unknown task, agent file missing or not a .py file
    3  the agent file failed to load (import error, no act(obs), TASKS mismatch, load timeout)
    4  the agent failed while playing (act raised or returned a bad action, step timeout, crash)
    5  a teammate set failed its integrity check (`evaluate`, `devset show`)
    6  training stopped: a loss or parameter became NaN or infinite (`train`)
  130  stopped by Ctrl-C (SIGINT) after saving a checkpoint (`train`; resume with --resume)
  143  stopped by SIGTERM after saving a checkpoint (`train`; resume with --resume)

Errors print one message to stderr, without a traceback (`--debug` shows it where offered).

A module per command or group adds its commands to the group `main` (`group`): `tasks`,
`docs` (examples, docs), `render`, `agents` (check-agent), `train`, `evaluate` (its checks in
`evaluate_checks`), `compare`, `devset` and `heldout`; the options several share are in
`options`, the exit codes and error reports in `common`, the teammate sets and members named on
the command line in `teammates`. The groups of the layers below (experiment, leaderboard, play,
sweep) are added last, here. Importing this package builds the whole command line; `--help`
imports no JAX (the commands import the library when they run).

May import click, tqdm, the standard library and aht_bench (the top layer: it parses the
options, resolves ids once and calls the library).
"""

from aht_bench.cli import (  # noqa: F401  (each adds its commands to `main`)
    agents,
    compare,
    devset,
    docs,
    evaluate,
    heldout,
    render,
    tasks,
    train,
)
from aht_bench.cli.common import (
    EXIT_AGENT_LOAD,
    EXIT_AGENT_RUNTIME,
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_TEAMMATE_INTEGRITY,
    EXIT_TRAINING_DIVERGED,
    EXIT_USAGE,
)
from aht_bench.cli.evaluate import DEFAULT_TOTAL_TIMEOUT, EVALUATE_EXIT_CODES_HELP
from aht_bench.cli.group import main
from aht_bench.cli.options import MAX_SEED, SEED, TASK
from aht_bench.cli.tasks import task_row as _task_row
from aht_bench.cli.train import TRAIN_EXIT_CODES_HELP, TRAINABLE


def _register_experiments() -> None:
    from aht_bench.experiments.cli import experiment

    main.add_command(experiment)


_register_experiments()


def _register_leaderboard() -> None:
    from aht_bench.leaderboard.cli import leaderboard

    main.add_command(leaderboard)


_register_leaderboard()


def _register_play() -> None:
    from aht_bench.play.cli import play

    main.add_command(play)


_register_play()


def _register_sweep() -> None:
    from aht_bench.sweeps.cli import sweep

    main.add_command(sweep)


_register_sweep()

__all__ = [
    "DEFAULT_TOTAL_TIMEOUT",
    "EVALUATE_EXIT_CODES_HELP",
    "EXIT_AGENT_LOAD",
    "EXIT_AGENT_RUNTIME",
    "EXIT_CODES_HELP",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_TEAMMATE_INTEGRITY",
    "EXIT_TRAINING_DIVERGED",
    "EXIT_USAGE",
    "MAX_SEED",
    "SEED",
    "TASK",
    "TRAINABLE",
    "TRAIN_EXIT_CODES_HELP",
    "_task_row",
    "main",
]
